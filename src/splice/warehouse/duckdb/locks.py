"""A run's lock on DuckDB: DuckDB holds no locks of its own for Splice; a DuckDB file has one
writer process at a time on one machine, which the file lock of :mod:`splice.run.locks` covers
(the ``warehouse`` lock, since DuckDB has no concurrent writers).

>>> try_lock(None, "target:prod").close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice.warehouse.locks import NoServerLock

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


def try_lock(ws: WarehouseHost, name: str) -> NoServerLock:
    """The run lock ``name`` in the warehouse: nothing to take on DuckDB."""
    return NoServerLock()
