"""The scope of an incident is the damage per node, derived from the data and the lineage:
the real demo with its vendor frozen on a Friday, and the scope's start where the fault started."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from scope_support import FRIDAY, FridayStory, inflate_rate, tell_friday_freeze

from splice.graph.model import Relation
from splice.watch.damage import fault_start, origin_days
from splice.watch.diagnosis import diagnose
from splice.watch.incidents import incident_anomalies
from splice.watch.report import incident_lines
from splice.watch.scope_sql import running_windows, time_expression
from splice.workspace.core import Workspace

RATES = "pricing:fx.daily_rates"
WEEKEND = ["2026-09-25", "2026-09-26", "2026-09-27"]
REST_OF_Q3 = [(FRIDAY + timedelta(days=i)).isoformat() for i in range(6)]  # Fri 25 .. Wed 30


def _days(first: str, last: str) -> list[str]:
    a, b = date.fromisoformat(first), date.fromisoformat(last)
    return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]


@pytest.fixture
def friday(friday_story: FridayStory) -> FridayStory:
    """The Friday freeze up to its incident (the session's, read-only: copy it)."""
    return friday_story


def _by_node(scope: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in scope["nodes"]}


def test_friday_bad_rate_damages_the_weekend_and_the_rest_of_the_quarter(
    friday: FridayStory,
) -> None:
    [inc] = friday.watch.incidents
    assert inc.origin_node == RATES
    scope = inc.diagnosis["scope"]
    assert scope["intervals"] == ["2026-09-25"] and scope["start"] == "2026-09-25"
    nodes = _by_node(scope)
    # the origin first, then topological order: every built node downstream that read Friday
    assert scope["nodes"][0]["node"] == RATES
    assert nodes[RATES]["intervals"] == ["2026-09-25"] and not nodes[RATES]["full"]
    # Friday's rate converts Friday's, Saturday's and Sunday's bookings (the as-of join),
    # found through fct_bookings_usd.rate_date <- fx.daily_rates.rate_date in the warehouse
    usd = nodes["pricing:marts.fct_bookings_usd"]
    assert usd["intervals"] == WEEKEND and usd["time_column"] == "booking_date"
    assert usd["ranges"] == [["2026-09-25", "2026-09-27"]] and not usd["full"]
    assert "rate_date" in usd["why"]
    agg = nodes["pricing:marts.agg_gmv_daily"]
    assert agg["intervals"] == WEEKEND and not agg["full"]
    assert nodes["finance:stg_gmv_daily"]["intervals"] == WEEKEND
    # the quarter-to-date running total: every later day of the quarter in the data
    qtd = nodes["finance:fct_gmv_qtd"]
    assert qtd["intervals"] == REST_OF_Q3 and qtd["full"]  # a dbt table: rebuilt whole
    assert "running total" in qtd["why"] and "QUARTER" in qtd["why"]
    # a month column computed from the booking date: that month
    for monthly in ("finance:fct_gmv_by_currency", "finance:fct_gmv_by_channel"):
        assert nodes[monthly]["intervals"] == ["2026-09-01"], monthly
        assert nodes[monthly]["time_column"] == "month" and "MONTH" in nodes[monthly]["why"]
    order = [n["node"] for n in scope["nodes"]]
    assert order.index("pricing:marts.agg_gmv_daily") < order.index("finance:stg_gmv_daily")
    assert order.index("finance:stg_gmv_daily") < order.index("finance:fct_gmv_qtd")
    assert scope["blocked"] == []
    lines = "\n".join(incident_lines(inc))
    assert "pricing:marts.fct_bookings_usd: 2026-09-25..27" in lines
    assert "finance:fct_gmv_qtd: 2026-09-25..30, rebuilt whole" in lines
    # the scope's queries cost little next to the rest of the watch
    assert friday.watch.timings["incidents"] < 5.0


def test_scope_starts_where_the_detector_says_the_fault_started(friday: FridayStory) -> None:
    """A level shift flagged on its third interval (Tue 09-29, 'since Fri 09-25'): the scope
    starts on its first, on the business days the rates have (no weekend), and the damage
    downstream follows from there."""
    with Workspace.open(friday.workspace) as ws:
        con = sqlite3.connect(ws.state.path)
        try:
            stored = incident_anomalies(con, "INC-1")
        finally:
            con.close()
        shifted = [
            dict(a, interval=date(2026, 9, 29), detector="level_shift",
                 data={"since": "2026-09-25", "shift": True, "sigmas": 9.0})
            for a in stored
            if a["node_id"] == RATES and a["detector"] == "stopped_moving"
        ]  # fmt: skip
        assert shifted
        d = diagnose(ws, ws.graph(), shifted)
    scope = d["scope"]
    assert scope["start"] == "2026-09-25" and scope["since"] == "2026-09-25"
    assert scope["intervals"] == ["2026-09-25", "2026-09-28", "2026-09-29"]
    assert "where the detectors say the fault started" in scope["why"]
    nodes = _by_node(scope)
    assert nodes[RATES]["intervals"] == scope["intervals"]
    assert nodes["pricing:marts.fct_bookings_usd"]["intervals"] == _days("2026-09-25", "2026-09-29")


def test_fault_start_and_origin_days_on_a_business_day_series(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE SCHEMA s")
        con.execute(
            "CREATE TABLE s.rates AS SELECT d::DATE AS rate_date, 1.0 AS v "
            "FROM range(DATE '2026-09-14', DATE '2026-10-03', INTERVAL 1 DAY) t(d) "
            "WHERE dayofweek(d) BETWEEN 1 AND 5"
        )
        third = {"detector": "level_shift", "interval": date(2026, 9, 29),
                 "data": {"since": "2026-09-25", "shift": True}}  # fmt: skip
        jump = {"detector": "jump", "data": {"since": "2026-09-01"}}  # its last good day
        since = fault_start([third, jump])
        assert since == date(2026, 9, 25)
        rel = Relation("w", "s", "rates")
        got = origin_days(con, rel, "rate_date", [date(2026, 9, 29)], since, "duckdb")
        assert got == [date(2026, 9, 25), date(2026, 9, 28), date(2026, 9, 29)]
        # no since (or one after the first flagged day): the flagged days only
        assert origin_days(con, rel, "rate_date", [date(2026, 9, 29)], None, "duckdb") == [
            date(2026, 9, 29)
        ]
    finally:
        con.close()


def test_time_expressions_and_running_windows_through_ctes() -> None:
    parent = Relation("warehouse", "finance", "stg_gmv_daily")
    sql = """
        with daily as (
            select booking_date, sum(gmv_usd) as gmv_usd
            from "warehouse"."finance"."stg_gmv_daily" group by booking_date
        ), weekly as (select cast(date_trunc('week', booking_date) as date) as wk, gmv_usd
                      from daily)
        select booking_date, cast(date_trunc('quarter', booking_date) as date) as q,
            sum(gmv_usd) over (partition by date_trunc('quarter', booking_date)
                order by booking_date rows between unbounded preceding and current row) as qtd,
            sum(gmv_usd) over (order by booking_date rows between 1 preceding and current row)
                as two_days,
            row_number() over (order by booking_date) as n
        from daily
    """
    q = time_expression(sql, "duckdb", "q", parent, "booking_date")
    assert q is not None and q.sql("duckdb") == (
        "CAST(DATE_TRUNC('QUARTER', \"_splice_t\") AS DATE)"
    )
    ident = time_expression(sql, "duckdb", "booking_date", parent, "booking_date")
    assert ident is not None and ident.sql("duckdb") == '"_splice_t"'
    assert time_expression(sql, "duckdb", "qtd", parent, "booking_date") is None  # reads gmv
    wins = running_windows(sql, "duckdb", parent, "booking_date")
    # only the cumulative aggregate; a two-day window and row_number are not running totals
    assert len(wins) == 1 and wins[0].partition is not None
    assert [p.sql("duckdb") for p in wins[0].partition] == ["DATE_TRUNC('QUARTER', \"_splice_t\")"]
    # another table's time column is not this parent's
    assert running_windows(sql, "duckdb", Relation("w", "x", "other"), "booking_date") == []


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> FridayStory:
    return tell_friday_freeze(
        tmp_path_factory.mktemp("blocked") / "travel", before_run=inflate_rate
    )


def test_intervals_a_blocking_audit_kept_from_being_built_are_in_the_scope(
    blocked: FridayStory,
) -> None:
    """A rate 100,000 times too large fails fx.daily_rates' accepted_range audit: the run skips
    everything downstream, and the days it did not build are part of the scope, audit named."""
    assert not blocked.run.ok
    audit = "pricing:audit:fx.daily_rates.accepted_range"
    assert blocked.run.summary()["failed_checks"] == [audit]
    inc = next(i for i in blocked.watch.incidents if i.origin_node == RATES)
    scope = inc.diagnosis["scope"]
    by_node = {b["node"]: b for b in scope["blocked"]}
    usd = by_node["pricing:marts.fct_bookings_usd"]
    # every booking day of the failed batch, weekend included (the bookings have them)
    assert usd["intervals"] == REST_OF_Q3 and not usd["full"]
    assert usd["audit_id"] == audit and "accepted_range" in usd["audit"]
    assert usd["audited_node"] == RATES and usd["run_id"] == blocked.run.run_id
    assert by_node["pricing:marts.agg_gmv_daily"]["intervals"] == REST_OF_Q3
    assert by_node["finance:fct_gmv_qtd"]["intervals"] == REST_OF_Q3
    assert by_node["finance:fct_gmv_qtd"]["full"]
    assert by_node["finance:fct_gmv_by_currency"] == {
        **by_node["finance:fct_gmv_by_currency"], "intervals": [], "full": True,
    }  # fmt: skip
    # nothing downstream was built from the bad rates: the damage is the origin's alone
    assert [n["node"] for n in scope["nodes"]] == [RATES]
    assert f"not built because audit {usd['audit']} on {RATES} failed" in scope["why"]
    lines = "\n".join(incident_lines(inc))
    assert "pricing:marts.fct_bookings_usd: 2026-09-25..30 missing: audit" in lines
