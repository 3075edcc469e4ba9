"""What DuckDB can do: one writer process at a time, transactions and temporary tables, its own
row hash; no users, so no grants."""

from __future__ import annotations

from splice.warehouse.capabilities import WarehouseCapabilities

CAPABILITIES = WarehouseCapabilities(concurrent_writers=False, max_parallel=1, row_hash="HASH")
