"""The executors' registry (splice.run.executors.registry): one class per format, each
declaring its format and capabilities as data, importable without loading a tool."""

from __future__ import annotations

import subprocess
import sys

import pytest

from splice.run.executors.base import ExecutorCapabilities
from splice.run.executors.registry import CAPABILITIES, EXECUTABLE, EXECUTORS, executor_for


def test_the_registry_lists_each_format_once_in_order() -> None:
    assert list(EXECUTORS) == ["dbt", "sqlmesh", "ingestion"]
    assert list(CAPABILITIES) == list(EXECUTORS)


@pytest.mark.parametrize("fmt", list(EXECUTORS))
def test_each_executor_keeps_the_contract(fmt: str) -> None:
    cls = EXECUTORS[fmt]
    assert cls.format == fmt
    assert isinstance(cls.capabilities, ExecutorCapabilities)
    assert CAPABILITIES[fmt] is cls.capabilities
    assert callable(getattr(cls, "execute", None))
    ex = executor_for("the workspace", "shop", fmt)
    assert isinstance(ex, cls)
    assert (ex.ws, ex.project) == ("the workspace", "shop")  # type: ignore[attr-defined]


def test_what_each_tool_is_handed() -> None:
    assert EXECUTABLE == {
        "dbt": ("model", "seed", "snapshot", "test"),
        "sqlmesh": ("model", "seed", "audit"),
    }
    assert [f for f, c in CAPABILITIES.items() if c.exclusive] == ["dbt", "ingestion"]
    assert [f for f, c in CAPABILITIES.items() if c.owns_state] == ["sqlmesh"]


def test_an_unknown_format_has_no_executor() -> None:
    with pytest.raises(ValueError, match="no executor for format 'spreadsheet'"):
        executor_for(None, "shop", "spreadsheet")


def test_the_registry_loads_no_tool() -> None:
    code = (
        "import sys; import splice.run.executors.registry; "
        "print(sorted(m for m in ('dbt', 'sqlmesh', 'dlt') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
