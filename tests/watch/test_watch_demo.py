"""`splice watch` on the real demo: quiet on the clean quarter, the stale rates caught on
Monday 2026-09-28 (and Tuesday), history kept once, all or nothing."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from watch_support import copy_workspace

from splice.cli.main import cli, register_commands
from splice.config.workspace import MetricSection
from splice.demo import DemoResult
from splice.errors import ConfigError, WarehouseError
from splice.watch.service import watch
from splice.workspace.core import Workspace

RATES = "fx_rate"  # the demo's declared metric on the rates (no monitor measures them again)
STALE = {date(2026, 9, 28), date(2026, 9, 29)}
METRICS = """
[[metrics]]
name = "gmv_usd_by_currency"
node = "pricing:marts.agg_gmv_daily"
time = "booking_date"
value = "sum(gmv_usd)"
dimensions = ["currency"]
owner = "finance"
domain = "revenue"

[[metrics]]
name = "fx_rate_by_currency"
node = "pricing:fx.daily_rates"
time = "rate_date"
value = "avg(rate_to_usd)"
dimensions = ["currency"]
owner = "pricing"

[[metrics]]
name = "gmv_usd_weekly"
node = "pricing:marts.agg_gmv_daily"
time = "booking_date"
value = "sum(gmv_usd)"
grain = "week"
"""


def _state_counts(ws_dir: Path) -> dict[str, int]:
    con = sqlite3.connect(ws_dir / ".splice" / "state.db")
    try:
        return {
            t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("watch_points", "watch_series", "watch_anomalies", "watch_runs")
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def clean_ws(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = copy_workspace(demo_workspace, tmp_path_factory.mktemp("watch-clean") / "travel")
    cfg = dest / "splice.toml"
    cfg.write_text(cfg.read_text() + METRICS)
    return dest


@pytest.fixture(scope="module")
def stale_ws(stale_demo_build: DemoResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workspace(stale_demo_build.workspace, tmp_path_factory.mktemp("watch-stale") / "t")


def test_clean_quarter_is_quiet_measured_once_and_backfilled(clean_ws: Path) -> None:
    with Workspace.open(clean_ws) as ws:
        first = watch(ws)
        assert [a.as_dict() for a in first.anomalies] == []
        by_name = {m.name: m for m in first.metrics}
        assert (
            by_name["gmv_usd_by_currency"].series == 30
            and by_name["gmv_usd_by_currency"].new_points == 2755
        )
        assert by_name["fx_rate_by_currency"].series == 30 and by_name[
            "fx_rate_by_currency"
        ].through == date(2026, 9, 30)
        assert by_name["gmv_usd_weekly"].series == 1
        # the as-of lag per currency: the rates are fx_rate's (declared), not measured again
        rates = by_name["pricing:fx.daily_rates/by_currency"]
        assert rates.series == 30 and rates.measures == ["pricing:fx.daily_rates/lag_days(as_of)"]
        assert by_name["pricing:fx.daily_rates/rows"].measured_from is None  # first use: all
        assert first.points == _state_counts(clean_ws)["watch_points"] > 14000

        again = watch(ws)
        assert again.points == 0 and again.anomalies == []
        # the second watch asks only for the last late_days (7) days, in one query per metric
        assert by_name["gmv_usd_by_currency"].sql.count("SELECT") == 1
        # finance's monthly rollups (month read from their SQL): from the month before the last
        # closed one (September closed on the 30th)
        monthly = {m.name for m in again.metrics if m.measured_from == date(2026, 8, 1)}
        assert monthly == {
            f"finance:fct_gmv_by_{t}/{k}"
            for t in ("channel", "currency")
            for k in ("rows", "content")
        }
        assert {
            m.measured_from for m in again.metrics if m.name not in monthly | {"gmv_usd_weekly"}
        } == {date(2026, 9, 23)}
        assert (
            "WHERE \"booking_date\" >= CAST('2026-09-23' AS DATE)"
            in {m.name: m for m in again.metrics}["gmv_usd_by_currency"].sql
        )

        redo = watch(ws, backfill=True)
        assert redo.points == first.points and redo.anomalies == []
        assert {m.reset for m in redo.metrics} == {"backfill"}
        counts = _state_counts(clean_ws)
        assert counts["watch_points"] == first.points and counts["watch_runs"] == 3

        # a bad declaration is refused before anything is measured or written
        ws.config.metrics.append(
            MetricSection(
                name="bad_time",
                node="pricing:marts.agg_gmv_daily",
                time="currency",
                value="sum(gmv_usd)",
            )
        )
        with pytest.raises(ConfigError, match="metric 'bad_time'.*not a date or timestamp"):
            watch(ws)
        ws.config.metrics[-1] = MetricSection(
            name="not_a_number", node="pricing:marts.agg_gmv_daily", time="booking_date",
            value="max(currency)",
        )  # fmt: skip
        with pytest.raises(ConfigError, match="'not_a_number'.*not a number"):
            watch(ws, backfill=True)  # fails after measuring: still nothing written
        assert _state_counts(clean_ws) == counts


def _hide_from(warehouse: Path, day: str) -> None:
    """Move every row on or after ``day`` out of the SQLMesh tables and finance's daily table
    (into schema hidden): production as it stood before that day's runs."""
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("CREATE SCHEMA IF NOT EXISTS hidden")
        for schema, table, col in _physical(con):
            con.execute(
                f'CREATE TABLE hidden."{table}" AS SELECT * FROM {schema}."{table}" '
                f"WHERE {col} >= DATE '{day}'"
            )
            con.execute(f"DELETE FROM {schema}.\"{table}\" WHERE {col} >= DATE '{day}'")
    finally:
        con.close()


def _restore(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        for schema, table, _ in _physical(con):
            con.execute(f'INSERT INTO {schema}."{table}" SELECT * FROM hidden."{table}"')
            con.execute(f'DROP TABLE hidden."{table}"')
    finally:
        con.close()


def _physical(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    rows = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE' AND (table_schema LIKE 'sqlmesh__%' OR "
        "(table_schema = 'finance' AND table_name = 'fct_gmv_qtd'))"
    ).fetchall()
    return [(s, t, "rate_date" if "daily_rates" in t else "booking_date") for s, t in rows]


def test_stale_rates_are_caught_on_monday_and_nothing_before(stale_ws: Path) -> None:
    warehouse = stale_ws / "warehouse.duckdb"
    _hide_from(warehouse, "2026-09-28")  # production as of Sunday night
    with Workspace.open(stale_ws) as ws:
        sunday = watch(ws)
        assert sunday.anomalies == [] and sunday.points > 13000

        _restore(warehouse)  # Monday's (and Tuesday's, Wednesday's) loads land
        monday = watch(ws)
        rates = [a for a in monday.anomalies if a.metric == RATES]
        assert {(a.interval, a.detector) for a in rates} == {(d, "stopped_moving") for d in STALE}
        currencies = {a.dims["currency"] for a in rates}
        assert len(currencies) == 29 and "USD" not in currencies  # USD never moves: normal
        assert min(a.interval for a in monday.anomalies) == date(2026, 9, 28)
        assert {a.interval for a in monday.anomalies} == STALE  # Wednesday's fresh rates: fine
        eur = next(a for a in rates if a.dims["currency"] == "EUR" and a.interval.day == 28)
        assert "the same as on Fri 2026-09-25" in eur.reason and "29 of 29 series" in eur.reason
        tue = next(a for a in rates if a.dims["currency"] == "EUR" and a.interval.day == 29)
        assert tue.data["run"] == 2 and tue.data["since"] == "2026-09-28"
        # the vendor's as-of date and the bookings converted at it show the same two days
        assert {a.metric for a in monday.anomalies} == {
            RATES,
            "pricing:fx.daily_rates/lag_days(as_of)",
            "pricing:marts.fct_bookings_usd/lag_days(rate_as_of)",
        }

        assert watch(ws).points == 0  # a second watch measures nothing new
        stored = _state_counts(stale_ws)["watch_anomalies"]
        assert stored == len(monday.anomalies)

        # first use on the whole quarter (walk-forward) finds the same, and nothing earlier
        redo = watch(ws, backfill=True)
        assert {(a.metric, a.series, a.interval, a.detector) for a in redo.anomalies} == {
            (a.metric, a.series, a.interval, a.detector) for a in monday.anomalies
        }


def test_cli_reports_anomalies_with_exit_0_and_bad_input_with_exit_2(stale_ws: Path) -> None:
    register_commands()
    runner = CliRunner()
    res = runner.invoke(
        cli, ["-w", str(stale_ws), "watch", "--json", "-m", "pricing:fx.daily_rates"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["points"] == 0 and out["anomalies"] == []  # already measured by the test above
    res = runner.invoke(cli, ["-w", str(stale_ws), "watch", "--backfill", "-m", "fx.daily_rates"])
    assert res.exit_code == 2
    assert "no metric or monitored node 'fx.daily_rates'" in res.output
    assert "pricing:fx.daily_rates" in res.output  # the closest names

    res = runner.invoke(
        cli, ["-w", str(stale_ws), "watch", "--backfill", "-m", "pricing:fx.daily_rates"]
    )
    assert res.exit_code == 0, res.output
    assert "stopped_moving" in res.stdout and "29 series" in res.stdout
    assert "Measuring" in res.stderr  # progress goes to stderr


def test_a_locked_warehouse_is_a_clear_error(stale_ws: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('locked', flush=True); time.sleep(60)", str(stale_ws / "warehouse.duckdb")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        from splice.graph.model import Relation
        from splice.watch.metrics import Measure, MetricSpec, parse_value
        from splice.watch.service import measure

        spec = MetricSpec(
            name="m", node_id="pricing:fx.daily_rates",
            relation=Relation("warehouse", "fx", "daily_rates"), time="rate_date",
            time_type="DATE", dimensions=[], grain="day",
            measures=[Measure("m", "count(*)", "value", parse_value("count(*)"))],
        )  # fmt: skip
        with Workspace.open(stale_ws) as ws, pytest.raises(WarehouseError) as info:
            measure(ws, [(spec, None)])
        assert "is locked by another process" in info.value.message
        assert f"(PID {holder.pid})" in info.value.message and info.value.retry
    finally:
        holder.kill()
        holder.wait()
