"""Metric declarations -> validated specs -> SQL (golden), and the declarations refused."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from splice.config.workspace import MetricSection, parse_config
from splice.errors import ConfigError
from splice.graph.model import Graph, Node, Relation
from splice.watch.metrics import ColumnTypes, declared_metric, default_monitors, parse_value

GOLDEN = Path(__file__).parent / "golden"


class _NoWarehouse(ColumnTypes):
    def __init__(self) -> None:
        super().__init__(ws=None)
        self._warehouse = {}


def _graph() -> Graph:
    g = Graph()
    g.add_node(
        Node(
            id="pricing:marts.agg_gmv_daily",
            project="pricing",
            name="marts.agg_gmv_daily",
            kind="model",
            tool="sqlmesh",
            writes=Relation("warehouse", "marts", "agg_gmv_daily"),
            columns={
                "booking_date": "DATE",
                "currency": "TEXT",
                "bookings": "BIGINT",
                "gmv_usd": "DECIMAL(18, 4)",
                "gmv_key": "TEXT",
            },
            time_column="booking_date",
        )
    )
    g.add_node(
        Node(
            id="pricing:fx.daily_rates",
            project="pricing",
            name="fx.daily_rates",
            kind="model",
            tool="sqlmesh",
            writes=Relation("warehouse", "fx", "daily_rates"),
            columns={
                "rate_date": "DATE",
                "currency": "TEXT",
                "rate_to_usd": "DOUBLE",
                "as_of": "DATE",
                "rate_key": "TEXT",
            },
            time_column="rate_date",
        )
    )
    for name, audit, args in (
        (
            "not_null",
            "not_null",
            {"columns": "(rate_date, currency, rate_to_usd, as_of, rate_key)"},
        ),
        ("unique_values", "unique_values", {"columns": "(rate_key)"}),
        ("ucc", "unique_combination_of_columns", {"columns": "(rate_date, currency)"}),
    ):
        g.add_node(
            Node(
                id=f"pricing:audit:fx.daily_rates.{name}",
                project="pricing",
                name=name,
                kind="audit",
                tool="sqlmesh",
                meta={"audit": audit, "model": "pricing:fx.daily_rates", "args": args},
            )
        )
    g.add_node(
        Node(
            id="pricing:dash",
            project="pricing",
            name="dash",
            kind="dashboard",
            tool="declared",
        )
    )
    return g


def _metric(**kw: object) -> MetricSection:
    base: dict[str, object] = {
        "name": "gmv_usd",
        "node": "pricing:marts.agg_gmv_daily",
        "time": "booking_date",
        "value": "sum(gmv_usd)",
        "dimensions": ["currency"],
    }
    base.update(kw)
    return MetricSection.model_validate(base)


def _spec(m: MetricSection, dialect: str = "duckdb"):  # type: ignore[no-untyped-def]
    return declared_metric(
        0, m, _graph(), _NoWarehouse(), dialect=dialect, sensitivity="medium", calendar="ECB"
    )


# -- golden SQL ------------------------------------------------------------------------------
def test_declared_metric_sql_golden() -> None:
    spec = _spec(_metric(owner="finance", domain="revenue"))
    assert (
        spec.sql("duckdb", start=date(2026, 9, 21), pretty=True)
        == (GOLDEN / "gmv_usd.duckdb.sql").read_text().strip()
    )
    assert spec.owner == "finance" and spec.domain == "revenue"


def test_first_watch_measures_every_interval_in_one_query() -> None:
    sql = _spec(_metric()).sql("duckdb")
    assert "WHERE" not in sql and sql.count("SELECT") == 1


@pytest.mark.parametrize(
    ("dialect", "needle"),
    [
        ("snowflake", "DATE_TRUNC('WEEK', CAST(\"booking_date\" AS DATE))"),
        ("bigquery", "DATE_TRUNC(CAST(`booking_date` AS DATE), WEEK)"),
        ("postgres", "DATE_TRUNC('WEEK', CAST(\"booking_date\" AS DATE))"),
    ],
)
def test_metric_sql_is_transpiled_to_the_dialect(dialect: str, needle: str) -> None:
    spec = _spec(_metric(grain="week"), dialect)
    assert needle in spec.sql(dialect, start=date(2026, 9, 21))


def test_default_monitors_sql_golden() -> None:
    specs = default_monitors(
        _graph(), _NoWarehouse(), dialect="duckdb", sensitivity="medium", calendar="ECB"
    )
    by_name = {s.name: s for s in specs}
    assert set(by_name) == {
        "pricing:fx.daily_rates/rows",
        "pricing:fx.daily_rates/by_currency",
        "pricing:marts.agg_gmv_daily/rows",  # no audits: volume and null rates only
    }
    rates = by_name["pricing:fx.daily_rates/by_currency"]
    assert [m.name for m in rates.measures] == [
        "pricing:fx.daily_rates/avg(rate_to_usd)",
        "pricing:fx.daily_rates/lag_days(as_of)",
    ]
    rows = by_name["pricing:fx.daily_rates/rows"]
    assert [m.kind for m in rows.measures] == [
        "volume",
        "null_rate",
        "null_rate",
        "null_rate",
        "null_rate",
        "distinct",
        "duplicates",
        "duplicates",
    ]
    text = "\n\n".join(
        f"-- {s.name}\n{s.sql('duckdb', start=date(2026, 9, 21), pretty=True)}" for s in specs
    )
    assert text == (GOLDEN / "default_monitors.duckdb.sql").read_text().strip()


def test_a_monitor_a_declared_metric_covers_is_left_out() -> None:
    """The rates per currency, declared as a metric (as the demo's fx_rate is): the default
    monitor's avg(rate_to_usd) per currency would find every frozen rate a second time."""
    from splice.watch.coverage import uncovered

    monitors = default_monitors(
        _graph(), _NoWarehouse(), dialect="duckdb", sensitivity="medium", calendar="ECB"
    )
    fx_rate = _spec(
        _metric(
            name="fx_rate",
            node="pricing:fx.daily_rates",
            time="rate_date",
            value="AVG(Rate_To_USD)",
        )  # fmt: skip
    )
    kept = {m.name for s in uncovered(monitors, [fx_rate], "duckdb") for m in s.measures}
    every = {m.name for s in monitors for m in s.measures}
    assert every - kept == {"pricing:fx.daily_rates/avg(rate_to_usd)"}
    assert "pricing:fx.daily_rates/lag_days(as_of)" in kept  # not what fx_rate measures
    # another aggregate, other dimensions or another grain cover nothing
    for other in (
        _metric(name="m", node="pricing:fx.daily_rates", time="rate_date", value="max(rate_to_usd)"),
        _metric(name="m", node="pricing:fx.daily_rates", time="rate_date", value="avg(rate_to_usd)",
                dimensions=[]),
        _metric(name="m", node="pricing:fx.daily_rates", time="rate_date", value="avg(rate_to_usd)",
                grain="week"),
    ):  # fmt: skip
        assert uncovered(monitors, [_spec(other)], "duckdb") == monitors


def test_metrics_and_watch_sections_parse() -> None:
    cfg = parse_config(
        '[watch]\nsensitivity = "low"\ncalendar = "none"\n'
        '[[metrics]]\nname = "gmv_usd"\nnode = "pricing:marts.agg_gmv_daily"\n'
        'time = "booking_date"\nvalue = "sum(gmv_usd)"\ndimensions = ["currency"]\n'
        'grain = "day"\nowner = "finance"\ndomain = "revenue"\n'
    )
    assert cfg.metrics[0].dimensions == ["currency"] and cfg.watch.sensitivity == "low"
    with pytest.raises(ConfigError, match=r"unknown key 'metrics\[0\].vaule'"):
        parse_config(
            '[[metrics]]\nname = "x"\nnode = "a:b"\ntime = "t"\nvalue = "sum(x)"\nvaule = 1\n'
        )
    with pytest.raises(ConfigError, match="used twice"):
        parse_config(
            '[[metrics]]\nname = "x"\nnode = "a:b"\ntime = "t"\nvalue = "sum(x)"\n'
            '[[metrics]]\nname = "x"\nnode = "a:b"\ntime = "t"\nvalue = "sum(x)"\n'
        )


# -- refused declarations ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message", "fix"),
    [
        (
            {"node": "pricing:marts.agg_gmv"},
            r"metric 'gmv_usd' \(metrics\[0\]\): node 'pricing:marts.agg_gmv' does not exist "
            r"\(did you mean 'pricing:marts.agg_gmv_daily'",
            "set metrics[0].node",
        ),
        (
            {"node": "pricing:dash"},
            "has no warehouse relation",
            "point metrics[0].node at a model",
        ),
        (
            {"value": "sum(gmv)"},
            r"value column 'gmv' is not a column of pricing:marts.agg_gmv_daily",
            "correct metrics[0].value column",
        ),
        (
            {"dimensions": ["country"]},
            "dimensions 'country' is not a column",
            "correct metrics[0].dimensions",
        ),
        (
            {"time": "currency"},
            "time column 'currency' is of type TEXT, not a date or timestamp",
            "set metrics[0].time to a DATE or TIMESTAMP column",
        ),
        ({"time": "booked_at"}, "time 'booked_at' is not a column", "correct metrics[0].time"),
        ({"value": "gmv_usd"}, "is not an aggregate", "write metrics[0].value as one aggregate"),
        ({"value": "sum(gmv_usd) + bookings"}, "outside any aggregate", "one aggregate"),
        ({"value": "sum(sum(gmv_usd))"}, "nests one aggregate", "one aggregate"),
        ({"value": "sum(gmv_usd) over ()"}, "window function", "one aggregate"),
        ({"value": "sum(gmv_usd) as g"}, "has an alias", "one aggregate"),
        ({"value": "sum(gmv_usd), count(*)"}, "is not one SQL expression", "one aggregate"),
        ({"value": "1; drop table x"}, "statement", "one aggregate"),
        ({"value": "(select sum(gmv_usd) from t)"}, "statement", "one aggregate"),
        ({"value": "sum(gmv_usd) - (select 1)"}, "subquery", "one aggregate"),
        ({"value": "sum(t.gmv_usd)"}, "is qualified", "one aggregate"),
        ({"detectors": ["spikes"]}, "unknown detector", "stopped_moving"),
    ],
)
def test_bad_declarations_are_refused(change: dict[str, object], message: str, fix: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        _spec(_metric(**change))
    assert "metric 'gmv_usd'" in info.value.message
    assert info.value.fix and fix in info.value.fix


def test_parse_value_accepts_ratios_counts_and_filters() -> None:
    for text in ("sum(a) / sum(b)", "count(*)", "count(distinct a)", "sum(a) filter (where b > 0)"):
        assert parse_value(text) is not None


def test_a_workspace_with_nothing_to_watch_does_not_open_the_warehouse(tmp_path: Path) -> None:
    from splice.watch.service import watch
    from splice.workspace.core import Workspace

    (tmp_path / "splice.toml").write_text('[warehouse]\npath = "absent.duckdb"\n')
    with Workspace.open(tmp_path) as ws:
        ws._graph = Graph()
        result = watch(ws)
    assert result.metrics == [] and result.points == 0 and result.anomalies == []
    assert not (tmp_path / "absent.duckdb").exists()
