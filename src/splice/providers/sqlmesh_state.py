"""A cheap mark of SQLMesh's state in the warehouse, read without loading SQLMesh: an
order-independent checksum of its ``_intervals`` and ``_environments`` tables. A ``sqlmesh
plan`` or ``sqlmesh run`` (by Splice or by hand) moves it.

The plan memo (:mod:`splice.plan.memo`) rests on it, and doctor keeps what it read from a
multi-repo project's shared state (the models other projects own) while it is the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.warehouse.rows import checksum_query

if TYPE_CHECKING:
    from splice.providers.host import ProjectsHost

STATE_TABLES = ("_intervals", "_environments")


def own_state_connection(ws: ProjectsHost, spec: Any) -> bool:
    """Whether a SQLMesh project keeps its state elsewhere than the warehouse."""
    base = ws.root / spec.path
    for name in ("config.yaml", "config.yml", "config.py"):
        f = base / name
        if f.exists() and "state_connection" in f.read_text(errors="replace"):
            return True
    return False


def state_probe(ws: ProjectsHost, state_files: dict[str, str] | None = None) -> list[str] | None:
    """A checksum of SQLMesh's interval and environment state, or None when it cannot be read
    cheaply (a project with its own ``state_connection`` that ``state_files`` does not name as
    a DuckDB file, a warehouse other than DuckDB or PostgreSQL holding the state, or a state
    that does not answer). ``[]`` when the workspace has no SQLMesh project. Raises
    :class:`~splice.errors.WarehouseError` while a run in another process writes a DuckDB
    warehouse.

    ``state_files``: project -> the DuckDB file of its own state connection, as the loaded
    project said (:meth:`SqlmeshProvider.state_file`); that file is read directly, so the
    warehouse (a Spark server, say) is not asked at all when every project keeps its state so.
    """
    specs = [s for s in ws.config.projects if s.format == "sqlmesh"]
    if not specs:
        return []
    files = state_files or {}
    own = {s.name for s in specs if own_state_connection(ws, s)}
    if any(name not in files for name in own):
        return None
    out: list[str] = []
    for path in sorted({files[name] for name in own}):
        marks = _file_marks(path)
        if marks is None:
            return None
        out += [f"{path}:{m}" for m in marks]
    if len(own) == len(specs):
        return out
    kind = ws.config.warehouse.type
    if kind not in ("duckdb", "postgres"):
        return None
    from splice.errors import WarehouseError
    from splice.warehouse.connect import connect

    if kind == "duckdb":
        import duckdb

        from splice.warehouse.duckdb.connect import refuse_while_a_run_writes

        # a run in another process writes the file: say so (a retry helps) rather than open
        # it between two of its segments, or load SQLMesh, which would open it for longer
        refuse_while_a_run_writes(ws, "reading SQLMesh's state")
        errors: tuple[type[BaseException], ...] = (duckdb.Error, WarehouseError)
    else:
        import psycopg

        errors = (psycopg.Error, WarehouseError)
    try:
        with connect(ws, "the plan memo", read_only=True) as con:
            for t in STATE_TABLES:
                n, total = con.execute(
                    checksum_query(f"sqlmesh.{t}", None, None, None, ws.dialect)
                ).fetchone()
                out.append(f"{t}:{n}:{total}")
    except errors:
        return None
    return out


def _file_marks(path: str) -> list[str] | None:
    """The checksums of SQLMesh's state tables in a DuckDB state file, or None when it cannot
    be read now (missing, or held by a process writing it)."""
    import os

    import duckdb

    if not os.path.exists(path):
        return None
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error:
        return None
    try:
        out = []
        for t in STATE_TABLES:
            row = con.execute(checksum_query(f"sqlmesh.{t}", None, None, None, "duckdb")).fetchone()
            out.append(f"{t}:{row[0]}:{row[1]}" if row else f"{t}:-")
        return out
    except duckdb.Error:
        return None
    finally:
        con.close()
