"""Join keys: which column of which relation a query matches to which (what join-coverage and
domain monitors are derived from)."""

from __future__ import annotations

import yaml
from tests.lineage.test_lineage_engine import FIXTURES

from splice.lineage import JoinKey, ModelLineage, analyse_model

SCHEMA = yaml.safe_load((FIXTURES / "_schema.yaml").read_text())


def keys(sql: str, dialect: str = "duckdb") -> list[str]:
    ml = analyse_model(sql, dialect=dialect, schema=SCHEMA, default_catalog="warehouse")
    assert not ml.is_opaque, ml.opaque_reason
    return [j.text for j in ml.joins]


def test_a_left_join_through_a_cte_names_the_base_columns_and_the_side_that_looks() -> None:
    got = keys(
        "WITH r AS (SELECT currency, rate_date, rate_to_usd FROM raw.fx_rates) "
        "SELECT o.order_id, o.amount * r.rate_to_usd AS usd FROM raw.orders o "
        "LEFT JOIN r ON o.currency = r.currency AND CAST(o.ordered_at AS DATE) >= r.rate_date"
    )
    assert got == ["warehouse.raw.orders.currency = warehouse.raw.fx_rates.currency (left)"]


def test_a_right_join_is_turned_around_and_an_inner_join_keeps_the_from_side() -> None:
    right = keys(
        "SELECT c.name, o.amount FROM raw.orders o "
        "RIGHT JOIN raw.customers c ON c.customer_id = o.customer_id"
    )
    assert right == [
        "warehouse.raw.customers.customer_id = warehouse.raw.orders.customer_id (left)"
    ]
    inner = keys(
        "SELECT o.amount, c.country FROM raw.orders o JOIN raw.customers c USING (customer_id)"
    )
    assert inner == [
        "warehouse.raw.orders.customer_id = warehouse.raw.customers.customer_id (inner)"
    ]


def test_a_function_of_a_column_or_a_filter_names_no_key() -> None:
    assert (
        keys(
            "SELECT o.amount FROM raw.orders o JOIN raw.fx_rates r "
            "ON UPPER(o.currency) = r.currency AND o.status = 'paid'"
        )
        == []
    )
    # a column renamed by a CTE is still the same column; one transformed is not
    assert (
        keys(
            "WITH r AS (SELECT LOWER(currency) AS ccy FROM raw.fx_rates) "
            "SELECT o.amount FROM raw.orders o JOIN r ON o.currency = r.ccy"
        )
        == []
    )


def test_join_keys_survive_the_cache_and_a_dialect_rename() -> None:
    ml = analyse_model(
        "SELECT O.AMOUNT FROM RAW.ORDERS O JOIN RAW.CUSTOMERS C ON O.CUSTOMER_ID = C.CUSTOMER_ID",
        dialect="snowflake", default_catalog="WAREHOUSE", identity_dialect="duckdb",
        schema={"WAREHOUSE": {"RAW": {"ORDERS": {"AMOUNT": "", "CUSTOMER_ID": ""},
                                      "CUSTOMERS": {"CUSTOMER_ID": ""}}}},
    )  # fmt: skip
    assert [j.text for j in ml.joins] == [
        "warehouse.raw.orders.customer_id = warehouse.raw.customers.customer_id (inner)"
    ]
    back = ModelLineage.from_dict(ml.to_dict())
    assert back.joins == ml.joins and isinstance(back.joins[0], JoinKey)
