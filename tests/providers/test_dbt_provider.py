"""The dbt provider on jaffle_dbt, a project Splice was not written against.

jaffle_dbt has a local package, seeds, a snapshot, an ephemeral model, a custom
generate_schema_name, a Python model, sources with and without column types (and one that
reads files through dbt-duckdb's external_location), generic and singular tests, an exposure.
It is opened as a workspace of one project: there is no splice.toml.
"""

from __future__ import annotations

from pathlib import Path

from fixture_projects import Loaded, tables_in

from splice.graph.relations import parse_relation


def test_a_lone_dbt_project_is_a_workspace_named_after_dbt_project_yml(jaffle: Loaded) -> None:
    assert not jaffle.has_config
    assert {n.project for n in jaffle.graph.nodes.values()} == {"jaffle"}
    # a lone dbt project: Splice's target is the profile's default target, the one dbt runs
    assert jaffle.target == "dev"
    assert jaffle.graph.bindings == []  # one project: every edge is dbt's own


def test_every_kind_of_dbt_node_has_an_id_project_colon_name(jaffle: Loaded) -> None:
    kinds = {nid: (n.kind, n.tool) for nid, n in jaffle.graph.nodes.items()}
    expected = {
        "jaffle:stg_orders": ("model", "dbt"),
        "jaffle:customers": ("model", "dbt"),
        "jaffle:source:shop.orders": ("source", "dbt"),
        "jaffle:source:shop.payments": ("source", "dbt"),
        "jaffle:source:files.refunds": ("source", "dbt"),
        "jaffle:raw_customers": ("seed", "dbt"),
        "jaffle:payment_methods": ("seed", "dbt"),
        "jaffle:customers_snapshot": ("snapshot", "dbt"),
        "jaffle:unique_orders_order_id": ("test", "dbt"),
        "jaffle:source_unique_shop_orders_id": ("test", "dbt"),
        "jaffle:assert_order_amounts_not_negative": ("test", "dbt"),  # a singular test
        "jaffle:exposure:weekly_kpis": ("dashboard", "exposure"),
        "jaffle:calendar_days": ("model", "dbt"),  # from the local package
    }
    assert {k: kinds.get(k) for k in expected} == expected
    # the project hook (on-run-start) is not a node
    assert not [n for n in jaffle.graph.nodes if "on-run-start" in n or "hook" in n]


def test_package_model_belongs_to_the_project_and_records_its_package(jaffle: Loaded) -> None:
    cal = jaffle.node("jaffle:calendar_days")
    assert cal.meta["package"] == "jaffle_utils"
    assert jaffle.node("jaffle:customers").meta["package"] == "jaffle"


def test_custom_generate_schema_name_is_respected_in_relations(jaffle: Loaded) -> None:
    writes = {nid: n.writes.key for nid, n in jaffle.graph.nodes.items() if n.writes}
    # the macro puts a model that sets +schema into exactly that schema (dbt's default
    # would be main_marts, main_staging, ...)
    assert writes["jaffle:customers"] == "jaffle.marts.customers"
    assert writes["jaffle:customer_segments"] == "jaffle.marts.customer_segments"
    assert writes["jaffle:stg_orders"] == "jaffle.staging.stg_orders"
    assert writes["jaffle:raw_customers"] == "jaffle.seeds.raw_customers"
    assert writes["jaffle:customers_snapshot"] == "jaffle.snapshots.customers_snapshot"
    assert writes["jaffle:calendar_days"] == "jaffle.utils.calendar_days"
    assert not [w for w in writes.values() if ".main_" in w]


def test_the_relations_splice_reports_are_the_objects_dbt_built(
    jaffle: Loaded, jaffle_dir: Path
) -> None:
    built = tables_in(jaffle_dir / "jaffle.duckdb")
    written = {
        (n.writes.catalog, n.writes.schema, n.writes.name): nid
        for nid, n in jaffle.graph.nodes.items()
        if n.writes
    }
    missing = sorted(nid for key, nid in written.items() if key not in built)
    assert missing == []
    # everything dbt built is written by a node; only the loader's raw tables are not
    unclaimed = sorted(".".join(k) for k in built if k not in written)
    assert unclaimed == ["jaffle.raw.orders", "jaffle.raw.payments"]
    assert built[("jaffle", "staging", "stg_orders")] == "VIEW"
    # and a source reads the relation the loader wrote, in the same normalised form
    assert jaffle.node("jaffle:source:shop.orders").reads == [
        parse_relation('"jaffle"."raw"."orders"')
    ]


def test_ephemeral_model_writes_nothing_and_is_still_upstream(jaffle: Loaded) -> None:
    eph = jaffle.node("jaffle:stg_payments")
    assert eph.materialization == "ephemeral"
    assert eph.writes is None
    assert jaffle.records["jaffle:stg_payments"]["writes"] is None
    assert "jaffle:orders" in jaffle.graph.children("jaffle:stg_payments")
    assert {r.key for r in eph.reads} == {"jaffle.raw.payments", "jaffle.seeds.payment_methods"}
    # nothing else claims a relation named after it
    assert not [
        r for r in jaffle.graph.nodes.values() if r.writes and r.writes.name == "stg_payments"
    ]


def test_python_model_has_language_python(jaffle: Loaded) -> None:
    seg = jaffle.node("jaffle:customer_segments")
    assert seg.language == "python"
    assert seg.path == "models/marts/customer_segments.py"
    assert jaffle.graph.parents("jaffle:customer_segments") == {"jaffle:customers"}
    assert jaffle.node("jaffle:customers").language == "sql"
    assert jaffle.node("jaffle:raw_customers").language == "none"


def test_sources_with_and_without_column_types(jaffle: Loaded) -> None:
    assert jaffle.node("jaffle:source:shop.orders").columns == {
        "id": "integer",
        "user_id": "integer",
        "order_date": "date",
        "status": "varchar",
    }
    assert jaffle.node("jaffle:source:shop.payments").columns == {}
    assert jaffle.node("jaffle:source:shop.orders").meta["loader"] == "app_replica"


def test_a_source_that_reads_files_reads_no_relation(jaffle: Loaded) -> None:
    """dbt-duckdb's external_location renders read_csv_auto(...) as the relation name."""
    refunds = jaffle.node("jaffle:source:files.refunds")
    assert refunds.reads == []
    assert "read_csv_auto('data/refunds.csv'" in str(refunds.meta["external_location"])
    assert "jaffle:stg_refunds" in jaffle.graph.children(refunds.id)
    assert not [c for c in jaffle.checks if c.node == refunds.id]


def test_seed_columns_come_from_the_csv_typed_by_column_types(jaffle: Loaded) -> None:
    assert jaffle.node("jaffle:raw_customers").columns == {
        "id": "integer",
        "first_name": "varchar",
        "last_name": "varchar",
    }
    assert jaffle.node("jaffle:payment_methods").columns == {"payment_method": "", "is_card": ""}


def test_tests_hang_off_what_they_test_and_the_exposure_off_the_marts(jaffle: Loaded) -> None:
    g = jaffle.graph
    assert g.parents("jaffle:unique_orders_order_id") == {"jaffle:orders"}
    assert g.parents("jaffle:source_unique_shop_orders_id") == {"jaffle:source:shop.orders"}
    assert g.parents("jaffle:relationships_orders_customer_id__customer_id__ref_customers_") == {
        "jaffle:orders",
        "jaffle:customers",
    }
    assert g.parents("jaffle:exposure:weekly_kpis") == {"jaffle:customers", "jaffle:orders"}
    assert g.parents("jaffle:customers_snapshot") == {"jaffle:stg_customers"}
    assert g.parents("jaffle:stg_customers") == {"jaffle:raw_customers"}
    # from a seed to the dashboard
    assert "jaffle:exposure:weekly_kpis" in g.descendants("jaffle:raw_customers")
    rec = jaffle.records["jaffle:exposure:weekly_kpis"]
    assert rec["label"] == "Weekly KPIs"
    assert rec["url"] == "https://bi.example.com/dashboards/weekly-kpis"
    assert rec["owner"] == "Growth team"
    assert jaffle.records["jaffle:customers"]["owner"] == "growth"  # config(meta={'owner': ...})


def test_listing_is_in_dependency_order(jaffle: Loaded) -> None:
    order = list(jaffle.records)
    for nid, rec in jaffle.records.items():
        for up in rec["upstream"]:
            assert order.index(up) < order.index(nid), f"{up} listed after {nid}"


def test_doctor_on_jaffle(jaffle: Loaded) -> None:
    assert not [c for c in jaffle.checks if c.severity == "error"]
    # the loader's raw tables have no writer in the workspace
    assert sorted(c.node for c in jaffle.codes("SPL102")) == [
        "jaffle:source:shop.orders",
        "jaffle:source:shop.payments",
    ]
    spl301 = {c.node: c for c in jaffle.codes("SPL301")}
    # a source with no columns, and a seed with untyped columns; the seed whose columns are
    # typed with +column_types is not reported
    assert set(spl301) == {"jaffle:source:shop.payments", "jaffle:payment_methods"}
    assert "payment_method, is_card" in spl301["jaffle:payment_methods"].message
    assert "column_types" in spl301["jaffle:payment_methods"].fix
    assert "source's YAML" in spl301["jaffle:source:shop.payments"].fix
