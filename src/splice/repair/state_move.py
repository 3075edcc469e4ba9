"""``splice state migrate --to URL``: move a workspace's SQLite state into PostgreSQL.

The target must be an empty database (no Splice state yet): its schema is made by the same
migrations, then every table's rows are copied in one transaction (``COPY``), keeping the
state's id (the witness stays valid), the identity counters and the order rows were written
in. Afterwards each table's row count is compared with the source's and the audit log's chain
is walked on the target: anything short is an error, and the target's transaction is not
committed. The SQLite file is only read.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.errors import StateError
from splice.state.sql import ROWID_TABLES, Statement, statement, table_keys
from splice.state.store import StateStore, is_url, pg_connect, redact

#: the source state's tables, in the order they were made, and a table's columns (SQLite's own)
_TABLES_SELECT = statement(
    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
    backends=["sqlite"],
)
_COLUMNS_OF = statement("SELECT name FROM pragma_table_info(?)", backends=["sqlite"])

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


@dataclass
class MoveReport:
    source: str
    target: str
    tables: dict[str, int] = field(default_factory=dict)  # table -> rows copied (= counted)
    audit_entries: int = 0
    audit_intact: bool = False
    state_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "tables": dict(self.tables),
            "rows": sum(self.tables.values()),
            "audit_entries": self.audit_entries,
            "audit_intact": self.audit_intact,
            "state_id": self.state_id,
            "config": f'[state]\nurl = "{self.target}"',
        }


def _tables(src: sqlite3.Connection) -> list[str]:
    rows = src.execute(_TABLES_SELECT).fetchall()
    return [str(r[0]) for r in rows]


def move_state(ws: Workspace, url: str, *, progress: Any = None) -> MoveReport:
    """Copy ``ws``'s SQLite state into the empty PostgreSQL database ``url`` and verify it."""
    from sqlglot import exp

    from splice.approvals import auditlog

    if not is_url(url):
        raise StateError(f"--to {url!r} is not a postgresql:// URL.",
                         fix="pass --to postgresql+psycopg://USER[:PASSWORD]@HOST:PORT/DB")  # fmt: skip
    if ws.config.state.url:
        raise StateError(
            f"this workspace's state is already in PostgreSQL ({redact(ws.config.state.url)}).",
            fix="nothing to move; remove [state] url first to move a SQLite state",
        )
    say = progress or (lambda _m: None)
    source = ws.state  # opened (and migrated) as the workspace opens it: refused if not its own
    probe = StateStore(pg_connect(url), url)
    try:
        if probe.schema_version != 0:
            raise StateError(
                f"{redact(url)} already holds a Splice state (schema version "
                f"{probe.schema_version}); nothing was copied.",
                fix="migrate into an empty database (createdb a new one)",
            )
    finally:
        probe.close()
    target = StateStore.open(url)
    report = MoveReport(str(source.path), redact(url))
    keys, identity = table_keys()
    raw = target.conn._con  # type: ignore[attr-defined]  # the psycopg connection
    try:
        target.conn.execute("BEGIN IMMEDIATE")
        for table in _tables(source.conn):
            cols = [str(r[0]) for r in source.conn.execute(_COLUMNS_OF, (table,))]
            select_cols = (["rowid"] if table in ROWID_TABLES else []) + cols
            rows = source.conn.execute(Statement(
                exp.select(*[exp.column(c, quoted=c != "rowid") for c in select_cols])
                .from_(exp.to_table(table, quoted=True)), backends=["sqlite"])).fetchall()  # fmt: skip
            delete = exp.Delete(this=exp.to_table(table, quoted=True)).sql("postgres")
            raw.execute(delete.encode())  # splice_meta: the target's own rows give way
            copy = exp.Copy(
                this=exp.Schema(this=exp.to_table(table, quoted=True),
                                expressions=[exp.to_identifier(c, quoted=True) for c in select_cols]),
                kind=True, files=[exp.var("STDIN")], params=[],
            ).sql("postgres")  # fmt: skip
            with raw.cursor() as cur, cur.copy(copy.encode()) as cp:
                for r in rows:
                    cp.write_row(r)
            for col in [c for c in (identity.get(table), "rowid" if table in ROWID_TABLES
                                    else None) if c]:  # fmt: skip
                seq = exp.func("pg_get_serial_sequence", exp.Literal.string(table),
                               exp.Literal.string(col))  # fmt: skip
                top = exp.select(exp.func("COALESCE", exp.func("MAX", exp.column(col)),
                                          exp.Literal.number(0))).from_(table)  # fmt: skip
                setval = exp.select(exp.func("setval", seq, exp.func(
                    "GREATEST", exp.Subquery(this=top), exp.Literal.number(1))))  # fmt: skip
                raw.execute(setval.sql("postgres").encode())
            count = raw.execute(
                exp.select(exp.Count(this=exp.Star()))
                .from_(exp.to_table(table, quoted=True))
                .sql("postgres")
                .encode()  # fmt: skip
            ).fetchone()[0]
            if int(count) != len(rows):
                raise StateError(f"{table}: {len(rows)} rows read, {count} written; nothing was "
                                 "moved.", fix="report it with splice --debug")  # fmt: skip
            report.tables[table] = len(rows)
            say(f"{table}: {len(rows):,} rows")
        audit = auditlog.verify(target)
        src_audit = auditlog.verify(source)
        if not audit.intact or audit.entries != src_audit.entries:
            raise StateError(
                f"the audit log on {redact(url)} does not verify ({audit.problem or 'entries'}: "
                f"{audit.entries} of {src_audit.entries}); nothing was moved.",
                fix="check the source first: splice audit-log verify",
            )
        report.audit_entries, report.audit_intact = audit.entries, True
        report.state_id = target.state_id()
        target.conn.execute("COMMIT")
    except BaseException:
        target.conn.execute("ROLLBACK")
        _drop_schema(raw, _tables(source.conn))  # the target is empty again, as it was
        raise
    finally:
        target.close()
    return report


def _drop_schema(raw: Any, tables: list[str]) -> None:
    from sqlglot import exp

    for table in reversed(["splice_meta", *tables]):
        drop = exp.Drop(this=exp.to_table(table, quoted=True), kind="TABLE", exists=True,
                        cascade=True)  # fmt: skip
        raw.execute(drop.sql("postgres").encode())
