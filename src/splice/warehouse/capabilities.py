"""What a warehouse engine can do, as data: one :class:`WarehouseCapabilities` per engine
(``splice/warehouse/<engine>/capabilities.py``), read through :func:`splice.warehouse.engines.capabilities`.

The runner reads how many writers may build at once, the undo whether it restores in one
transaction, the access grants whether there are roles to grant through.

>>> caps = WarehouseCapabilities(concurrent_writers=False, max_parallel=1)
>>> caps.transactions, caps.undo, caps.grants
(True, 'copy', False)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WarehouseCapabilities:
    """concurrent_writers: may several writers build at once; max_parallel: how many segments;
    grants: has roles, so read access is granted relation by relation (splice access);
    transactions: several statements commit or roll back as one (an undo restores every
    relation at once, and its restore test rolls back); undo: ``"copy"`` (the rows a repair
    rewrites are copied aside and put back) or ``"version"`` (an engine with table versions,
    such as Delta Lake: the version is recorded and restored; see
    :mod:`splice.warehouse.spark.undo`); temp_tables: a connection keeps temporary tables
    (a recompute compares through them); server_locks: a run's lock is also taken in the
    server (runs from other machines are refused too: :mod:`splice.warehouse.postgres.locks`);
    row_hash: the function the row checksums hash with (:mod:`splice.warehouse.rows`);
    local_server: Splice can start a throwaway server of its own (``[warehouse] local``)."""

    concurrent_writers: bool
    max_parallel: int
    grants: bool = False
    transactions: bool = True
    undo: str = "copy"
    temp_tables: bool = True
    server_locks: bool = False
    row_hash: str = "HASH"
    local_server: bool = False


#: The capabilities of a warehouse kind no engine folder declares.
DEFAULT = WarehouseCapabilities(concurrent_writers=True, max_parallel=4)
