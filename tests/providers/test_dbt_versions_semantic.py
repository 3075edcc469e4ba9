"""The dbt provider on versioned_dbt: model versions, an ephemeral model, the semantic layer
and a unit test, as real dbt projects use them (the project is built by hand with `dbt build`
once; Splice's view of it must match what dbt built)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_projects import Loaded, tables_in

from splice.errors import SelectorError
from splice.graph.selectors import select
from splice.lineage.query import column_lineage
from splice.workspace.core import Workspace

V1, V2 = "shopv:dim_customers.v1", "shopv:dim_customers.v2"


def test_each_model_version_is_its_own_node_writing_its_own_relation(shopv: Loaded) -> None:
    v1, v2 = shopv.node(V1), shopv.node(V2)
    assert (v1.kind, v2.kind) == ("model", "model")
    # dbt names each version's relation <name>_v<N> (manifest relation_name)
    assert v1.writes is not None and v1.writes.key == "shopv.main.dim_customers_v1"
    assert v2.writes is not None and v2.writes.key == "shopv.main.dim_customers_v2"
    assert (v1.meta["version"], v1.meta["latest_version"]) == ("1", "2")
    assert (v2.meta["version"], v2.meta["latest_version"]) == ("2", "2")
    assert "shopv:dim_customers" not in shopv.graph.nodes  # no merged node
    # each version has its own columns and its own tests
    assert set(v1.columns) == {"customer_id", "full_name"}
    assert set(v2.columns) == {"customer_id", "country"}
    tests_of = {
        v: sorted(c for c in shopv.graph.children(v) if shopv.graph.nodes[c].kind == "test")
        for v in (V1, V2)
    }
    assert tests_of == {
        V1: [
            "shopv:not_null_dim_customers_v1_customer_id",
            "shopv:unique_dim_customers_v1_customer_id",
        ],
        V2: [
            "shopv:not_null_dim_customers_v2_country",
            "shopv:not_null_dim_customers_v2_customer_id",
            "shopv:unique_dim_customers_v2_customer_id",
        ],
    }


def test_ref_with_a_version_and_ref_without_one_point_at_the_right_version(
    shopv: Loaded,
) -> None:
    g = shopv.graph
    # ref('dim_customers', v=1): v1 only; ref('dim_customers'): the latest, v2
    assert g.parents("shopv:legacy_customer_report") == {V1}
    assert g.parents("shopv:customer_revenue") == {V2, "shopv:fct_orders"}
    assert g.children(V1) >= {"shopv:legacy_customer_report"}
    assert "shopv:customer_revenue" not in g.children(V1)
    # both versions are built from the same seed: lineage does not stop at either
    assert g.parents(V1) == g.parents(V2) == {"shopv:raw_customers"}
    # the unversioned name, where one node is meant, is the latest version (as ref('m') is)
    assert g.latest_version("shopv:dim_customers") == V2
    assert g.latest_version("dim_customers") == V2


def test_splice_reports_exactly_the_relations_dbt_built(shopv: Loaded, shopv_dir: Path) -> None:
    built = tables_in(shopv_dir / "shopv.duckdb")
    written = {
        (n.writes.catalog, n.writes.schema, n.writes.name): nid
        for nid, n in shopv.graph.nodes.items()
        if n.writes
    }
    assert sorted(k for k in written if k not in built) == []
    assert sorted(".".join(k) for k in built if k not in written) == []
    # the ephemeral model writes nothing: dbt built no relation for it
    assert shopv.node("shopv:stg_orders").writes is None
    assert not [k for k in built if k[2] == "stg_orders"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("dim_customers", {V1, V2}),  # every version, as dbt's selector
        ("shopv:dim_customers", {V1, V2}),
        ("dim_customers.v1", {V1}),
        ("dim_customers_v2", {V2}),  # dbt's other spelling
        ("version:latest", {V2}),
        ("version:old", {V1}),
        ("dim_customers.v1+,kind:model", {V1, "shopv:legacy_customer_report"}),
        ("dim_customers.v2+,kind:model", {V2, "shopv:customer_revenue"}),
        ("+customer_revenue,version:latest", {V2}),
    ],
)
def test_dbt_version_selectors(shopv: Loaded, selector: str, expected: set[str]) -> None:
    assert set(select(shopv.graph, selector)) == expected


def test_an_unknown_version_value_is_a_clear_error(shopv: Loaded) -> None:
    with pytest.raises(SelectorError, match="unknown version selector 'newest'"):
        select(shopv.graph, "version:newest")


def test_version_plus_selects_its_tests_and_unit_test_downstream(shopv: Loaded) -> None:
    got = set(select(shopv.graph, "dim_customers.v2+"))
    assert "shopv:unit_test:customer_revenue.revenue_sums_orders_per_customer" in got
    assert "shopv:not_null_dim_customers_v2_country" in got
    assert not {V1, "shopv:legacy_customer_report"} & got


def test_ls_lists_the_semantic_layer_and_unit_tests_with_their_edges(shopv: Loaded) -> None:
    rec = shopv.records
    sem = rec["shopv:semantic_model:orders"]
    assert (sem["kind"], sem["tool"], sem["writes"]) == ("semantic_model", "dbt", None)
    assert sem["upstream"] == ["shopv:fct_orders"]
    assert sem["reads"] == ["shopv.main.fct_orders"]
    metric = rec["shopv:metric:revenue"]
    assert metric["kind"] == "metric" and metric["upstream"] == ["shopv:semantic_model:orders"]
    assert metric["label"] == "Revenue"
    saved = rec["shopv:saved_query:daily_revenue"]
    assert saved["kind"] == "saved_query" and saved["upstream"] == ["shopv:metric:revenue"]
    unit = rec["shopv:unit_test:customer_revenue.revenue_sums_orders_per_customer"]
    assert (unit["kind"], unit["upstream"]) == ("test", ["shopv:customer_revenue"])
    assert unit["test_type"] == "unit"
    assert (rec[V1]["version"], rec[V1]["latest_version"]) == ("1", "2")
    # every dbt resource of the manifest is listed: nothing of dbt's graph is dropped
    import json

    manifest = json.loads((shopv.root / "target" / "manifest.json").read_text())
    dbt_ids = set(manifest["nodes"]) | set(manifest["sources"])
    for attr in ("semantic_models", "metrics", "saved_queries", "unit_tests", "exposures"):
        dbt_ids |= set(manifest[attr])
    listed = {shopv.node(i).meta["unique_id"] for i in rec}
    assert dbt_ids == listed
    # selectable by kind
    assert select(shopv.graph, "kind:metric kind:saved_query") == [
        "shopv:metric:revenue",
        "shopv:saved_query:daily_revenue",
    ]


def test_lineage_passes_through_the_ephemeral_model(shopv_dir: Path) -> None:
    with Workspace.open(shopv_dir) as ws:
        res = column_lineage(ws, "shopv:fct_orders.amount", direction="upstream")
        hops = {(h["node"], h["column"]): h["kind"] for h in res["upstream"]}
        # stg_orders is ephemeral: dbt inlines it, so lineage reaches what it reads
        assert hops[("shopv:raw_orders", "amount_cents")] == "direct"
        assert hops[("shopv:raw_orders", "status")] == "indirect"  # its WHERE
        assert not any(n == "shopv:stg_orders" for n, _ in hops)
        # through the pinned old version to the seed: lineage does not stop at v1
        legacy = column_lineage(ws, "shopv:legacy_customer_report.full_name", direction="upstream")
        legacy_hops = {(h["node"], h["column"]) for h in legacy["upstream"]}
        assert {(V1, "full_name"), ("shopv:raw_customers", "first_name")} <= legacy_hops
        assert not any(n == V2 for n, _ in legacy_hops)
        # the unversioned name is the latest version
        down = column_lineage(ws, "shopv:dim_customers.country", direction="downstream")
    assert down["node"] == V2
    assert ("shopv:customer_revenue", "country") in {
        (h["node"], h["column"]) for h in down["downstream"]
    }
