"""The SQLMesh provider on shop_sqlmesh, a project Splice was not written against.

shop_sqlmesh has a Python macro and a @DEF, external models with column types, a SEED model,
an INCREMENTAL_BY_TIME_RANGE model, a FULL model, a Python model, built-in and custom audits
(one built-in applied twice).  It is opened as a workspace of one project (no splice.toml).
"""

from __future__ import annotations

from pathlib import Path

from fixture_projects import Loaded, copy_fixture, tables_in

from splice.graph.relations import parse_relation

P = "shop_sqlmesh"  # a lone SQLMesh project is named after its directory


def test_a_lone_sqlmesh_project_is_a_workspace_named_after_its_directory(shop: Loaded) -> None:
    assert not shop.has_config
    assert {n.project for n in shop.graph.nodes.values()} == {P}
    assert shop.graph.bindings == []


def test_models_are_schema_dot_table_with_their_kinds(shop: Loaded) -> None:
    got = {
        nid: (n.kind, n.materialization, n.language)
        for nid, n in shop.graph.nodes.items()
        if n.kind != "audit"
    }
    assert got == {
        f"{P}:raw.orders": ("external", "EXTERNAL", "none"),
        f"{P}:raw.customers": ("external", "EXTERNAL", "none"),
        f"{P}:staging.products": ("seed", "SEED", "none"),
        f"{P}:staging.orders": ("model", "INCREMENTAL_BY_TIME_RANGE", "sql"),
        f"{P}:marts.customers": ("model", "FULL", "sql"),
        f"{P}:marts.customer_tiers": ("model", "FULL", "python"),
    }
    orders = shop.node(f"{P}:staging.orders")
    assert orders.time_column == "order_date"
    assert orders.owner == "sales"
    assert orders.path == "models/staging/orders.sql"
    assert shop.node(f"{P}:marts.customer_tiers").path == "models/marts/customer_tiers.py"


def test_external_models_read_the_raw_relation_with_their_declared_types(shop: Loaded) -> None:
    ext = shop.node(f"{P}:raw.orders")
    assert ext.writes is None
    assert ext.reads == [parse_relation('"shop"."raw"."orders"')]
    assert ext.columns == {
        "order_id": "INT",
        "customer_id": "INT",
        "product_id": "TEXT",
        "ordered_at": "TIMESTAMP",
        "quantity": "INT",
    }
    assert shop.graph.children(ext.id) == {f"{P}:staging.orders"}


def test_macros_are_expanded_into_the_model_schema(shop: Loaded) -> None:
    """@cents_to_dollars (a Python macro) and @DEF(vat_rate) resolve: SQLMesh types the columns."""
    cols = shop.node(f"{P}:staging.orders").columns
    assert list(cols) == [
        "order_id",
        "customer_id",
        "product_id",
        "order_date",
        "quantity",
        "amount",
        "amount_with_vat",
    ]
    assert cols["amount"] == "DOUBLE"
    assert cols["order_date"] == "DATE"
    assert shop.node(f"{P}:marts.customer_tiers").columns == {
        "customer_id": "INT",
        "lifetime_value": "DOUBLE",
        "tier": "TEXT",
    }


def test_audits_are_nodes_audit_model_name(shop: Loaded) -> None:
    audits = {nid: n for nid, n in shop.graph.nodes.items() if n.kind == "audit"}
    assert sorted(audits) == sorted(
        f"{P}:audit:{x}"
        for x in (
            "staging.products.unique_values",
            "staging.orders.not_null",
            "staging.orders.unique_values",
            "staging.orders.assert_positive",  # the project's own audit
            "staging.orders.accepted_range",
            "staging.orders.accepted_range_2",  # the same audit on a second column
            "marts.customers.not_null",
        )
    )
    for nid, a in audits.items():
        assert shop.graph.parents(nid) == {a.meta["model"]}
    assert audits[f"{P}:audit:staging.orders.accepted_range"].meta["args"]["column"] == "quantity"
    assert audits[f"{P}:audit:staging.orders.accepted_range_2"].meta["args"]["column"] == "amount"


def test_model_relations_are_the_views_sqlmesh_built(shop: Loaded, shop_dir: Path) -> None:
    built = tables_in(shop_dir / "shop.duckdb")
    for nid in (f"{P}:staging.orders", f"{P}:marts.customers", f"{P}:marts.customer_tiers"):
        w = shop.node(nid).writes
        assert built.get((w.catalog, w.schema, w.name)) == "VIEW", nid
    # "cat"."schema"."x" (SQLMesh's fqn) is the same relation as its unquoted spelling
    w = shop.node(f"{P}:staging.orders").writes
    assert w == parse_relation('"shop"."staging"."orders"') == parse_relation("SHOP.Staging.Orders")
    assert shop.node(f"{P}:staging.orders").meta["fqn"] == '"shop"."staging"."orders"'
    # the versioned physical tables are not what Splice reports
    assert not [n for n in shop.graph.nodes.values() if n.writes and "sqlmesh__" in n.writes.schema]


def test_dependencies_follow_the_sql_and_the_python_model(shop: Loaded) -> None:
    g = shop.graph
    assert g.parents(f"{P}:staging.orders") == {f"{P}:raw.orders", f"{P}:staging.products"}
    assert g.parents(f"{P}:marts.customers") == {f"{P}:raw.customers", f"{P}:staging.orders"}
    assert g.parents(f"{P}:marts.customer_tiers") == {f"{P}:marts.customers"}
    assert {r.key for r in shop.node(f"{P}:marts.customers").reads} == {
        "shop.raw.customers",
        "shop.staging.orders",
    }


def test_doctor_on_shop(shop: Loaded) -> None:
    assert not [c for c in shop.checks if c.severity == "error"]
    assert sorted(c.node for c in shop.codes("SPL102")) == [f"{P}:raw.customers", f"{P}:raw.orders"]
    assert shop.codes("SPL301") == []  # external_models.yaml declares every column type


def test_target_dev_reads_models_through_the_dev_views(shop_dir: Path) -> None:
    dev = Loaded(shop_dir, target="dev")
    orders = dev.node(f"{P}:staging.orders")
    assert orders.writes.key == "shop.staging__dev.orders"
    assert orders.meta["prod_relation"] == "shop.staging.orders"
    assert {r.key for r in dev.node(f"{P}:marts.customers").reads} == {
        "shop.raw.customers",  # external: the same in every environment
        "shop.staging__dev.orders",
    }


def test_a_directory_name_that_is_not_a_project_name_is_made_into_one(tmp_path: Path) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path, as_name="shop.v2 (copy)")
    loaded = Loaded(root)
    assert {n.project for n in loaded.graph.nodes.values()} == {"shop_v2__copy_"}
    assert "shop_v2__copy_:staging.orders" in loaded.graph.nodes
