"""The undo of a repair, taken before anything runs: rows copied aside, checksummed, restorable.

For every relation a repair rewrites (:class:`~splice.repair.draft.Touch`), :func:`capture`
copies the rows in the repair's range of the relation's time column (the whole table when the
tool rebuilds it whole, as dbt does) to a Parquet file under ``.splice/undo/<proposal>/``, and
records the row count and an order-independent checksum computed in the warehouse
(:func:`splice.warehouse.rows.checksum_query`); how each engine copies, loads and puts rows
back is its ``undo`` module (``splice/warehouse/<engine>/undo.py``).  :func:`verify_restorable` proves the copy restores before the
proposal may be approved: it restores every entry inside a transaction, checks the checksums
and rolls back.  :func:`check_unchanged` refuses to apply a repair when the warehouse moved
since the undo was taken (the undo would then put back the wrong rows).  :func:`restore` puts
every entry back in one warehouse transaction where the engine has transactions: all of it or
none of it (relation after relation on Spark: :mod:`splice.warehouse.spark.undo`).

Every statement is built as a sqlglot expression (the DuckDB copy:
:func:`splice.warehouse.duckdb.undo.copy_out_sql`).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.errors import RepairError
from splice.repair.model import UndoEntry
from splice.warehouse.engines import capabilities, engine_module
from splice.warehouse.rows import checksum_query, checksum_select
from splice.warehouse.saved import checksum_of, no_relation

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: A target to capture: (node id, physical relation, time column or None, start, end).
Target = tuple[str, str, "str | None", "date | None", "date | None"]


def _engine_undo(ws: Workspace) -> Any:
    """The undo module of the workspace's warehouse engine."""
    return engine_module(ws.config.warehouse.type, "undo")


def typed_columns(con: Any, relation: str, dialect: str) -> list[tuple[str, str]]:
    """The relation's (column, type) pairs in order; a RepairError when it does not exist."""
    found: list[tuple[str, str]] = engine_module(dialect, "columns").typed_columns(con, relation)
    if not found:
        raise no_relation(relation)
    return found


def undo_dir(ws: Workspace, proposal_id: str) -> Path:
    return ws.splice_dir / "undo" / proposal_id


def _abs(ws: Workspace, saved_to: str) -> Path:
    p = Path(saved_to)
    return p if p.is_absolute() else ws.root / p


def saved_path(ws: Workspace, e: UndoEntry) -> Path:
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


def check_saved_files(ws: Workspace, entries: list[UndoEntry]) -> None:
    """Before any warehouse is opened: every entry's saved file lies inside ``.splice/undo/``,
    exists, and holds the columns its relation had at capture, as far as the engine's file
    tells (Parquet: DuckDB, Spark), so a file swapped for another relation's is refused by
    name, not met as a binder error."""
    engine = _engine_undo(ws)
    for e in entries:
        path = saved_path(ws, e)
        if not path.exists():
            raise RepairError(
                f"the undo of {e.relation} is missing: {path} was deleted.",
                fix="the saved rows cannot be recovered; propose the repair again to take a new "
                "undo",
            )
        engine.check_saved(path, e.relation, e.columns)


def capture(ws: Workspace, proposal_id: str, targets: list[Target]) -> list[UndoEntry]:
    """Copy aside the rows every target will lose, with counts and checksums (see module)."""
    from splice.warehouse.connect import connect

    folder = undo_dir(ws, proposal_id)
    folder.mkdir(parents=True, exist_ok=True)
    out: list[UndoEntry] = []
    kind = ws.config.warehouse.type
    caps = capabilities(kind)
    if caps.undo != "copy":  # a developer's declaration: no warehouse kind makes it yet
        raise RepairError(
            f"the {kind} warehouse declares undo by table version, which is designed "
            "(splice.warehouse.spark.undo.version_restore_sql) but not built; nothing was "
            "captured.",
            fix=f"declare undo='copy' in splice/warehouse/{kind}/capabilities.py",
        )
    method = "copy" if caps.transactions else "overwrite"
    engine = _engine_undo(ws)
    with connect(ws, "the undo capture") as con:
        for i, (node_id, relation, time_col, start, end) in enumerate(targets):
            cols = typed_columns(con, relation, ws.dialect)
            name = f"{i:02d}_{node_id.replace(':', '__').replace('/', '_')}{engine.SUFFIX}"
            path = folder / name
            checksum_sql = checksum_query(relation, time_col, start, end, ws.dialect)
            rows, checksum = engine.capture_one(con, relation, time_col, start, end, path,
                                                checksum_sql)  # fmt: skip
            saved = path.relative_to(ws.root) if path.is_relative_to(ws.root) else path
            out.append(UndoEntry(node_id, relation, time_col, start, end, rows, checksum,
                                 str(saved), cols, method))  # fmt: skip
    return out


def _saved(con: Any, ws: Workspace, e: UndoEntry, index: int) -> exp.Expr:
    """The saved rows of ``e`` as a source aliased :data:`ROW` (on PostgreSQL, loaded into a
    temporary table: call inside the restore's transaction)."""
    path = saved_path(ws, e)
    if not path.exists():
        raise RepairError(
            f"the undo of {e.relation} is missing: {path} was deleted.",
            fix="the saved rows cannot be recovered; propose the repair again to take a new undo",
        )
    saved: exp.Expr = _engine_undo(ws).load_saved(con, path, e.relation, e.columns, index)
    return saved


def _file_checksum(con: Any, ws: Workspace, e: UndoEntry, source: exp.Expr | None = None
                   ) -> tuple[int, str]:  # fmt: skip
    src = source if source is not None else _saved(con, ws, e, 0)
    return checksum_of(con, checksum_select(src, None, ws.dialect).sql(dialect=ws.dialect))


def _current(con: Any, ws: Workspace, e: UndoEntry) -> tuple[int, str]:
    return checksum_of(con, checksum_query(e.relation, e.time_column, e.start, e.end, ws.dialect))


def current_checksums(ws: Workspace, entries: list[UndoEntry]) -> list[str]:
    """The checksum of each entry's rows as the warehouse holds them now."""
    from splice.warehouse.connect import connect

    with connect(ws, "the undo check", read_only=True) as con:
        return [_current(con, ws, e)[1] for e in entries]


def _put_back(con: Any, ws: Workspace, entries: list[UndoEntry], *, keep: bool) -> list[str]:
    """Restore every entry, each checked against its recorded checksum (in one transaction
    where the engine has transactions); kept when ``keep``, else undone (a test).  Returns the
    checksums after."""
    return list(_engine_undo(ws).put_back(
        con, entries, lambda: _checked_saved(con, ws, entries), lambda c, e: _current(c, ws, e),
        keep=keep, shown=lambda e: str(_abs(ws, e.saved_to))))  # fmt: skip


def _checked_saved(con: Any, ws: Workspace, entries: list[UndoEntry]) -> list[exp.Expr]:
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


def verify_restorable(ws: Workspace, entries: list[UndoEntry]) -> None:
    """Restore every entry inside a transaction, check the checksums, roll back."""
    from splice.warehouse.connect import connect

    check_saved_files(ws, entries)
    with connect(ws, "the undo test") as con:
        _put_back(con, ws, entries, keep=False)


def check_unchanged(ws: Workspace, entries: list[UndoEntry]) -> None:
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


def check_as_requested(ws: Workspace, p: Any) -> None:
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


def restore(ws: Workspace, entries: list[UndoEntry]) -> list[str]:
    """Put every entry back in one warehouse transaction; returns the checksums after."""
    from splice.run.executors.base import release_all
    from splice.warehouse.connect import connect

    check_saved_files(ws, entries)  # before anything is opened
    release_all(ws)
    with connect(ws, "splice undo") as con:
        return _put_back(con, ws, entries, keep=True)
