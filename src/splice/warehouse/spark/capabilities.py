"""What Spark (through Spark Connect) can do: clients in several processes at once, one
metastore behind them; no transactions (the undo restores relation by relation) and no
temporary tables kept by the session; rows hashed with ``XXHASH64``."""

from __future__ import annotations

from splice.warehouse.capabilities import WarehouseCapabilities

CAPABILITIES = WarehouseCapabilities(
    concurrent_writers=True,
    max_parallel=2,
    transactions=False,
    temp_tables=False,
    row_hash="XXHASH64",
    local_server=True,
)
