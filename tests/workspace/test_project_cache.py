"""Each project's nodes kept under a key of its own (graph_cache.project_nodes): after an edit,
only the project that changed is loaded through its tool again, and the graph and the column
lineage are those a load of every project gives.

The workspace is the federated fixture: a SQLMesh project (inventory) read by a dbt project
(reporting), loaded by the real tools on DuckDB.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.workspace.test_graph_cache import assert_same_graph

from splice.lineage.query import column_lineage
from splice.workspace.core import Workspace

ALERTS = Path("reporting") / "models" / "marts" / "fct_reorder_alerts.sql"
POINTS = Path("inventory") / "models" / "stock" / "reorder_points.sql"


@pytest.fixture
def ws_dir(federated_base: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "federated"
    shutil.copytree(federated_base, dest)
    with Workspace.open(dest) as ws:  # the first load: both tools, every entry stored
        column_lineage(ws, "reporting:fct_reorder_alerts.sku")  # and each model's SQL rendered
        assert set(ws.loaded_projects) == {"inventory", "reporting"}
    return dest


def _tools_loaded(ws: Workspace) -> set[str]:
    """The projects whose tool this Workspace had load the project."""
    out = set()
    for name, prov in ws._providers.items():
        if getattr(prov, "manifest", None) is not None or getattr(prov, "_context", None):
            out.add(name)
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _upstream(ws: Workspace, ref: str) -> set[tuple[str, str]]:
    return {
        (u["node"], u["column"]) for u in column_lineage(ws, ref, direction="upstream")["upstream"]
    }


def test_a_dbt_edit_loads_dbt_alone_and_the_lineage_sees_it(ws_dir: Path) -> None:
    _edit(
        ws_dir / ALERTS,
        "r.reorder_quantity\n",
        "r.reorder_quantity,\n    r.reorder_quantity * 2 as doubled\n",
    )
    with Workspace.open(ws_dir) as ws:
        graph = ws.graph()
        assert not ws.graph_cached  # the workspace changed ...
        assert set(ws.loaded_projects) == {"reporting"}  # ... but SQLMesh's project did not
        up = _upstream(ws, "reporting:fct_reorder_alerts.doubled")
        assert ("inventory:stock.reorder_points", "reorder_quantity") in up
        assert _tools_loaded(ws) == {"reporting"}  # the lineage asked nothing of SQLMesh
    with Workspace.open(ws_dir, use_cache=False) as ws:
        assert_same_graph(graph, ws.graph(), same_order=False)
        assert _upstream(ws, "reporting:fct_reorder_alerts.doubled") == up
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert ws.graph_cached and not ws.loaded_projects


def test_a_sqlmesh_edit_loads_sqlmesh_alone(ws_dir: Path) -> None:
    _edit(ws_dir / POINTS, "AS reorder_quantity", "AS reorder_quantity,\n  on_hand * 2 AS spare")
    with Workspace.open(ws_dir) as ws:
        graph = ws.graph()
        assert set(ws.loaded_projects) == {"inventory"}
        assert "spare" in graph.nodes["inventory:stock.reorder_points"].columns
        up = _upstream(ws, "reporting:fct_reorder_alerts.reorder_quantity")
        assert ("inventory:stock.reorder_points", "reorder_quantity") in up
        assert "reporting" not in _tools_loaded(ws)  # dbt did not parse
    with Workspace.open(ws_dir, use_cache=False) as ws:
        assert_same_graph(graph, ws.graph(), same_order=False)


def test_splice_toml_reloads_every_project(ws_dir: Path) -> None:
    """splice.toml is read by every project's load (its environment, its options): both
    tools load again. A variable one tool reads reloads that tool alone: test_graph_cache."""
    toml = ws_dir / "splice.toml"
    toml.write_text(toml.read_text() + "\n# edited\n")
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert set(ws.loaded_projects) == {"inventory", "reporting"}


def test_a_damaged_project_entry_loads_the_tool(ws_dir: Path) -> None:
    sql = ws_dir / ALERTS
    sql.write_text(sql.read_text() + "\n-- edited\n")
    with Workspace.open(ws_dir) as ws:
        ws.inputs_key()
        assert ws.project_keys is not None
        slot = {f"{ws.target}|inventory": {"key": ws.project_keys["inventory"], "nodes": "{"}}
        ws.state.cache_put_many("project_graph", slot)
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert set(ws.loaded_projects) == {"inventory", "reporting"}


def test_manifest_json_is_never_an_earlier_parse(ws_dir: Path) -> None:
    """A reading command's parse writes no manifest.json (Splice reads the manifest in
    memory); what reads the file gets the project as it is now, never an earlier parse's."""
    with Workspace.open(ws_dir) as ws:
        target = ws.provider("reporting").artifacts()
        first = json.loads((target / "manifest.json").read_text())
    assert "model.reporting.fct_low_stock" not in first["nodes"]
    new = ws_dir / "reporting" / "models" / "marts" / "fct_low_stock.sql"
    new.write_text("select sku from {{ ref('stg_stock_levels') }}\n")
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert set(ws.loaded_projects) == {"reporting"}
        assert not (target / "manifest.json").exists()  # the earlier parse's file is gone
    with Workspace.open(ws_dir) as ws:
        again = ws.provider("reporting").artifacts()
        manifest = json.loads((again / "manifest.json").read_text())
        assert (again / "semantic_manifest.json").exists()
    assert "model.reporting.fct_low_stock" in manifest["nodes"]


def test_after_an_edit_what_it_left_alone_comes_from_the_last_whole_lineage(ws_dir: Path) -> None:
    """The models an edit did not touch take their lineage from the last whole result (one
    read), not from one entry each: with every per-model entry gone, only the edited model is
    analysed, and the whole lineage equals an analysis from scratch."""
    from splice.lineage.service import workspace_lineage

    _edit(ws_dir / ALERTS, "l.on_hand,", "l.on_hand + 0 as on_hand,")
    with Workspace.open(ws_dir) as ws:
        with ws.state.transaction():
            ws.state.conn.execute("DELETE FROM content_cache WHERE kind = 'lineage'")
        wl = workspace_lineage(ws)
        assert wl.stats["analysed"] == 1 and wl.stats["cached"] == wl.stats["models"] - 1
    with Workspace.open(ws_dir, use_cache=False) as ws:
        fresh = workspace_lineage(ws)
    assert wl.models == fresh.models
