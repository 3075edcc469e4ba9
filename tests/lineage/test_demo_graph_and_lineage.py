"""The joined graph and column lineage on the built demo: real dbt, real SQLMesh, real DuckDB."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.cli_runner import run_cli

from splice.api import doctor, graph_view, list_nodes
from splice.demo import relocate
from splice.errors import NodeNotFoundError, SelectorError
from splice.lineage.query import column_lineage, openlineage_for
from splice.lineage.service import workspace_lineage
from splice.workspace.core import Workspace


@pytest.fixture(scope="module")
def ws_dir(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("lineage") / "travel"
    shutil.copytree(demo_workspace, dest, symlinks=True)
    relocate(dest)
    return dest


@pytest.fixture(scope="module")
def ws(ws_dir: Path):
    with Workspace.open(ws_dir) as w:
        yield w


def test_one_graph_has_every_kind_of_node(ws):
    kinds = {r["id"]: r["kind"] for r in list_nodes(ws)}
    assert kinds["pricing:fx.daily_rates"] == "model"
    assert kinds["pricing:raw.fx_rates"] == "external"
    assert kinds["finance:source:pricing.agg_gmv_daily"] == "source"
    assert kinds["finance:currency_regions"] == "seed"
    assert kinds["finance:exposure:q3_close"] == "dashboard"
    assert kinds["dashboards:pricing_ops"] == "dashboard"
    assert kinds["ingestion:fx_rates_ingest"] == "ingestion"
    assert "test" in kinds.values() and "audit" in kinds.values()


def test_relations_from_both_tools_meet(ws):
    g = ws.graph()
    src = g.nodes["finance:source:pricing.agg_gmv_daily"]
    model = g.nodes["pricing:marts.agg_gmv_daily"]
    assert src.reads == [model.writes]
    assert model.writes.key == "warehouse.marts.agg_gmv_daily"


def test_bindings_carry_their_evidence(ws):
    data = graph_view(ws, None, "json")
    edges = {(e["upstream"], e["downstream"]): e["evidence"] for e in data["edges"]}
    assert (
        edges[("pricing:marts.agg_gmv_daily", "finance:source:pricing.agg_gmv_daily")] == "declared"
    )
    assert (
        edges[("pricing:marts.fct_bookings_usd", "finance:source:pricing.fct_bookings_usd")]
        == "matched"
    )
    assert edges[("ingestion:fx_rates_ingest", "pricing:raw.fx_rates")] == "matched"
    text = graph_view(ws, None, "text")
    assert (
        "pricing:marts.fct_bookings_usd -> finance:source:pricing.fct_bookings_usd (inferred"
        in text
    )


def test_dot_and_mermaid_show_bindings(ws):
    dot = graph_view(ws, "+finance:stg_gmv_daily", "dot")
    assert "cluster_pricing" in dot and "cluster_finance" in dot and "dashed" in dot
    mermaid = graph_view(ws, "+finance:stg_gmv_daily", "mermaid")
    assert mermaid.startswith("flowchart LR") and "-.->|declared|" in mermaid


def test_selectors_cross_the_binding(ws):
    ids = [
        r["id"] for r in list_nodes(ws, "pricing:fx.daily_rates+", exclude="kind:test kind:audit")
    ]
    assert ids[0] == "pricing:fx.daily_rates"
    assert "finance:fct_gmv_qtd" in ids and "finance:exposure:q3_close" in ids
    assert ids.index("pricing:marts.agg_gmv_daily") < ids.index("finance:stg_gmv_daily")
    with pytest.raises(SelectorError, match="finance:fct_gmv_qtd"):
        list_nodes(ws, "fct_gmv_qdt")


def test_dashboard_lineage_reaches_the_vendor_job(ws):
    res = column_lineage(ws, "finance:exposure:q3_close", direction="upstream")
    hops = {(h["node"], h["column"]): h for h in res["upstream"]}
    assert hops[("pricing:marts.agg_gmv_daily", "gmv_usd")]["across_binding"]
    assert hops[("pricing:marts.fct_bookings_usd", "amount_usd")]["kind"] == "direct"
    assert hops[("pricing:fx.daily_rates", "rate_to_usd")]["kind"] == "direct"
    assert hops[("ingestion:fx_rates_ingest", "rate_to_usd")]["kind"] == "direct"
    # the join key of the rate lookup affects the value but does not flow into it
    assert hops[("pricing:fx.daily_rates", "currency")]["kind"] == "indirect"
    assert "ingestion:fx_rates_ingest" in res["upstream_origins"]


def test_rate_lineage_downstream_reaches_dbt_and_dashboards(ws):
    res = column_lineage(ws, "pricing:fx.daily_rates.rate_to_usd", direction="downstream")
    reached = {(h["node"], h["column"]) for h in res["downstream"]}
    assert ("finance:fct_gmv_qtd", "gmv_usd_qtd") in reached
    assert ("finance:stg_gmv_daily", "gmv_usd") in reached
    assert {
        "finance:exposure:q3_close",
        "finance:exposure:gmv_usd_dashboard",
        "dashboards:pricing_ops",
    } <= set(res["dashboards"])


def test_unknown_column_names_the_closest(ws):
    with pytest.raises(NodeNotFoundError, match="gmv_usd_qtd"):
        column_lineage(ws, "finance:fct_gmv_qtd.gmv_usdqtd")


def test_openlineage_facets(ws):
    facets = openlineage_for(ws, "finance:fct_gmv_qtd", direction="upstream")
    by_name = {f["name"]: f for f in facets}
    f = by_name["warehouse.finance.fct_gmv_qtd"]["facets"]["columnLineage"]
    assert f["_schemaURL"].endswith("ColumnLineageDatasetFacet")
    inputs = f["fields"]["gmv_usd_qtd"]["inputFields"]
    assert any(
        i["name"] == "warehouse.finance.stg_gmv_daily" and i["field"] == "gmv_usd" for i in inputs
    )


def test_unchanged_models_are_never_reanalysed(ws_dir: Path):
    with Workspace.open(ws_dir) as w:
        first = workspace_lineage(w).stats
    with Workspace.open(ws_dir) as w:
        second = workspace_lineage(w).stats
    assert first["models"] == second["models"] >= 7
    assert second["analysed"] == 0 and second["cached"] == second["models"]


def test_doctor_is_clean_on_the_demo(ws):
    assert [c for c in doctor(ws) if c.severity == "error"] == []


def _splice(ws_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(ws_dir), *args])


def test_cli_lineage_json_and_errors(ws_dir: Path):
    ok = _splice(ws_dir, "lineage", "pricing:fx.daily_rates.rate_to_usd", "--downstream", "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["node"] == "pricing:fx.daily_rates" and data["column"] == "rate_to_usd"
    bad = _splice(ws_dir, "lineage", "pricing:fx.daly_rates")
    assert bad.returncode == 2
    assert "pricing:fx.daily_rates" in bad.stderr and "Traceback" not in bad.stderr


def _tree_parents(text: str) -> dict[str, str]:
    """Each line of a drawn tree -> the line it hangs under (by the guides' width: 4 columns a
    level), for the lines below the first."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        label = line.lstrip(" │├└─")
        level = (len(line) - len(label)) // 4
        while stack and stack[-1][0] >= level:
            stack.pop()
        if stack:
            parents[label] = stack[-1][1]
        stack.append((level, label))
    return parents


def test_cli_lineage_draws_a_tree_by_parent(ws_dir: Path):
    """Each column is drawn under the column it was reached from, with the edge's kind: the
    vendor's rate under the rate it feeds, not under whatever column came before it at its
    depth."""
    up = _splice(ws_dir, "lineage", "finance:exposure:q3_close", "--upstream")
    assert up.returncode == 0, up.stderr
    assert "├── " in up.stdout and "└── " in up.stdout
    parents = _tree_parents(up.stdout)
    assert parents["finance:fct_gmv_qtd.gmv_usd direct"] == "upstream (23 columns)"
    assert (
        parents["pricing:marts.agg_gmv_daily.gmv_usd direct (across binding)"]
        == "finance:stg_gmv_daily.gmv_usd direct"
    )
    assert (
        parents["pricing:fx.daily_rates.rate_to_usd direct"]
        == "pricing:marts.fct_bookings_usd.amount_usd direct"
    )
    assert (
        parents["ingestion:fx_rates_ingest.rate_to_usd direct (across binding)"]
        == "pricing:fx.daily_rates.rate_to_usd direct"
    )
    assert (
        parents["ingestion:fx_rates_ingest.currency indirect (across binding)"]
        == "pricing:fx.daily_rates.currency indirect"
    )
    # a walk from a whole node: one branch per column of it
    node = _splice(ws_dir, "lineage", "pricing:fx.daily_rates", "--upstream")
    assert node.returncode == 0, node.stderr
    parents = _tree_parents(node.stdout)
    assert parents["pricing:fx.daily_rates.rate_to_usd"] == "upstream (4 columns)"
    assert (
        parents["ingestion:fx_rates_ingest.rate_to_usd direct (across binding)"]
        == "pricing:fx.daily_rates.rate_to_usd"
    )
    down = _splice(ws_dir, "lineage", "pricing:fx.daily_rates.rate_to_usd", "--downstream")
    parents = _tree_parents(down.stdout)
    assert (
        parents["finance:fct_gmv_qtd.gmv_usd_qtd direct"]
        == "finance:stg_gmv_daily.gmv_usd direct (across binding)"
    )
    assert down.stdout.rstrip().endswith(
        "dashboards: dashboards:pricing_ops, finance:exposure:gmv_usd_dashboard, "
        "finance:exposure:q3_close"
    )
