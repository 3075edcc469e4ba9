"""A run's lock on Spark: Spark Connect offers no lock a client could hold, so a run's lock is
the file lock of :mod:`splice.run.locks` alone (runs from other machines are not refused by
the warehouse).

>>> try_lock(None, "target:prod").close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice.warehouse.locks import NoServerLock

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


def try_lock(ws: WarehouseHost, name: str) -> NoServerLock:
    """The run lock ``name`` in the warehouse: nothing to take on Spark."""
    return NoServerLock()
