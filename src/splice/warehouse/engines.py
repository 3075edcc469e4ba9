"""The warehouse engines Splice knows, and where each one's code lives: one folder per engine.

Every engine folder (``splice/warehouse/<engine>/``) holds the same modules, each with the
same functions (:data:`CONTRACT`); ``local_server`` only where Splice can start a throwaway
server of the engine's own. Code that works on any engine asks this module for the engine's
module (:func:`engine_module`) instead of branching on the engine's name. Engines are imported
when first asked for, so a driver (psycopg, pyspark) is loaded only where its engine is used.
How to add one: ``docs/internals.md``, "Adding a warehouse".

>>> ENGINES
('duckdb', 'postgres', 'spark')
>>> capabilities("postgres").grants, capabilities("duckdb").concurrent_writers
(True, False)
>>> engine_module("spark", "rows").__name__
'splice.warehouse.spark.rows'
>>> engine_of("snowflake")  # a dialect no engine folder holds reads as DuckDB's SQL
'duckdb'
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from splice.warehouse.capabilities import DEFAULT, WarehouseCapabilities

#: The engines, each a folder of this package named as ``[warehouse] type`` names it.
ENGINES: tuple[str, ...] = ("duckdb", "postgres", "spark")

#: The engine whose SQL a dialect no engine folder holds is read as.
FALLBACK = "duckdb"

#: The modules every engine folder holds, and the names each must define.
CONTRACT: dict[str, tuple[str, ...]] = {
    "capabilities": ("CAPABILITIES",),
    "connect": ("connect", "catalog", "address"),
    "columns": ("typed_columns", "all_columns"),
    "rows": ("row_hash", "value_hash", "key_hash", "round_significant"),
    "undo": ("SUFFIX", "capture_one", "check_saved", "load_saved", "put_back"),
    "locks": ("try_lock",),
    "grants": (
        "role_for",
        "grant_statements",
        "reassert_statements",
        "revoke_statements",
        "role_exists",
        "missing",
        "run",
    ),
}

#: The module of an engine that can start a server of its own, and what it must define.
LOCAL_SERVER: tuple[str, ...] = ("ensure",)


def engine_of(kind: str) -> str:
    """The engine folder for a ``[warehouse] type`` or a SQL dialect."""
    return kind if kind in ENGINES else FALLBACK


def engine_module(kind: str, module: str) -> ModuleType:
    """The module ``module`` (one of :data:`CONTRACT`, or ``local_server``) of engine ``kind``."""
    if module not in CONTRACT and module != "local_server":
        raise ValueError(f"no engine module {module!r}: one of {', '.join(CONTRACT)}")
    return import_module(f"{__package__}.{engine_of(kind)}.{module}")


def capabilities(kind: str) -> WarehouseCapabilities:
    """What the warehouse ``kind`` can do (:data:`DEFAULT` for a kind no folder declares)."""
    if kind not in ENGINES:
        return DEFAULT
    caps: WarehouseCapabilities = engine_module(kind, "capabilities").CAPABILITIES
    return caps
