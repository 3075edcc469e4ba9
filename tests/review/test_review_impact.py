"""The reach of changed columns: across projects, through an opaque model, to metrics and
dashboards (lineage from real SQL through the engine; a graph made by hand)."""

from __future__ import annotations

from sqlglot import exp

from splice.graph.model import Edge, Graph, Node, Relation
from splice.lineage import analyse_model
from splice.review.impact import OPAQUE, reach
from splice.watch.metrics import Measure, MetricSpec

S = {
    "w": {
        "raw": {"rates": {"ccy": "", "rate": "", "day": ""}},
        "fx": {"rates": {"ccy": "", "rate": "", "day": ""}},
        "marts": {"gmv": {"day": "", "ccy": "", "gmv_usd": "", "rate": ""}},
    }
}
RATES, GMV, QTD, ODD = (
    Relation("w", "fx", "rates"),
    Relation("w", "marts", "gmv"),
    Relation("w", "finance", "qtd"),
    Relation("w", "finance", "odd"),
)


def _graph() -> tuple[Graph, dict]:
    g = Graph()
    nodes = [
        Node("pricing:fx.rates", "pricing", "fx.rates", "model", "sqlmesh", writes=RATES),
        Node("pricing:marts.gmv", "pricing", "marts.gmv", "model", "sqlmesh", writes=GMV),
        Node("finance:qtd", "finance", "qtd", "model", "dbt", writes=QTD),
        Node("finance:odd", "finance", "odd", "model", "dbt", writes=ODD),
        Node(
            "finance:exposure:close",
            "finance",
            "exposure:close",
            "dashboard",
            "exposure",
            meta={"label": "Q3 close"},
        ),  # fmt: skip
        Node(
            "finance:exposure:other",
            "finance",
            "exposure:other",
            "dashboard",
            "exposure",
            meta={"label": "Other"},
        ),  # fmt: skip
    ]
    for n in nodes:
        g.add_node(n)
    for up, down in [
        ("pricing:fx.rates", "pricing:marts.gmv"),
        ("pricing:marts.gmv", "finance:qtd"),
        ("pricing:marts.gmv", "finance:odd"),
        ("finance:qtd", "finance:exposure:close"),
        ("pricing:fx.rates", "finance:exposure:other"),
    ]:
        g.add_edge(Edge(up, down, "tool"))
    lineages = {
        "pricing:fx.rates": analyse_model(
            "SELECT ccy, rate * 1.01 AS rate, day FROM w.raw.rates", schema=S, output=RATES
        ),
        "pricing:marts.gmv": analyse_model(
            "SELECT day, ccy, 100 * rate AS gmv_usd, rate FROM w.fx.rates", schema=S, output=GMV
        ),
        "finance:qtd": analyse_model(
            "SELECT day, SUM(gmv_usd) AS gmv_qtd, COUNT(*) AS n FROM w.marts.gmv GROUP BY day",
            schema=S,
            output=QTD,
        ),  # fmt: skip
        "finance:odd": analyse_model("SELECT * FROM w.marts.unknown", schema=S, output=ODD),
    }
    return g, lineages


def _metric(node: str, rel: Relation, value: str) -> MetricSpec:
    expr = exp.Sum(this=exp.column(value))
    return MetricSpec(
        "gmv", node, rel, "day", "DATE", [], "day", [Measure("gmv", f"sum({value})", "value", expr)]
    )


def test_a_changed_column_reaches_across_projects_with_its_path() -> None:
    g, ml = _graph()
    writers = {RATES.key: "pricing:fx.rates", GMV.key: "pricing:marts.gmv", QTD.key: "finance:qtd"}
    imp = reach(
        g, ml, writers, {"pricing:fx.rates": ["rate"]}, [_metric("finance:qtd", QTD, "gmv_qtd")]
    )
    got = {(r.node, r.column): r for r in imp.columns}
    assert got[("finance:qtd", "gmv_qtd")].path == [
        "pricing:fx.rates.rate",
        "pricing:marts.gmv.gmv_usd",
        "finance:qtd.gmv_qtd",
    ]
    assert got[("finance:qtd", "gmv_qtd")].kind == "direct"
    assert {r.origin for r in imp.columns} == {"pricing:fx.rates"}
    assert ("finance:qtd", "n") not in got  # a count of rows does not read the rate
    assert ("pricing:marts.gmv", "day") not in got
    assert [m["name"] for m in imp.metrics] == ["gmv"]
    assert {d["label"] for d in imp.dashboards} == {"Q3 close", "Other"}


def test_a_column_nobody_reads_reaches_nothing() -> None:
    g, ml = _graph()
    imp = reach(g, ml, {}, {"finance:qtd": ["n"]}, [_metric("finance:qtd", QTD, "gmv_qtd")])
    assert imp.columns == [] and imp.metrics == []
    assert [d["label"] for d in imp.dashboards] == ["Q3 close"]  # it reads the changed model


def test_an_opaque_start_reaches_every_column_downstream_node_by_node() -> None:
    g, ml = _graph()
    imp = reach(g, ml, {}, {"pricing:marts.gmv": [OPAQUE]})
    nodes = {r.node for r in imp.columns}
    assert nodes == {"finance:qtd", "finance:odd", "finance:exposure:close"} - {
        "finance:exposure:close"
    }
    assert all(r.kind == "indirect" for r in imp.columns)
