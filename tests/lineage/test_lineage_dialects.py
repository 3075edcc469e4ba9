"""Each model is parsed in its own dialect; names in the result follow the workspace's."""

from __future__ import annotations

from splice.graph.model import Relation
from splice.lineage import LineageIndex, analyse_model, lineage_key

W = "warehouse"
SCHEMA = {W: {"raw": {"orders": {"order_id": "", "order_date": "", "amount": ""}}}}
SQL = "SELECT order_id, DATEADD(month, 1, order_date) AS renews_on FROM raw.orders"


def test_dateadd_in_snowflake_invents_no_month_column() -> None:
    sf = analyse_model(SQL, dialect="snowflake", schema=SCHEMA, default_catalog=W)
    assert [r.text for r in sf.columns["RENEWS_ON"].sources] == [
        "WAREHOUSE.RAW.ORDERS.ORDER_DATE:direct"
    ]
    assert not sf.opaque_columns and not sf.warnings
    # read as DuckDB, the same text names a column `month` the table does not have
    dd = analyse_model(SQL, dialect="duckdb", schema=SCHEMA, default_catalog=W)
    assert "warehouse.raw.orders.month:direct" in [r.text for r in dd.columns["renews_on"].sources]


def test_identity_dialect_names_relations_and_columns_like_the_workspace() -> None:
    sf = analyse_model(
        SQL,
        dialect="snowflake",
        identity_dialect="duckdb",
        schema=SCHEMA,
        default_catalog=W,
        output=Relation(W, "marts", "renewals"),
    )
    assert sf.dialect == "snowflake"  # it was parsed as Snowflake
    assert list(sf.columns) == ["order_id", "renews_on"]
    assert [r.text for r in sf.columns["renews_on"].sources] == [
        "warehouse.raw.orders.order_date:direct"
    ]
    assert sf.reads == [Relation(W, "raw", "orders")]


def test_a_duckdb_model_reads_a_snowflake_models_columns() -> None:
    # a SQLMesh model in Snowflake SQL, read by a dbt-duckdb model: the walk crosses by name
    renewals = Relation(W, "marts", "renewals")
    up = analyse_model(
        SQL,
        dialect="snowflake",
        identity_dialect="duckdb",
        schema=SCHEMA,
        default_catalog=W,
        output=renewals,
    )
    down = analyse_model(
        "SELECT renews_on FROM marts.renewals",
        schema={W: {"marts": {"renewals": {"order_id": "", "renews_on": ""}}}},
        default_catalog=W,
        output=Relation(W, "fin", "x"),
    )
    idx = LineageIndex({"billing:renewals": up, "fin:x": down})
    got = [(h.node_id, h.column, h.kind) for h in idx.upstream("fin:x", "renews_on")]
    assert got == [
        ("billing:renewals", "renews_on", "direct"),
        (None, "order_date", "direct"),
    ]


def test_the_key_covers_both_dialects() -> None:
    base = lineage_key(SQL, "snowflake", SCHEMA, default_catalog=W, identity_dialect="duckdb")
    assert base != lineage_key(SQL, "duckdb", SCHEMA, default_catalog=W, identity_dialect="duckdb")
    assert base != lineage_key(SQL, "snowflake", SCHEMA, default_catalog=W)
