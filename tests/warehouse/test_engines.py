"""Every engine folder holds the same modules with the same functions (the contract an engine
fills: docs/internals.md, "Adding a warehouse"), and the registry maps each engine to its own."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

import splice.warehouse as warehouse
from splice.warehouse.capabilities import WarehouseCapabilities
from splice.warehouse.engines import (
    CONTRACT,
    ENGINES,
    LOCAL_SERVER,
    capabilities,
    engine_module,
    engine_of,
)

HERE = Path(warehouse.__file__).parent


def test_every_engine_folder_is_registered_and_every_registered_engine_has_a_folder() -> None:
    folders = sorted(p.name for p in HERE.iterdir() if (p / "__init__.py").exists())
    assert folders == sorted(ENGINES)


@pytest.mark.parametrize("kind", ENGINES)
def test_an_engine_fills_the_contract(kind: str) -> None:
    for module, names in CONTRACT.items():
        mod = engine_module(kind, module)
        assert mod.__name__ == f"splice.warehouse.{kind}.{module}"
        missing = [n for n in names if not hasattr(mod, n)]
        assert not missing, f"{mod.__name__} lacks {missing}"
    caps = capabilities(kind)
    assert isinstance(caps, WarehouseCapabilities)
    if caps.local_server:
        server = engine_module(kind, "local_server")
        assert all(callable(getattr(server, n, None)) for n in LOCAL_SERVER)
    else:
        assert not (HERE / kind / "local_server.py").exists()


def test_the_same_function_takes_the_same_arguments_in_every_engine() -> None:
    for module, names in CONTRACT.items():
        for name in names:
            shapes = {}
            for kind in ENGINES:
                obj = getattr(engine_module(kind, module), name)
                if callable(obj):
                    shapes[kind] = list(inspect.signature(obj).parameters)
            assert len({tuple(s) for s in shapes.values()}) <= 1, (module, name, shapes)


def test_capabilities_are_data() -> None:
    caps = capabilities("duckdb")
    with pytest.raises(FrozenInstanceError):
        caps.grants = True  # type: ignore[misc]
    assert (capabilities("duckdb").concurrent_writers, capabilities("postgres").grants,
            capabilities("spark").transactions) == (False, True, False)  # fmt: skip
    assert [capabilities(k).row_hash for k in ENGINES] == ["HASH", "MD5", "XXHASH64"]
    assert capabilities("oracle").max_parallel == 4  # a kind no folder declares: the default


def test_a_dialect_without_a_folder_reads_as_duckdb() -> None:
    assert engine_of("snowflake") == "duckdb" and engine_of("spark") == "spark"
    with pytest.raises(ValueError, match="no engine module"):
        engine_module("duckdb", "planner")
