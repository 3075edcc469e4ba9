"""A connection to a DuckDB warehouse (a file), opened for one piece of work.

DuckDB allows one writer process: a connection is opened for one piece of work and closed at
once (see ../shared/STACK.md), and a lock held by another process becomes a clear
:class:`~splice.errors.WarehouseError` that says a retry can help.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.errors import WarehouseError

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


def catalog(wh: Any) -> str:
    """The catalog relations live in: DuckDB names it after the file's stem."""
    return Path(wh.path).stem


def address(ws: WarehouseHost) -> str:
    """Where the warehouse is, as one comparable text: the file."""
    return str(ws.warehouse_path)


def refuse_while_a_run_writes(ws: WarehouseHost, what: str) -> None:
    """Raise a WarehouseError (a retry helps) while a `splice run` in another process holds
    the warehouse: a reader opening the file between two of the run's segments would make the
    next segment fail on DuckDB's lock. Readers in the run's own process pass."""
    from splice.warehouse.locks import held_elsewhere

    holder = held_elsewhere(ws.root / ".splice" / "locks")
    if holder is None:
        return
    named = [f"{k} {holder[f]}" for k, f in (("pid", "pid"), ("run", "run_id")) if holder.get(f)]
    who = f" ({', '.join(named)})" if named else ""
    raise WarehouseError(
        f"{what}: a splice run{who} is writing the warehouse "
        f"{ws.warehouse_path}, and DuckDB lets one process in at a time.",
        fix="retry when the run ends (`splice runs` lists it)",
        retry=True,
    )


@contextmanager
def connect(ws: WarehouseHost, what: str, *, read_only: bool = False) -> Iterator[Any]:
    """A DuckDB connection to the workspace's warehouse file, closed when the block ends.

    ``what`` names the work in errors ("splice watch", "incident diagnosis").
    """
    path = ws.warehouse_path
    if not path.exists():
        raise WarehouseError(
            f"the warehouse {path} does not exist, so {what} has nothing to read.",
            fix="build the workspace first (splice run), or correct [warehouse].path",
        )
    import duckdb

    from splice.support.faults_env import locked_error

    if read_only:
        refuse_while_a_run_writes(ws, what)
    try:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.ConnectionException as e:
            # this process already holds the file read-write (a tool's connection): reading
            # through a connection of the same configuration is what DuckDB allows
            if not (read_only and "different configuration" in str(e)):
                raise
            con = duckdb.connect(str(path))
    except duckdb.Error as e:
        err = locked_error(e, f"{what}: warehouse {path}")
        if err is not None:
            raise err from None
        raise WarehouseError(
            f"the warehouse {path} cannot be opened: {e}.",
            fix="check the file is a DuckDB database this DuckDB version can read",
        ) from None
    try:
        yield con
    finally:
        con.close()
