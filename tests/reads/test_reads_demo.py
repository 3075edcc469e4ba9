"""The reading functions (splice.api: quality and connectors groups, search and details) on
the demo's stale-rates story, and their CLI commands with --json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from splice import api
from splice.errors import InputError, NodeNotFoundError
from splice.workspace.core import Workspace

FROZEN = ("2026-09-28", "2026-09-29")


@pytest.fixture(scope="module")
def story_dir(stale_story: Any) -> Path:
    return Path(stale_story.build.workspace)


@pytest.fixture
def ws(story_dir: Path) -> Iterator[Workspace]:
    with Workspace.open(story_dir) as w:
        yield w


def _json_round_trip(data: Any) -> Any:
    return json.loads(json.dumps(data))  # plain data: no default= needed


# -- quality ----------------------------------------------------------------------------------
def test_fx_rate_history_shows_the_frozen_days_against_a_baseline_apart_from_them(ws):
    h = api.metric_history(ws, "fx_rate", series="EUR")
    assert _json_round_trip(h) == h
    assert h["node"] == "pricing:fx.daily_rates" and h["kind"] == "declared"
    assert h["series_total"] == 30 and [s["series"] for s in h["series"]] == ["currency=EUR"]
    pts = {p["interval"]: p for p in h["series"][0]["points"]}
    friday = pts["2026-09-25"]
    assert friday["anomalies"] == []
    for day in FROZEN:
        p = pts[day]
        # Friday's rate served again, flagged; the last good value is Friday's
        assert p["value"] == friday["value"] and p["anomalies"] == ["stopped_moving"]
        assert p["last_good"] == friday["value"] and p["last_good_interval"] == "2026-09-25"
        # the baseline comes from the weeks before, not from the frozen value
        assert p["baseline"] is not None and p["training_points"] >= 28
        assert abs(p["baseline"] - p["value"]) > 1e-3
        lo, hi = p["band"]
        assert lo < p["baseline"] < hi
    # the frozen days stay out of Wednesday's training window: its last good value is Friday's
    assert pts["2026-09-30"]["last_good_interval"] == "2026-09-25"
    assert pts["2026-09-30"]["anomalies"] == []
    assert [a["interval"] for a in h["series"][0]["anomalies"]] == list(FROZEN)
    assert all(a["incident"] == "INC-1" for a in h["series"][0]["anomalies"])
    # early points have too little history for a baseline
    assert h["series"][0]["points"][0]["baseline"] is None


def test_history_of_every_series_and_the_newest_points(ws):
    h = api.metric_history(ws, "fx_rate", last=3)
    assert len(h["series"]) == 30
    assert all([p["interval"] for p in s["points"]] == [*FROZEN, "2026-09-30"] for s in h["series"])
    flagged = [s for s in h["series"] if s["anomalies"]]
    assert len(flagged) >= 25 and h["anomalies"] == sum(len(s["anomalies"]) for s in flagged)
    monitor = api.metric_history(ws, "pricing:fx.daily_rates/row_count")
    assert monitor["kind"] == "volume" and monitor["series"][0]["series"] == "(all)"


def test_unknown_metric_or_series_names_the_closest(ws):
    with pytest.raises(NodeNotFoundError, match="fx_rate"):
        api.metric_history(ws, "fx_rat")
    with pytest.raises(NodeNotFoundError, match="name one of them"):
        api.metric_history(ws, "pricing:fx.daily_rates/rows")
    with pytest.raises(NodeNotFoundError, match="currency=EUR"):
        api.metric_history(ws, "fx_rate", series="currency=EUX")
    with pytest.raises(InputError):
        api.metric_history(ws, "fx_rate", last=0)


def test_metrics_list_declared_metrics_and_monitors_with_their_state(ws):
    found = {m["name"]: m for m in api.metrics(ws)}
    assert _json_round_trip(list(found.values())) == list(found.values())
    fx = found["fx_rate"]
    assert fx["kind"] == "declared" and fx["node"] == "pricing:fx.daily_rates"
    assert fx["series"] == 30 and fx["dimensions"] == ["currency"]
    assert fx["measured_through"] == "2026-09-30" and fx["last"]["interval"] == "2026-09-30"
    assert fx["open_anomalies"] == 58 and fx["last"]["series"] == 30
    assert found["gmv_usd"]["open_anomalies"] == 0 and "value" in found["gmv_usd"]["last"]
    rows = found["pricing:fx.daily_rates/row_count"]
    assert rows["kind"] == "volume" and not rows["declared"] and rows["last"]["value"] == 30
    assert found["pricing:fx.daily_rates/lag_days(as_of)"]["open_anomalies"] > 0
    declared = api.metrics(ws, monitors=False)
    assert [m["name"] for m in declared] == ["gmv_usd", "gmv_semantic", "fx_rate"]


def test_metrics_of_a_workspace_never_watched_are_listed_unmeasured(demo_workspace):
    with Workspace.open(demo_workspace) as w:
        found = api.metrics(w, monitors=False)
    assert {m["name"]: (m["series"], m["measured_through"], m["last"]) for m in found} == {
        "gmv_usd": (0, None, None),
        "gmv_semantic": (0, None, None),
        "fx_rate": (0, None, None),
    }


def test_anomalies_filter_by_status_metric_and_day(ws):
    every = api.anomalies(ws)
    assert every == _json_round_trip(every)
    # one finding counted once: the rate monitor a declared metric (fx_rate) covers is not
    # measured apart (it doubled the 58 frozen rates to 178 anomalies)
    assert len(every) == 120 and {a["status"] for a in every} == {"open"}
    assert not any(a["metric"].endswith("/avg(rate_to_usd)") for a in every)
    assert {a["incident"] for a in every} == {"INC-1"}
    assert every[0]["interval"] >= every[-1]["interval"]
    assert len(api.anomalies(ws, status="resolved")) == 0
    fx = api.anomalies(ws, metric="fx_rate", since="2026-09-29")
    assert len(fx) == 29 and {a["interval"] for a in fx} == {"2026-09-29"}
    assert {a["detector"] for a in fx} == {"stopped_moving"}
    node = api.anomalies(ws, metric="pricing:fx.daily_rates")
    assert len(node) == 118
    with pytest.raises(InputError, match="not a date"):
        api.anomalies(ws, since="last monday")


def test_default_monitors_say_why(ws):
    mons = api.default_monitors(ws)
    by = {m["monitor"]: m for m in mons}
    # every built model and seed, dbt's included
    assert {m["node"] for m in mons} == {
        "pricing:fx.daily_rates",
        "pricing:marts.agg_gmv_daily",
        "pricing:marts.fct_bookings_usd",
        "finance:stg_gmv_daily",
        "finance:fct_gmv_qtd",
        "finance:fct_gmv_by_currency",
        "finance:fct_gmv_by_channel",
        "finance:currency_regions",
    }
    monthly = by["finance:fct_gmv_by_currency/sum(gmv_usd)"]
    assert monthly["time_column"] == "month" and "per month of the time column" in monthly["why"]
    assert "finance:fct_gmv_qtd/sum(gmv_usd_qtd)" not in by  # a running total: no interval's own
    seed = by["finance:currency_regions/row_count"]
    assert seed["time_column"] == "" and "whole table" in seed["why"]
    assert by["finance:currency_regions/checksum(region)"]["detectors"] == []
    rows = by["pricing:fx.daily_rates/row_count"]
    assert rows["kind"] == "volume" and "rate_date" in rows["why"]
    dup = by["pricing:fx.daily_rates/duplicates(rate_date, currency)"]
    assert "unique_combination_of_columns" in dup["why"]
    # the rates per currency are the declared fx_rate's: no monitor measures them again
    assert "pricing:fx.daily_rates/avg(rate_to_usd)" not in by
    lag = by["pricing:fx.daily_rates/lag_days(as_of)"]
    assert lag["column"] == "as_of" and lag["dimensions"] == ["currency"]
    # from the column lineage: the bookings' join of the rates, and the slices the graph knows
    cov = by["pricing:marts.fct_bookings_usd/coverage(bookings.currency in daily_rates.currency)"]
    assert cov["kind"] == "coverage" and "warehouse.fx.daily_rates.currency" in cov["why"]
    slices = {m["column"] for m in mons if m["kind"] == "slice" and m["node"].endswith("usd")}
    assert slices == {"channel", "currency"}  # what agg_gmv_daily and fct_gmv_by_channel group by


# -- connectors -------------------------------------------------------------------------------
def test_ingestion_lists_the_dlt_loads_and_releases_the_warehouse(ws, story_dir):
    import duckdb

    jobs = {j["name"]: j for j in api.ingestion_jobs(ws)}
    assert _json_round_trip(list(jobs.values())) == list(jobs.values())
    fx = jobs["fx_rates_ingest"]
    assert fx["runner"] == "dlt" and fx["loads_table"] == "warehouse.raw._dlt_loads"
    # the clean quarter, then the frozen days: two loads, both succeeded (status 0)
    assert len(fx["loads"]) == 2 and all(ld["succeeded"] for ld in fx["loads"])
    assert {ld["schema"] for ld in fx["loads"]} == {"fx_rates_ingest"}
    assert fx["last_load"] == fx["loads"][0]
    assert fx["loads"][0]["inserted_at"] > fx["loads"][1]["inserted_at"]
    (table,) = fx["tables"]
    assert table["relation"] == "warehouse.raw.fx_rates" and table["exists"]
    assert table["rows"] == 66 * 30 and "pricing:fx.daily_rates" in table["read_by"]
    assert "rate_to_usd" in table["columns"] and fx["domain"] == "pricing"
    bookings = jobs["bookings_load"]
    assert bookings["loads"] == [] and "command job" in bookings["loads_note"]
    assert bookings["tables"][0]["rows"] > 0
    # the read-only connection is closed: a writer can open the warehouse at once
    duckdb.connect(str(story_dir / "warehouse.duckdb")).close()


def test_dashboards_list_what_they_read_and_everything_upstream(ws):
    boards = {d["id"]: d for d in api.dashboards(ws)}
    assert _json_round_trip(list(boards.values())) == list(boards.values())
    assert set(boards) == {
        "dashboards:pricing_ops",
        "finance:exposure:gmv_usd_dashboard",
        "finance:exposure:q3_close",
    }
    q3 = boards["finance:exposure:q3_close"]
    assert q3["label"] == "Q3 close" and [r["node"] for r in q3["reads"]] == ["finance:fct_gmv_qtd"]
    assert "gmv_usd_qtd" in q3["reads"][0]["columns"]
    up = q3["upstream"]
    for nid in (
        "pricing:fx.daily_rates",
        "pricing:marts.agg_gmv_daily",
        "ingestion:fx_rates_ingest",
    ):
        assert nid in up
    # dependency order: the rates come before the mart that converts with them
    assert up.index("pricing:fx.daily_rates") < up.index("pricing:marts.agg_gmv_daily")
    assert set(q3["ingestion"]) == {"ingestion:fx_rates_ingest", "ingestion:bookings_load"}
    assert q3["metrics"] == ["fx_rate", "gmv_semantic", "gmv_usd"] and q3["open_incidents"] == [
        "INC-1"
    ]
    fx = boards["dashboards:pricing_ops"]
    assert fx["source"] == "declared" and fx["declared_reads"] == ["pricing:fx.daily_rates"]
    assert fx["upstream"] == ["ingestion:fx_rates_ingest", "pricing:raw.fx_rates",
                              "pricing:fx.daily_rates"]  # fmt: skip


# -- search and details -----------------------------------------------------------------------
def test_search_finds_the_gmv_mart_first(ws):
    found = api.search_nodes(ws, "gmv")
    assert found[0]["id"] == "pricing:marts.agg_gmv_daily" and found[0]["starts_here"]
    assert any("metrics: gmv_usd" in m for m in found[0]["matched"])
    ids = [r["id"] for r in found]
    assert "finance:fct_gmv_qtd" in ids
    # tests repeat the model's name: they come after every model
    kinds = [r["kind"] for r in found]
    assert kinds.index("test") > max(i for i, k in enumerate(kinds) if k == "model")
    assert [r["id"] for r in api.search_nodes(ws, "q3 close")][0] == "finance:exposure:q3_close"
    assert (
        api.search_nodes(ws, "fx rates", kind="ingestion")[0]["id"] == "ingestion:fx_rates_ingest"
    )
    assert len(api.search_nodes(ws, "gmv", limit=3)) == 3
    assert api.search_nodes(ws, "zebra") == []
    with pytest.raises(InputError, match="kind"):
        api.search_nodes(ws, "gmv", kind="table")
    with pytest.raises(InputError):
        api.search_nodes(ws, "  ")


def test_node_details(ws):
    d = api.node_details(ws, "pricing:fx.daily_rates")
    assert _json_round_trip(d) == d
    cols = {c["name"]: c for c in d["columns"]}
    assert cols["rate_to_usd"]["type"] == "DOUBLE"
    assert cols["as_of"]["description"] == "The day the vendor says the rate was published"
    assert d["domain"] == {"name": "pricing", "owners": ["maria", "sam"], "autonomy": "L2"}
    assert d["project_info"]["format"] == "sqlmesh" and d["relation"] == "warehouse.fx.daily_rates"
    assert d["metrics"] == ["fx_rate"] and d["open_anomalies"] == 118
    assert [p["id"] for p in d["parents"]] == ["pricing:raw.fx_rates"]
    assert "pricing:marts.fct_bookings_usd" in [c["id"] for c in d["children"]]
    assert len(d["checks"]) == 4
    b = d["last_build"]
    assert (
        b["run_id"]
        and b["built_at"].startswith("20")
        and b["intervals"][0][0].startswith("2026-07-01")
    )
    # a dbt model by its bare name: YAML descriptions, types from the warehouse
    qtd = api.node_details(ws, "fct_gmv_qtd")
    assert qtd["id"] == "finance:fct_gmv_qtd" and qtd["project_info"]["format"] == "dbt"
    c = {c["name"]: c for c in qtd["columns"]}["gmv_usd_qtd"]
    assert c["type"].startswith("DECIMAL") and c["type_from"] == "warehouse" and c["description"]
    with pytest.raises(NodeNotFoundError, match="finance:fct_gmv_qtd"):
        api.node_details(ws, "finance:fct_gmv_qt")


# -- the CLI ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "check"),
    [
        (["metrics", "--json", "--no-monitors"], lambda d: [m["name"] for m in d] == ["gmv_usd", "gmv_semantic", "fx_rate"]),
        (["metrics", "show", "fx_rate", "--series", "EUR", "--last", "3", "--json"],
         lambda d: [p["interval"] for p in d["series"][0]["points"]] == [*FROZEN, "2026-09-30"]),
        (["anomalies", "--json", "--all"], lambda d: len(d) == 120),
        (["monitors", "--json"], lambda d: len(d) > 20),
        (["ingestion", "--json"], lambda d: len(d[0]["loads"]) == 2),
        (["dashboards", "--json"], lambda d: len(d) == 3),
        (["show", "pricing:fx.daily_rates", "--json"], lambda d: d["metrics"] == ["fx_rate"]),
        (["ls", "--search", "gmv", "--json"], lambda d: d[0]["id"] == "pricing:marts.agg_gmv_daily"),
    ],
)  # fmt: skip
def test_cli_reading_commands_print_json(story_dir, args, check):
    from splice.cli.main import cli, register_commands

    register_commands()
    res = CliRunner().invoke(cli, ["-w", str(story_dir), *args])
    assert res.exit_code == 0, res.output
    assert check(json.loads(res.stdout))


def test_cli_reading_commands_render_and_refuse_unknown_names(story_dir):
    from splice.cli.main import cli, register_commands

    register_commands()
    run = CliRunner().invoke
    res = run(
        cli, ["-w", str(story_dir), "metrics", "show", "fx_rate", "--series", "EUR", "--last", "3"]
    )
    assert res.exit_code == 0 and "stopped_moving" in res.stdout and "currency=EUR" in res.stdout
    res = run(cli, ["-w", str(story_dir), "ls", "--search", "gmv"])
    assert res.exit_code == 0 and res.stdout.splitlines()[1].startswith(
        "pricing:marts.agg_gmv_daily"
    )
    res = run(cli, ["-w", str(story_dir), "metrics", "show", "fx_rat"])
    assert res.exit_code == 2 and "fx_rate" in res.stderr
    res = run(cli, ["-w", str(story_dir), "ls", "--search", "gmv", "-s", "pricing:*"])
    assert res.exit_code == 2
