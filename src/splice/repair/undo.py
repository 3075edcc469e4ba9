"""The undo of a repair, taken before anything runs: rows copied aside, checksummed, restorable.

For every relation a repair rewrites (:class:`~splice.repair.draft.Touch`), :func:`capture`
copies the rows in the repair's range of the relation's time column (the whole table when the
tool rebuilds it whole, as dbt does) to a Parquet file under ``.splice/undo/<proposal>/``, and
records the row count and an order-independent checksum computed in the warehouse
(:func:`splice.warehouse.rows.checksum_query`).  :func:`verify_restorable` proves the copy restores before the
proposal may be approved: it restores every entry inside a transaction, checks the checksums
and rolls back.  :func:`check_unchanged` refuses to apply a repair when the warehouse moved
since the undo was taken (the undo would then put back the wrong rows).  :func:`restore` puts
every entry back in one warehouse transaction: all of it or none of it.

Every statement is built as a sqlglot expression:

>>> print(copy_out_sql("wh.raw.fx", "rate_date", date(2026, 9, 28), date(2026, 9, 29),
...                    "/u/1.parquet", "duckdb"))
COPY (SELECT * FROM "wh"."raw"."fx" WHERE CAST("rate_date" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE)) TO '/u/1.parquet' WITH (FORMAT PARQUET)
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.errors import RepairError
from splice.graph.relations import parse_relation
from splice.repair import undo_pg, undo_spark
from splice.repair.model import UndoEntry
from splice.warehouse.rows import ROW, checksum_query, checksum_select, in_range, rows_query, table

#: A target to capture: (node id, physical relation, time column or None, start, end).
Target = tuple[str, str, "str | None", "date | None", "date | None"]


def copy_out_sql(relation: str, time_column: str | None, start: date | None, end: date | None,
                 path: str, dialect: str) -> str:  # fmt: skip
    """``COPY (the rows in range) TO path (FORMAT PARQUET)``."""
    query = rows_query(table(relation, dialect), in_range(time_column, start, end))
    copy = exp.Copy(
        this=exp.Subquery(this=query),
        kind=False,
        files=[exp.Literal.string(path)],
        params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))],
    )
    return copy.sql(dialect=dialect)


def _parquet(path: str, columns: list[tuple[str, str]]) -> exp.Expr:
    """The saved rows, typed as the relation's columns were at capture."""
    reader = exp.Table(this=exp.func("read_parquet", exp.Literal.string(path)))
    cols = [
        exp.cast(exp.column(n, quoted=True), exp.DataType.build(t, dialect="duckdb")).as_(
            n, quoted=True
        )
        for n, t in columns
    ]
    return exp.Subquery(
        this=exp.select(*cols).from_(reader),
        alias=exp.TableAlias(this=exp.to_identifier(ROW, quoted=True)),
    )


def _on_postgres(ws: Any) -> bool:
    return bool(ws.config.warehouse.type == "postgres")


def _on_spark(ws: Any) -> bool:
    return bool(ws.config.warehouse.type == "spark")


def typed_columns(con: Any, relation: str, dialect: str) -> list[tuple[str, str]]:
    """The relation's (column, type) pairs in order; a RepairError when it does not exist."""
    if dialect == "postgres":
        found = undo_pg.typed_columns(con, relation)
    elif dialect == "spark":
        found = undo_spark.layout(con, relation)[0]
    else:
        rel = parse_relation(relation, dialect=dialect)
        q = exp.select("column_name", "data_type").from_(
            exp.table_("columns", db="information_schema")
        )
        conds = [exp.column("table_name").eq(exp.Literal.string(rel.name))]
        if rel.schema:
            conds.append(exp.column("table_schema").eq(exp.Literal.string(rel.schema)))
        if rel.catalog:
            conds.append(exp.column("table_catalog").eq(exp.Literal.string(rel.catalog)))
        q = q.where(exp.and_(*conds)).order_by("ordinal_position")
        found = [(str(n), str(t)) for n, t in con.execute(q.sql(dialect=dialect)).fetchall()]
    if not found:
        raise RepairError(
            f"the relation {relation} does not exist in the warehouse, so its rows cannot be "
            "saved for the undo.",
            fix="build it first (splice run), then propose again",
        )
    return found


def _sum(con: Any, sql: str) -> tuple[int, str]:
    n, s = con.execute(sql).fetchone()
    return int(n), f"{int(n)}:{s}"


def undo_dir(ws: Any, proposal_id: str) -> Path:
    return ws.splice_dir / "undo" / proposal_id


def _abs(ws: Any, saved_to: str) -> Path:
    p = Path(saved_to)
    return p if p.is_absolute() else ws.root / p


def saved_path(ws: Any, e: UndoEntry) -> Path:
    """Where ``e``'s saved rows are: refused unless the path, symlinks resolved, lies inside
    the workspace's ``.splice/undo/`` (the state names the file; whoever rewrote the state must
    not make an undo read, or restore from, any other file)."""
    undo_root = (ws.splice_dir / "undo").resolve()
    path = _abs(ws, e.saved_to).resolve()
    if not path.is_relative_to(undo_root):
        shown = e.saved_to if str(path) == e.saved_to else f"{e.saved_to} (that is, {path})"
        raise RepairError(
            f"the undo of {e.relation} names {shown}, which is outside {undo_root}; "
            "Splice restores only from its own undo directory, so nothing was restored.",
            fix="the proposal was changed outside Splice; propose again to take a new undo",
        )
    return path


def _parquet_columns(path: Path) -> list[str] | None:
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


def check_saved_files(ws: Any, entries: list[UndoEntry]) -> None:
    """Before any warehouse is opened: every entry's saved file lies inside ``.splice/undo/``,
    exists, and (Parquet: DuckDB, Spark) holds the columns its relation had at capture, so a
    file swapped for another relation's is refused by name, not met as a binder error."""
    for e in entries:
        path = saved_path(ws, e)
        if not path.exists():
            raise RepairError(
                f"the undo of {e.relation} is missing: {path} was deleted.",
                fix="the saved rows cannot be recovered; propose the repair again to take a new "
                "undo",
            )
        if _on_postgres(ws) or not e.columns:
            continue  # PostgreSQL's binary COPY carries no names: checked as it loads
        have = _parquet_columns(path)
        want = [c for c, _ in e.columns]
        if have is None or [c.lower() for c in have] != [c.lower() for c in want]:
            got = "it is no Parquet file" if have is None else f"it has {', '.join(have)}"
            raise RepairError(
                f"the saved rows in {path} do not match the columns of {e.relation} ({got}; "
                f"{e.relation} had {', '.join(want)}): the file is not this relation's undo, so "
                "nothing was restored.",
                fix="the undo files were changed outside Splice; propose again to take a new undo",
            )


def capture(ws: Any, proposal_id: str, targets: list[Target]) -> list[UndoEntry]:
    """Copy aside the rows every target will lose, with counts and checksums (see module)."""
    from splice.warehouse.connect import connect

    folder = undo_dir(ws, proposal_id)
    folder.mkdir(parents=True, exist_ok=True)
    out: list[UndoEntry] = []
    pg = _on_postgres(ws)
    from splice.run.scheduler import warehouse_capabilities

    caps = warehouse_capabilities(ws.config.warehouse.type)
    if caps.undo != "copy":  # a developer's declaration: no warehouse kind makes it yet
        raise RepairError(
            f"the {ws.config.warehouse.type} warehouse declares undo by table version, which is "
            "designed (undo_spark.version_restore_sql) but not built; nothing was captured.",
            fix="declare undo='copy' for it in splice.run.scheduler.WAREHOUSES",
        )
    method = "copy" if caps.transactions else "overwrite"
    with connect(ws, "the undo capture") as con:
        for i, (node_id, relation, time_col, start, end) in enumerate(targets):
            cols = typed_columns(con, relation, ws.dialect)
            suffix = undo_pg.SUFFIX if pg else ".parquet"
            path = folder / f"{i:02d}_{node_id.replace(':', '__').replace('/', '_')}{suffix}"
            checksum_sql = checksum_query(relation, time_col, start, end, ws.dialect)
            if pg:
                rows, checksum = undo_pg.capture_one(con, relation, time_col, start, end, path,
                                                     checksum_sql)  # fmt: skip
            elif _on_spark(ws):
                rows, checksum = undo_spark.capture_one(con, relation, time_col, start, end,
                                                        path, checksum_sql)  # fmt: skip
            else:
                con.execute(copy_out_sql(relation, time_col, start, end, str(path), ws.dialect))
                rows, checksum = _sum(con, checksum_sql)
            saved = path.relative_to(ws.root) if path.is_relative_to(ws.root) else path
            out.append(UndoEntry(node_id, relation, time_col, start, end, rows, checksum,
                                 str(saved), cols, method))  # fmt: skip
    return out


def _saved(con: Any, ws: Any, e: UndoEntry, index: int) -> exp.Expr:
    """The saved rows of ``e`` as a source aliased :data:`ROW` (on PostgreSQL, loaded into a
    temporary table: call inside the restore's transaction)."""
    path = saved_path(ws, e)
    if not path.exists():
        raise RepairError(
            f"the undo of {e.relation} is missing: {path} was deleted.",
            fix="the saved rows cannot be recovered; propose the repair again to take a new undo",
        )
    if _on_postgres(ws):
        import psycopg

        try:
            return undo_pg.load_saved(con, path, e.columns, index)
        except psycopg.errors.DataError as err:  # another relation's rows, or no COPY file
            raise RepairError(
                f"the saved rows in {path} do not match the columns of {e.relation} "
                f"({str(err).splitlines()[0]}): the file is not this relation's undo, so "
                "nothing was restored.",
                fix="the undo files were changed outside Splice; propose again to take a new undo",
            ) from None
    if _on_spark(ws):
        return undo_spark.load_saved(con, path, e.columns, index)
    return _parquet(str(path), e.columns)


def _file_checksum(con: Any, ws: Any, e: UndoEntry, source: exp.Expr | None = None
                   ) -> tuple[int, str]:  # fmt: skip
    src = source if source is not None else _saved(con, ws, e, 0)
    return _sum(con, checksum_select(src, None, ws.dialect).sql(dialect=ws.dialect))


def _restore_one(con: Any, ws: Any, e: UndoEntry, saved: exp.Expr | None = None) -> None:
    where = in_range(e.time_column, e.start, e.end)
    target = table(e.relation, ws.dialect)
    delete = exp.Delete(this=target, where=exp.Where(this=where) if where is not None else None)
    con.execute(delete.sql(dialect=ws.dialect))
    now = typed_columns(con, e.relation, ws.dialect)
    if [c.lower() for c, _ in now] != [c.lower() for c, _ in e.columns]:
        raise RepairError(
            f"{e.relation} changed shape since the undo was taken (columns then: "
            f"{', '.join(c for c, _ in e.columns)}; now: {', '.join(c for c, _ in now)}), so "
            "the saved rows cannot be put back.",
            fix="restore by hand from " + str(_abs(ws, e.saved_to)),
        )
    source = saved if saved is not None else _parquet(str(saved_path(ws, e)), e.columns)
    rows = exp.select(*[exp.column(c, quoted=True) for c, _ in e.columns]).from_(source)
    insert = exp.insert(rows, target, columns=[c for c, _ in e.columns])  # type: ignore[arg-type]
    con.execute(insert.sql(dialect=ws.dialect))


def _current(con: Any, ws: Any, e: UndoEntry) -> tuple[int, str]:
    return _sum(con, checksum_query(e.relation, e.time_column, e.start, e.end, ws.dialect))


def current_checksums(ws: Any, entries: list[UndoEntry]) -> list[str]:
    """The checksum of each entry's rows as the warehouse holds them now."""
    from splice.warehouse.connect import connect

    with connect(ws, "the undo check", read_only=True) as con:
        return [_current(con, ws, e)[1] for e in entries]


def _put_back(con: Any, ws: Any, entries: list[UndoEntry], *, keep: bool) -> list[str]:
    """Restore every entry in one transaction, each checked against its recorded checksum;
    commit when ``keep``, else roll back (a test).  Returns the checksums after.
    On Spark (no transactions) see :mod:`splice.repair.undo_spark`."""
    if _on_spark(ws):
        return undo_spark.put_back(con, entries, _checked_saved(con, ws, entries),
                                   lambda c, e: _current(c, ws, e), keep=keep)  # fmt: skip
    con.execute("BEGIN TRANSACTION")
    try:
        saved = _checked_saved(con, ws, entries)
        after = []
        for e, source in zip(entries, saved, strict=True):
            _restore_one(con, ws, e, source)
            got = _current(con, ws, e)
            if got[1] != e.checksum:
                raise RepairError(
                    f"restoring {e.relation} gives checksum {got[1]}, not the recorded "
                    f"{e.checksum}; nothing was restored.",
                    fix="report it with splice --debug; the saved rows are in "
                    + str(_abs(ws, e.saved_to)),
                )
            after.append(got[1])
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT" if keep else "ROLLBACK")
    return after


def _checked_saved(con: Any, ws: Any, entries: list[UndoEntry]) -> list[exp.Expr]:
    """Every entry's saved rows as a source, each checked against its recorded checksum first."""
    saved = []
    for i, e in enumerate(entries):
        source = _saved(con, ws, e, i)
        got = _file_checksum(con, ws, e, source)
        if got[1] != e.checksum:
            raise RepairError(
                f"the saved rows of {e.relation} do not match what was copied "
                f"({got[0]} rows, checksum {got[1]}; expected {e.rows}, {e.checksum}); "
                "nothing was restored.",
                fix="propose again to take a new undo",
            )
        saved.append(source)
    return saved


def verify_restorable(ws: Any, entries: list[UndoEntry]) -> None:
    """Restore every entry inside a transaction, check the checksums, roll back."""
    from splice.warehouse.connect import connect

    check_saved_files(ws, entries)
    with connect(ws, "the undo test") as con:
        _put_back(con, ws, entries, keep=False)


def check_unchanged(ws: Any, entries: list[UndoEntry]) -> None:
    """Refuse when a relation's rows in range changed since the undo was captured."""
    now = current_checksums(ws, entries)
    moved = [e for e, c in zip(entries, now, strict=True) if c != e.checksum]
    if moved:
        names = ", ".join(e.relation for e in moved)
        raise RepairError(
            f"the warehouse changed since the undo was taken ({names}); applying now could not "
            "be undone exactly.",
            fix="reject this proposal and propose again (splice reject ID; splice propose)",
        )


def check_as_requested(ws: Any, p: Any) -> None:
    """Refuse an undo that is not the one approval was requested for.

    When a proposal asks for approval, the audit log records each undo entry's relation, row
    count and checksum. The proposal row and the saved files live in places one can edit
    together (the state and ``.splice/undo/``); the log is hash-chained. So before an undo is
    used (apply, a failed run's put-back, ``splice undo``) the log must be intact and must
    record exactly the entries about to be restored."""
    from splice.approvals import auditlog

    report = auditlog.verify(ws.state)
    if not report.intact:
        raise RepairError(
            f"the audit log is not intact ({report.problem} at entry {report.seq}), so the undo "
            f"of {p.proposal_id} cannot be trusted; nothing was restored or run.",
            fix="splice audit-log verify names the problem; restore the state from a backup",
        )
    requests = [e for e in auditlog.entries(ws.state, p.proposal_id) if e.kind == "request"]
    if not requests:
        raise RepairError(
            f"the audit log holds no request for {p.proposal_id}, so its undo cannot be checked "
            "against what was recorded; nothing was restored or run.",
            fix="propose again to take a new undo",
        )
    recorded = requests[-1].as_dict()["payload"].get("undo") or []
    want = [(str(u.get("relation")), int(u.get("rows") or 0), str(u.get("checksum")))
            for u in recorded]  # fmt: skip
    have = [(e.relation, e.rows, e.checksum) for e in p.undo]
    if want != have:
        differ = [f"{h[0]} ({h[2]}; the log recorded {w[2]})"
                  for h, w in zip(have, want, strict=False) if h != w]  # fmt: skip
        raise RepairError(
            f"the undo of {p.proposal_id} is not the one recorded in the audit log when approval "
            f"was requested ({'; '.join(differ) or f'{len(have)} entries, the log recorded {len(want)}'}"
            "); nothing was restored or run.",
            fix="the proposal or its saved rows were changed outside Splice; propose again",
        )


def restore(ws: Any, entries: list[UndoEntry]) -> list[str]:
    """Put every entry back in one warehouse transaction; returns the checksums after."""
    from splice.run.executors import release_all
    from splice.warehouse.connect import connect

    check_saved_files(ws, entries)  # before anything is opened
    release_all(ws)
    with connect(ws, "splice undo") as con:
        return _put_back(con, ws, entries, keep=True)
