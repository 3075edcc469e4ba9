"""What PostgreSQL can do: a server with several writers at once, roles to grant through,
transactions and temporary tables, advisory locks; rows hashed through MD5."""

from __future__ import annotations

from splice.warehouse.capabilities import WarehouseCapabilities

#: a server: several writers at once; a run's lock is per target (and an advisory lock)
CAPABILITIES = WarehouseCapabilities(
    concurrent_writers=True,
    max_parallel=4,
    grants=True,
    server_locks=True,
    row_hash="MD5",
    local_server=True,
)
