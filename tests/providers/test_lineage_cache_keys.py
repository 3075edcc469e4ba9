"""The lineage caches (rendered SQL, lineage results) are keyed by everything that changes the
answer: a changed dialect in splice.toml, or a new dbt, adapter, SQLMesh, sqlglot or Splice,
renders and analyses again; nothing else does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixture_projects import copy_fixture

import splice.lineage.cache as lineage_cache
from splice.lineage.service import workspace_lineage
from splice.workspace.core import Workspace

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SQLMESH_MODELS = 2  # billing: BILLING.PAYMENTS, BILLING.BALANCES
DBT_MODELS = 1  # ledger: balance_history


def stats(root: Path) -> dict[str, Any]:
    # the per-model caches under test; the whole-workspace warm path (keyed by the graph
    # cache's key, with its own version sources) is tested in tests/graph/test_graph_cache.py
    with Workspace.open(root, use_cache=False) as ws:
        wl = workspace_lineage(ws)
        assert not any(ml.opaque_reason for ml in wl.models.values())
        return wl.stats


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = copy_fixture("selfref", tmp_path)
    first = stats(root)
    assert (first["rendered"], first["analysed"]) == (3, 3)
    again = stats(root)
    assert (again["rendered"], again["analysed"], again["cached"]) == (0, 0, 3)
    return root


def test_changing_the_workspace_dialect_renders_and_analyses_again(root: Path) -> None:
    toml = root / "splice.toml"
    text = toml.read_text()
    assert 'type = "duckdb"\n' in text
    toml.write_text(text.replace('type = "duckdb"\n', 'type = "duckdb"\ndialect = "postgres"\n'))
    changed = stats(root)
    assert (changed["rendered"], changed["analysed"], changed["cached"]) == (3, 3, 0)
    # and back: the old entries are still valid for the old inputs
    toml.write_text(text)
    back = stats(root)
    assert (back["rendered"], back["analysed"]) == (0, 0)


@pytest.mark.parametrize(
    ("package", "rendered"),
    [
        ("sqlmesh", SQLMESH_MODELS),
        ("dbt-core", DBT_MODELS),
        ("dbt-duckdb", DBT_MODELS),  # the adapter of ledger's profile
        ("sqlglot", 3),
        ("splice", 3),
    ],
)
def test_a_new_tool_or_splice_version_renders_again(
    root: Path, monkeypatch: pytest.MonkeyPatch, package: str, rendered: int
) -> None:
    real = lineage_cache.package_version

    def upgraded(name: str) -> str:
        return "99.0.0" if name == package else real(name)

    monkeypatch.setattr(lineage_cache, "package_version", upgraded)
    after = stats(root)
    assert (after["rendered"], after["analysed"], after["cached"]) == (
        rendered,
        rendered,
        3 - rendered,
    )
