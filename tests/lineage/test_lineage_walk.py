"""Walking column lineage across models and across projects (SQLMesh -> dbt)."""

from __future__ import annotations

import pytest

from splice.errors import NodeNotFoundError
from splice.graph.model import Relation
from splice.lineage import LineageIndex, ModelLineage, analyse_model, downstream, upstream

W = "warehouse"
RAW_RATES = Relation(W, "raw", "fx_rates")
RAW_BOOKINGS = Relation(W, "raw", "bookings")
DAILY_RATES = Relation(W, "fx", "daily_rates")
BOOKINGS_USD = Relation(W, "marts", "fct_bookings_usd")
GMV = Relation(W, "marts", "agg_gmv_daily")
STG_GMV = Relation(W, "finance", "stg_gmv")
QTD = Relation(W, "finance", "fct_gmv_qtd")
ODD = Relation(W, "finance", "odd")

SCHEMA = {
    W: {
        "raw": {
            "fx_rates": {"currency": "", "rate_date": "", "rate_to_usd": "", "loaded_at": ""},
            "bookings": {
                "booking_id": "",
                "booked_at": "",
                "currency": "",
                "amount": "",
                "status": "",
            },
        },
        "fx": {"daily_rates": {"currency": "", "day": "", "rate_to_usd": ""}},
        "marts": {
            "fct_bookings_usd": {"booking_id": "", "day": "", "currency": "", "amount_usd": ""},
            "agg_gmv_daily": {"day": "", "gmv_usd": "", "n_bookings": ""},
        },
        "finance": {"stg_gmv": {"day": "", "gmv_usd": ""}},
    }
}


def ml(sql: str, out: Relation) -> ModelLineage:
    return analyse_model(sql, schema=SCHEMA, output=out, default_catalog=W)


@pytest.fixture(scope="module")
def models() -> dict[str, ModelLineage]:
    return {
        # SQLMesh project "pricing"
        "pricing:fx.daily_rates": ml(
            "SELECT currency, rate_date AS day, rate_to_usd FROM raw.fx_rates "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY currency, rate_date ORDER BY loaded_at DESC) = 1",
            DAILY_RATES,
        ),
        "pricing:marts.fct_bookings_usd": ml(
            "SELECT b.booking_id, CAST(b.booked_at AS DATE) AS day, b.currency, "
            "b.amount * r.rate_to_usd AS amount_usd FROM raw.bookings b "
            "JOIN fx.daily_rates r ON r.currency = b.currency AND r.day = CAST(b.booked_at AS DATE) "
            "WHERE b.status = 'confirmed'",
            BOOKINGS_USD,
        ),
        "pricing:marts.agg_gmv_daily": ml(
            "SELECT day, SUM(amount_usd) AS gmv_usd, COUNT(*) AS n_bookings "
            "FROM marts.fct_bookings_usd GROUP BY day",
            GMV,
        ),
        # dbt project "finance", reading SQLMesh's view through a source
        "finance:stg_gmv": ml("SELECT day, gmv_usd FROM warehouse.marts.agg_gmv_daily", STG_GMV),
        "finance:fct_gmv_qtd": ml(
            "SELECT day, SUM(gmv_usd) OVER (ORDER BY day) AS gmv_qtd FROM finance.stg_gmv", QTD
        ),
        "finance:odd": ml(
            "SELECT * FROM finance.unknown_thing JOIN finance.stg_gmv USING (day)", ODD
        ),
    }


@pytest.fixture(scope="module")
def index(models: dict[str, ModelLineage]) -> LineageIndex:
    return LineageIndex(models)


def hops(found: list) -> list[tuple]:
    return [(h.node_id, h.column, h.kind, h.depth) for h in found]


def test_upstream_crosses_projects_to_the_raw_tables(index: LineageIndex) -> None:
    got = hops(index.upstream("finance:fct_gmv_qtd", "gmv_qtd"))
    assert got[:2] == [
        ("finance:stg_gmv", "day", "indirect", 1),  # the window's ORDER BY
        ("finance:stg_gmv", "gmv_usd", "direct", 1),
    ]
    assert ("pricing:marts.agg_gmv_daily", "gmv_usd", "direct", 2) in got
    assert ("pricing:marts.fct_bookings_usd", "amount_usd", "direct", 3) in got
    assert ("pricing:fx.daily_rates", "rate_to_usd", "direct", 4) in got
    # raw tables no node writes are external hops
    ext = {
        (h.relation.key, h.column, h.kind)
        for h in index.upstream("finance:fct_gmv_qtd", "gmv_qtd")
        if h.node_id is None
    }
    assert ("warehouse.raw.bookings", "amount", "direct") in ext
    assert ("warehouse.raw.fx_rates", "rate_to_usd", "direct") in ext
    assert ("warehouse.raw.bookings", "status", "indirect") in ext  # the WHERE of fct_bookings_usd
    assert ("warehouse.raw.fx_rates", "loaded_at", "indirect") in ext  # the QUALIFY of daily_rates


def test_a_hop_is_direct_only_if_every_step_is(index: LineageIndex) -> None:
    found = {(h.node_id, h.column): h for h in index.upstream("finance:stg_gmv", "gmv_usd")}
    # day of fct_bookings_usd only groups agg_gmv_daily: indirect from there on
    assert found[("pricing:marts.fct_bookings_usd", "day")].kind == "indirect"
    assert found[("pricing:marts.fct_bookings_usd", "amount_usd")].kind == "direct"
    assert found[("pricing:marts.agg_gmv_daily", "gmv_usd")].via == ("finance:stg_gmv", "gmv_usd")


def test_depth_limit_and_direct_only(index: LineageIndex) -> None:
    one = index.upstream("finance:fct_gmv_qtd", "gmv_qtd", depth=1)
    assert {h.depth for h in one} == {1}
    direct = index.upstream("finance:fct_gmv_qtd", "gmv_qtd", include_indirect=False)
    assert direct and all(h.kind == "direct" for h in direct)
    assert ("pricing:fx.daily_rates", "rate_to_usd") in {(h.node_id, h.column) for h in direct}
    assert not any(h.column == "status" for h in direct)


def test_downstream_from_a_raw_column_reaches_the_dbt_mart(index: LineageIndex) -> None:
    got = hops(index.downstream(None, "rate_to_usd", relation=RAW_RATES))
    assert ("pricing:fx.daily_rates", "rate_to_usd", "direct", 1) in got
    assert ("pricing:marts.fct_bookings_usd", "amount_usd", "direct", 2) in got
    assert ("finance:fct_gmv_qtd", "gmv_qtd", "direct", 5) in got


def test_downstream_filters_and_joins_touch_every_column(index: LineageIndex) -> None:
    # bookings.status filters fct_bookings_usd: every one of its columns is (indirectly) affected
    got = {
        (h.node_id, h.column): h.kind
        for h in index.downstream(None, "status", relation=RAW_BOOKINGS)
    }
    for col in ("booking_id", "day", "currency", "amount_usd"):
        assert got[("pricing:marts.fct_bookings_usd", col)] == "indirect"
    assert got[("finance:fct_gmv_qtd", "gmv_qtd")] == "indirect"


def test_opaque_models_show_as_star_hops(index: LineageIndex) -> None:
    down = index.downstream("finance:stg_gmv", "gmv_usd")
    assert ("finance:odd", "*", "indirect") in {(h.node_id, h.column, h.kind) for h in down}
    up = index.upstream("finance:odd", "*")
    assert {(h.node_id, h.relation.key, h.column) for h in up} == {
        (None, "warehouse.finance.unknown_thing", "*"),
        ("finance:stg_gmv", "warehouse.finance.stg_gmv", "*"),
    }


def test_writers_map_from_the_graph_wins(models: dict[str, ModelLineage]) -> None:
    # a binding says another node writes agg_gmv_daily (say, the dbt source node's writer)
    writers = {m.output.key: nid for nid, m in models.items() if m.output}
    writers[GMV.key] = "pricing:agg_gmv_v2"
    got = upstream(models, writers, "finance:stg_gmv", "gmv_usd", depth=1)
    assert [(h.node_id, h.column) for h in got] == [("pricing:agg_gmv_v2", "gmv_usd")]
    # and a pair (lineage, relation) works as the value too
    pairs = {nid: (m, m.output) for nid, m in models.items()}
    assert (
        downstream(pairs, None, "finance:stg_gmv", "gmv_usd", depth=1)[0].node_id
        == "finance:fct_gmv_qtd"
    )


def test_cycles_and_self_reads_end() -> None:
    a = Relation(W, "s", "a")
    b = Relation(W, "s", "b")
    sch = {W: {"s": {"a": {"x": ""}, "b": {"x": ""}}}}
    models = {
        # an incremental model reading its own table, and a cycle a <-> b
        "p:a": analyse_model(
            "SELECT x FROM s.b UNION ALL SELECT x FROM s.a", schema=sch, output=a, default_catalog=W
        ),
        "p:b": analyse_model("SELECT x FROM s.a", schema=sch, output=b, default_catalog=W),
    }
    idx = LineageIndex(models)
    # the self read is a hop to a's own earlier state, not dropped; the cycle ends at the start
    for walk in (idx.upstream("p:a", "x"), idx.downstream("p:a", "x")):
        assert [(h.node_id, h.column, h.kind, h.depth, h.self_ref) for h in walk] == [
            ("p:a", "x", "direct", 1, True),
            ("p:b", "x", "direct", 1, False),
        ]


def test_unknown_start_is_a_helpful_error(index: LineageIndex) -> None:
    with pytest.raises(NodeNotFoundError, match="did you mean finance:stg_gmv"):
        index.upstream("finance:stg_gm", "day")
    with pytest.raises(NodeNotFoundError, match="no column 'gmv'.*did you mean gmv_usd"):
        index.upstream("finance:stg_gmv", "gmv")


def test_hop_to_dict(index: LineageIndex) -> None:
    h = index.upstream("finance:stg_gmv", "gmv_usd", depth=1)[0]
    assert h.to_dict() == {
        "node_id": "pricing:marts.agg_gmv_daily",
        "relation": "warehouse.marts.agg_gmv_daily",
        "column": "gmv_usd",
        "kind": "direct",
        "depth": 1,
        "via": ["finance:stg_gmv", "gmv_usd"],
        "self_ref": False,
    }
    assert h.label == "pricing:marts.agg_gmv_daily.gmv_usd"
