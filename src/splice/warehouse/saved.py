"""The rows an undo saved, as the engines check them and put them back: the shape of a saved
Parquet file (DuckDB, Spark), and the restore in one transaction of an engine that has
transactions (DuckDB, PostgreSQL: every relation back, checked, or none).

The undo itself (what is captured, when, and the checks around it) is
:mod:`splice.repair.undo`; each engine's part is ``splice/warehouse/<engine>/undo.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from sqlglot import exp

from splice.errors import RepairError
from splice.warehouse.engines import engine_module
from splice.warehouse.rows import in_range, table


class SavedEntry(Protocol):
    """One relation's saved rows, as the undo recorded them (:class:`splice.repair.model.UndoEntry`)."""

    relation: str
    time_column: str | None
    start: date | None
    end: date | None
    checksum: str
    saved_to: str
    columns: list[tuple[str, str]]


#: ``current(con, entry)``: the entry's rows in range as the warehouse holds them now.
Current = Callable[[Any, Any], tuple[int, str]]
#: ``shown(entry)``: where the entry's saved rows are, as an error names them.
Shown = Callable[[Any], str]


def checksum_of(con: Any, sql: str) -> tuple[int, str]:
    """(rows, ``"rows:sum"``) of a checksum query's one row."""
    n, s = con.execute(sql).fetchone()
    return int(n), f"{int(n)}:{s}"


def no_relation(relation: str) -> RepairError:
    """The relation is not in the warehouse: its rows cannot be saved, nor put back."""
    return RepairError(
        f"the relation {relation} does not exist in the warehouse, so its rows cannot be "
        "saved for the undo.",
        fix="build it first (splice run), then propose again",
    )


def parquet_columns(path: Path) -> list[str] | None:
    """The column names of a Parquet file (read by DuckDB in memory), None when it is no
    Parquet file."""
    import duckdb

    reader = exp.Table(this=exp.func("read_parquet", exp.Literal.string(str(path))))
    con = duckdb.connect()
    try:
        cur = con.execute(exp.select("*").from_(reader).limit(0).sql(dialect="duckdb"))
        return [str(d[0]) for d in cur.description or []]
    except duckdb.Error:
        return None
    finally:
        con.close()


def check_parquet(path: Path, relation: str, columns: list[tuple[str, str]]) -> None:
    """Refuse a saved Parquet file that does not hold the columns ``relation`` had at capture
    (a file swapped for another relation's is refused by name, not met as a binder error)."""
    if not columns:
        return
    have = parquet_columns(path)
    want = [c for c, _ in columns]
    if have is None or [c.lower() for c in have] != [c.lower() for c in want]:
        got = "it is no Parquet file" if have is None else f"it has {', '.join(have)}"
        raise RepairError(
            f"the saved rows in {path} do not match the columns of {relation} ({got}; "
            f"{relation} had {', '.join(want)}): the file is not this relation's undo, so "
            "nothing was restored.",
            fix="the undo files were changed outside Splice; propose again to take a new undo",
        )


def restore_one(con: Any, e: SavedEntry, source: exp.Expr, dialect: str, shown: Shown) -> None:
    """Delete ``e``'s rows in range and insert the saved ones (``source``), refused when the
    relation changed shape since the capture."""
    where = in_range(e.time_column, e.start, e.end)
    target = table(e.relation, dialect)
    delete = exp.Delete(this=target, where=exp.Where(this=where) if where is not None else None)
    con.execute(delete.sql(dialect=dialect))
    now = engine_module(dialect, "columns").typed_columns(con, e.relation)
    if not now:
        raise no_relation(e.relation)
    if [c.lower() for c, _ in now] != [c.lower() for c, _ in e.columns]:
        raise RepairError(
            f"{e.relation} changed shape since the undo was taken (columns then: "
            f"{', '.join(c for c, _ in e.columns)}; now: {', '.join(c for c, _ in now)}), so "
            "the saved rows cannot be put back.",
            fix="restore by hand from " + shown(e),
        )
    rows = exp.select(*[exp.column(c, quoted=True) for c, _ in e.columns]).from_(source)
    insert = exp.insert(rows, target, columns=[c for c, _ in e.columns])  # type: ignore[arg-type]
    con.execute(insert.sql(dialect=dialect))


def in_one_transaction(con: Any, entries: Sequence[SavedEntry], load: Callable[[], list[exp.Expr]],
                       current: Current, *, keep: bool, dialect: str,
                       shown: Shown) -> list[str]:  # fmt: skip
    """Restore every entry in one transaction, each checked against its recorded checksum;
    commit when ``keep``, else roll back (a test). ``load()`` gives the saved rows, checked,
    inside the transaction. Returns the checksums after."""
    con.execute("BEGIN TRANSACTION")
    try:
        saved = load()
        after = []
        for e, source in zip(entries, saved, strict=True):
            restore_one(con, e, source, dialect, shown)
            got = current(con, e)
            if got[1] != e.checksum:
                raise RepairError(
                    f"restoring {e.relation} gives checksum {got[1]}, not the recorded "
                    f"{e.checksum}; nothing was restored.",
                    fix="report it with splice --debug; the saved rows are in " + shown(e),
                )
            after.append(got[1])
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT" if keep else "ROLLBACK")
    return after
