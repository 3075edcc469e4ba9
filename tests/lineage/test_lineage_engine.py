"""The engine beyond the golden fixtures: subtypes, inputs, robustness, cache keys, the pool."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import sqlglot
import yaml

from splice.graph.model import Relation
from splice.lineage import (
    ColumnRef,
    LineageRequest,
    ModelLineage,
    analyse_many,
    analyse_model,
    lineage_key,
    merge_refs,
)

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = yaml.safe_load((FIXTURES / "_schema.yaml").read_text())
ORDERS = Relation("warehouse", "raw", "orders")


def analyse(sql: str, **kw: object) -> ModelLineage:
    return analyse_model(sql, dialect="duckdb", schema=SCHEMA, default_catalog="warehouse", **kw)  # type: ignore[arg-type]


def subtypes(ml: ModelLineage, column: str) -> dict[str, tuple[str, ...]]:
    return {f"{r.column}:{r.kind}": r.subtypes for r in ml.columns[column].sources}


def test_direct_subtypes_identity_transformation_aggregation() -> None:
    ml = analyse(
        "SELECT customer_id, amount * 2 AS doubled, SUM(amount) AS total, MAX(amount) + 1 AS top "
        "FROM raw.orders GROUP BY customer_id"
    )
    assert subtypes(ml, "customer_id") == {"customer_id:direct": ("IDENTITY",)}
    assert subtypes(ml, "doubled") == {"amount:direct": ("TRANSFORMATION",)}
    assert subtypes(ml, "total") == {"amount:direct": ("AGGREGATION",)}
    assert subtypes(ml, "top") == {"amount:direct": ("AGGREGATION",)}
    assert [(r.column, r.subtypes) for r in ml.query_indirect] == [("customer_id", ("GROUP_BY",))]


def test_subtypes_compose_through_ctes() -> None:
    # identity of an aggregate is an aggregate; a transformation of an identity is a transformation
    ml = analyse(
        "WITH a AS (SELECT customer_id, SUM(amount) AS s FROM raw.orders GROUP BY 1), "
        "b AS (SELECT customer_id, s FROM a) SELECT s, customer_id + 0 AS c FROM b"
    )
    assert subtypes(ml, "s") == {"amount:direct": ("AGGREGATION",)}
    assert subtypes(ml, "c") == {"customer_id:direct": ("TRANSFORMATION",)}


def test_indirect_subtypes() -> None:
    ml = analyse(
        "SELECT o.order_id, CASE WHEN o.status = 'x' THEN 1 END AS flag, "
        "ROW_NUMBER() OVER (PARTITION BY o.customer_id ORDER BY o.ordered_at) AS rn "
        "FROM raw.orders o JOIN raw.customers c ON c.customer_id = o.customer_id "
        "WHERE c.country = 'DE' ORDER BY o.amount LIMIT 5"
    )
    assert subtypes(ml, "flag") == {"status:indirect": ("CONDITIONAL",)}
    assert subtypes(ml, "rn") == {
        "customer_id:indirect": ("WINDOW",),
        "ordered_at:indirect": ("WINDOW",),
    }
    q = {(r.relation.name, r.column): r.subtypes for r in ml.query_indirect}
    assert q == {
        ("customers", "country"): ("FILTER",),
        ("customers", "customer_id"): ("JOIN",),
        ("orders", "customer_id"): ("JOIN",),
        ("orders", "amount"): ("SORT",),
    }


def test_a_cte_column_used_in_a_filter_becomes_indirect_with_its_own_subtypes() -> None:
    ml = analyse(
        "WITH t AS (SELECT order_id, CASE WHEN status = 'paid' THEN amount END AS paid FROM raw.orders) "
        "SELECT order_id FROM t WHERE paid > 0"
    )
    q = {r.column: r.subtypes for r in ml.query_indirect}
    assert q == {"amount": ("FILTER",), "status": ("CONDITIONAL", "FILTER")}


def test_masking_functions_mark_the_ref() -> None:
    ml = analyse("SELECT MD5(email) AS h, name FROM raw.customers")
    (ref,) = ml.columns["h"].sources
    assert ref.masking and ref.subtypes == ("TRANSFORMATION",)
    assert not ml.columns["name"].sources[0].masking


def test_python_model_empty_sql_and_expressions() -> None:
    assert analyse_model(None).opaque_reason.startswith("no SQL")  # type: ignore[union-attr]
    assert analyse_model("   \n").is_opaque
    # SQLMesh hands over rendered SQL as a sqlglot expression
    expr = sqlglot.parse_one("SELECT amount FROM warehouse.raw.orders", read="duckdb")
    ml = analyse_model(expr, schema=SCHEMA)
    assert [r.text for r in ml.columns["amount"].sources] == ["warehouse.raw.orders.amount:direct"]
    assert expr.sql() == "SELECT amount FROM warehouse.raw.orders"  # the caller's tree is untouched


def test_output_reads_and_warnings() -> None:
    ml = analyse(
        "SELECT o.amount, m.x FROM raw.orders o JOIN raw.mystery m ON m.id = o.order_id",
        output=Relation("warehouse", "marts", "m"),
    )
    assert ml.output == Relation("warehouse", "marts", "m")
    assert [r.key for r in ml.reads] == ["warehouse.raw.mystery", "warehouse.raw.orders"]
    assert "warehouse.raw.mystery has no known columns" in ml.warnings


def test_schema_shapes_two_level_mixed_case_and_empty_tables() -> None:
    two_level = {"RAW": {"Orders": {"Amount": "", "ID": ""}}}
    ml = analyse_model("SELECT * FROM raw.orders", schema=two_level, default_catalog="warehouse")
    assert list(ml.columns) == ["amount", "id"]
    assert ml.columns["id"].sources[0].relation == ORDERS
    # a table listed with no columns has *unknown* columns, not none
    ml = analyse_model("SELECT * FROM raw.t", schema={"w": {"raw": {"t": {}}}}, default_catalog="w")
    assert ml.opaque_reason == "SELECT * over w.raw.t whose columns are unknown: add column types"


def test_catalog_comes_from_the_schema_when_no_default() -> None:
    ml = analyse_model("SELECT amount FROM raw.orders", schema=SCHEMA)
    assert ml.columns["amount"].sources[0].relation == ORDERS


def test_one_part_names_get_the_default_schema() -> None:
    ml = analyse_model(
        "SELECT amount FROM orders",
        schema=SCHEMA,
        default_catalog="warehouse",
        default_schema="raw",
    )
    assert ml.columns["amount"].sources[0].relation == ORDERS


def test_several_statements_use_the_last_query() -> None:
    ml = analyse("SET threads = 2; SELECT amount FROM raw.orders")
    assert list(ml.columns) == ["amount"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT",
        "WITH x AS (SELECT 1) SELECT",
        "SELECT a FROM (SELECT * FROM raw.mystery) t JOIN (SELECT * FROM raw.mystery) u USING (a)",
        "SELECT 1 UNION ALL SELECT 1, 2",
        "SELECT x.* FROM raw.orders",
        "SELECT * EXCLUDE (amount) FROM raw.orders",
        "SELECT COLUMNS('a.*') FROM raw.orders",
        "PIVOT raw.orders ON currency USING SUM(amount)",
        "SELECT * FROM raw.orders PIVOT (SUM(amount) FOR currency IN ('EUR', 'USD'))",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        "SELECT $1, ?",
        "SELECT * FROM 'data/*.parquet'",
        "SELECT " + "(" * 400 + "1" + ")" * 400,
    ],
)
def test_never_raises(sql: str) -> None:
    ml = analyse(sql)
    json.dumps(ml.to_dict())


def test_never_raises_on_mangled_fixtures() -> None:
    rng = random.Random(7)
    texts = [p.read_text() for p in sorted(FIXTURES.glob("*.sql"))]
    for _ in range(150):
        text = rng.choice(texts)
        a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        mangled = text[:a] + text[b:] if rng.random() < 0.5 else text[:a]
        ml = analyse(mangled)
        assert isinstance(ml, ModelLineage)


def test_exclude_and_replace_expand_with_a_known_schema() -> None:
    ml = analyse("SELECT * EXCLUDE (payload, tags) REPLACE (amount * 2 AS amount) FROM raw.orders")
    assert "payload" not in ml.columns and "amount" in ml.columns
    assert ml.columns["amount"].sources[0].subtypes == ("TRANSFORMATION",)


def test_json_round_trip_of_every_fixture() -> None:
    for path in sorted(FIXTURES.glob("*.sql")):
        ml = analyse(path.read_text())
        data = json.loads(json.dumps(ml.to_dict()))
        assert ModelLineage.from_dict(data) == ml, path.name


def test_sources_of_merges_query_level_edges() -> None:
    ml = analyse("SELECT amount FROM raw.orders WHERE status = 'paid'")
    assert [r.text for r in ml.sources_of("amount")] == [
        "warehouse.raw.orders.amount:direct",
        "warehouse.raw.orders.status:indirect",
    ]
    assert [r.text for r in ml.sources_of("amount", query_level=False)] == [
        "warehouse.raw.orders.amount:direct"
    ]


def test_merge_refs_keeps_one_ref_per_kind() -> None:
    a = ColumnRef(ORDERS, "amount", "direct", ("IDENTITY",))
    b = ColumnRef(ORDERS, "amount", "direct", ("AGGREGATION",), True)
    c = ColumnRef(ORDERS, "amount", "indirect", ("FILTER",))
    merged = merge_refs([a, c], [b])
    assert merged == [
        ColumnRef(ORDERS, "amount", "direct", ("AGGREGATION", "IDENTITY"), True),
        ColumnRef(ORDERS, "amount", "indirect", ("FILTER",)),
    ]


# -- cache keys ------------------------------------------------------------------------------
def test_lineage_key_changes_with_every_input_that_matters() -> None:
    sql = "SELECT amount FROM raw.orders"
    base = lineage_key(sql, "duckdb", SCHEMA, default_catalog="warehouse")
    assert base == lineage_key(sql + "\n", "duckdb", SCHEMA, default_catalog="warehouse")
    other_schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    other_schema["warehouse"]["raw"]["orders"]["amount"] = "DECIMAL(18,2)"
    for key in (
        lineage_key(sql + " WHERE 1", "duckdb", SCHEMA, default_catalog="warehouse"),
        lineage_key(sql, "snowflake", SCHEMA, default_catalog="warehouse"),
        lineage_key(sql, "duckdb", other_schema, default_catalog="warehouse"),
        lineage_key(sql, "duckdb", SCHEMA, default_catalog="other"),
        lineage_key(sql, "duckdb", SCHEMA, default_catalog="warehouse", output=ORDERS),
    ):
        assert key != base


def test_request_key_matches_lineage_key() -> None:
    req = LineageRequest("SELECT 1 AS x", schema=SCHEMA, default_catalog="warehouse")
    assert req.key() == lineage_key("SELECT 1 AS x", "duckdb", SCHEMA, default_catalog="warehouse")


# -- many ------------------------------------------------------------------------------------
def test_analyse_many_pool_gives_the_serial_results_in_order() -> None:
    sqls = [p.read_text() for p in sorted(FIXTURES.glob("*.sql"))]
    reqs = [LineageRequest(s, schema=SCHEMA, default_catalog="warehouse") for s in sqls]
    serial = analyse_many(reqs, workers=1)
    stats: dict[str, object] = {}
    pooled = analyse_many(reqs, workers=2, min_parallel=1, stats=stats)
    assert [m.to_dict() for m in pooled] == [m.to_dict() for m in serial]
    assert stats["mode"] in ("pool", "serial") and stats["models"] == len(reqs)


def test_analyse_many_accepts_mappings_and_pairs() -> None:
    out = analyse_many(
        [
            {"sql": "SELECT 1 AS a"},
            ("SELECT amount FROM raw.orders", {"schema": SCHEMA, "default_catalog": "warehouse"}),
            "SELECT 2 AS b",
            None,
        ]
    )
    assert [list(m.columns) for m in out] == [["a"], ["amount"], ["b"], []]
    assert out[3].is_opaque


def test_a_schema_without_catalogs_matches_three_part_names() -> None:
    ml = analyse_model("SELECT * FROM warehouse.raw.t", schema={"raw": {"t": {"a": ""}}})
    assert ml.opaque_reason is None and not ml.warnings
    assert ml.columns["a"].sources[0].relation == Relation("warehouse", "raw", "t")
