"""Faults that show as failures and missing rows, on the real demo (dlt, SQLMesh, dbt, DuckDB)
run day by day as a schedule would:

- the rates vendor down on Monday and Tuesday (HTTP 503), then back: the journaled loads of
  those days fail, the rates are missing, and the bookings of those days are converted at
  Friday's rate through the as-of join: the incident names the job, its runs and the vendor's
  answer, and its scope holds the bookings and the marts of those days;
- a seed row twice: its unique test fails at every run and the model reading the seed is
  skipped, its table stale: the third failing run in a row opens an incident.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest

from splice import api
from splice.demo import relocate
from splice.demo.faults import apply_workspace_fault, run_on
from splice.demo.story import tell_repair
from splice.demo.vendor import set_incident
from splice.errors import InputError
from splice.graph.model import Relation
from splice.watch.scope_asof import range_joins

MON, TUE, WED = date(2026, 9, 28), date(2026, 9, 29), date(2026, 9, 30)
FRI = date(2026, 9, 25)
RATES = "pricing:fx.daily_rates"
USD = "pricing:marts.fct_bookings_usd"
SEED = "finance:currency_regions"


@pytest.fixture(scope="session")
def baselined(baselined_demo: Path) -> Path:
    """The clean demo up to Sunday 2026-09-27, baselined (the session's: read it, never
    modify it)."""
    return baselined_demo


def _copy(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest, symlinks=True)
    relocate(dest)
    return dest


@pytest.fixture(scope="module")
def outage(baselined: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ws_dir = _copy(baselined, tmp_path_factory.mktemp("outage") / "travel")
    set_incident(ws_dir, "vendor-outage")
    ran = run_on(ws_dir, MON, WED, daily=True)
    with api.open_workspace(ws_dir) as ws:
        found = api.watch(ws)
    return {"dir": ws_dir, "ran": ran, "found": found}


def _incident(found: Any, origin: str) -> Any:
    return next(i for i in found.incidents if i.origin_node == origin)


def _rate_dates(ws_dir: Path) -> dict[date, set[date]]:
    """booking day -> the rate days its bookings were converted at, as the warehouse says."""
    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT DISTINCT booking_date, rate_date FROM marts.fct_bookings_usd "
            "WHERE booking_date >= DATE '2026-09-25'"
        ).fetchall()
    finally:
        con.close()
    out: dict[date, set[date]] = {}
    for b, r in rows:
        out.setdefault(b, set()).add(r)
    return out


def test_missing_rates_damage_the_bookings_that_read_an_older_rate(outage: dict[str, Any]) -> None:
    # the loads of Monday and Tuesday failed, so nothing downstream carries those rate days;
    # the bookings of those days read Friday's rate through the as-of join
    read = _rate_dates(outage["dir"])
    assert read[MON] == read[TUE] == {FRI} and read[WED] == {WED}
    inc = _incident(outage["found"], RATES)
    scope = inc.diagnosis["scope"]
    nodes = {n["node"]: n for n in scope["nodes"]}
    assert nodes[RATES]["intervals"] == [MON.isoformat(), TUE.isoformat()]
    # the days whose bookings read another day's rate, and no other (not Wednesday, which
    # has its own rate, nor the weekend, which read Friday's as it should)
    bad = [MON.isoformat(), TUE.isoformat()]
    usd = nodes[USD]
    assert usd["intervals"] == bad and not usd["full"] and usd["time_column"] == "booking_date"
    assert "range join" in usd["why"] and "booking_date" in usd["why"]
    assert nodes["pricing:marts.agg_gmv_daily"]["intervals"] == bad
    assert nodes["finance:stg_gmv_daily"]["intervals"] == bad
    # the quarter-to-date running total carries them into Wednesday
    assert nodes["finance:fct_gmv_qtd"]["intervals"] == [*bad, WED.isoformat()]


def test_a_failed_load_is_named_with_its_job_runs_and_error(outage: dict[str, Any]) -> None:
    ran = outage["ran"]
    with api.open_workspace(outage["dir"]) as ws:
        journals = [api.run_journal(ws, r) for r in ran.ingestions]
    statuses = [j["run"]["status"] for j in journals]
    assert statuses == ["failed", "failed", "success"]
    d = _incident(outage["found"], RATES).diagnosis
    fault = d["fault"]
    assert fault["class"] == "failed_ingestion"
    assert fault["intervals"] == [MON.isoformat(), TUE.isoformat()]
    ev = fault["evidence"]
    assert ev["job"] == "fx_rates_ingest" and ev["failed_days"] == fault["intervals"]
    assert [r["run_id"] for r in ev["runs"]] == ran.ingestions[:2]
    # the cause names the job, each failed run and what the vendor answered
    cause = d["cause"]
    assert cause.startswith("Failed ingestion: fx_rates_ingest failed for 2026-09-28 (Mon), "
                            "2026-09-29 (Tue) and no later run loaded them")  # fmt: skip
    for run_id, day in zip(ran.ingestions[:2], ("2026-09-28", "2026-09-29"), strict=True):
        assert run_id in cause
        assert f"the rates vendor answered 503 for {day}" in cause
    assert ran.ingestions[2] not in cause  # Wednesday's load succeeded
    assert "has no rows on 2026-09-28 (Mon), 2026-09-29 (Tue)" in cause
    assert "its ingestion failed" in d["title"]
    # the source's record keeps the runs for the incident page
    assert d["source"]["runs"]["loaded_days"] == []
    assert d["source"]["runs"]["failed_days"] == fault["intervals"]


def test_an_ingestion_run_is_refused_for_an_unknown_job_or_days(outage: dict[str, Any]) -> None:
    with api.open_workspace(outage["dir"]) as ws:
        with pytest.raises(InputError) as err:
            api.ingest(ws, "fx_rate_ingest", MON, MON)
        assert err.value.fix and "fx_rates_ingest" in err.value.fix
        with pytest.raises(InputError, match="before the first"):
            api.ingest(ws, "fx_rates_ingest", TUE, MON)


def test_range_joins_are_read_from_the_join_condition() -> None:
    rates = Relation(None, "fx", "rates")
    # the as-of join through a CTE, either way round, and its forward mirror
    asof = ("with r as (select rate_date, rate from fx.rates) select b.day, r.rate from "
            "s.bookings as b join r on r.rate_date <= b.day")  # fmt: skip
    assert [j.backward for j in range_joins(asof, "duckdb", "day", rates, "rate_date")] == [True]
    fwd = "select b.day from s.bookings as b join fx.rates as r on b.day <= r.rate_date"
    assert [j.backward for j in range_joins(fwd, "duckdb", "day", rates, "rate_date")] == [False]
    # an equality join, or a range on another column, is no range join of the time
    eq = "select b.day from s.bookings as b join fx.rates as r on b.day = r.rate_date"
    assert range_joins(eq, "duckdb", "day", rates, "rate_date") == []
    other = ("select b.day, b.amount from s.bookings as b join fx.rates as r "
             "on b.amount >= r.rate_date")  # fmt: skip
    assert range_joins(other, "duckdb", "day", rates, "rate_date") == []


def test_three_failing_runs_of_a_check_open_an_incident(baselined: Path, tmp_path: Path) -> None:
    ws_dir = _copy(baselined, tmp_path / "travel")
    seed = apply_workspace_fault(ws_dir, "seed-duplicate")
    first = run_on(ws_dir, MON, TUE, daily=True)
    assert first.report.status == "failed"
    with api.open_workspace(ws_dir) as ws:
        two = api.watch(ws)
    # two failing runs: not yet (a run may fail once or twice and be fixed)
    assert [a for a in two.anomalies if a.detector == "failing_check"] == []
    assert two.incidents == []
    third = run_on(ws_dir, WED, WED, daily=True)
    assert not third.report.ok
    with api.open_workspace(ws_dir) as ws:
        found = api.watch(ws)
    flagged = [a for a in found.anomalies if a.detector == "failing_check"]
    assert sorted(a.interval for a in flagged) == [MON, TUE, WED]
    assert {a.node_id for a in flagged} == {SEED}
    (inc,) = found.incidents
    d = inc.diagnosis
    assert inc.origin_node == SEED
    assert d["fault"]["class"] == "failed_audit"
    (check,) = d["fault"]["evidence"]["checks"]
    assert check["check"] == "finance:unique_currency_regions_currency" and check["runs"] == 3
    assert check["first_run"] == first.runs[0] and check["last_run"] == third.runs[-1]
    assert d["cause"].startswith(
        "Failed check: test unique_currency_regions_currency of finance:currency_regions "
        f"failed in 3 runs since {first.runs[0]}"
    )
    assert "the runs skipped finance:fct_gmv_by_currency" in d["cause"]
    # the scope: the seed and the model its failures left stale (skipped in every run)
    scope = d["scope"]
    assert [n["node"] for n in scope["nodes"]] == [SEED, "finance:fct_gmv_by_currency"]
    assert all(n["full"] for n in scope["nodes"])
    assert [b["node"] for b in scope["blocked"]] == ["finance:fct_gmv_by_currency"]
    assert scope["blocked"][0]["run_id"] == third.runs[-1]
    # watched again: nothing new, the same incident
    with api.open_workspace(ws_dir) as ws:
        again = api.watch(ws)
        assert [a for a in again.anomalies if a.detector == "failing_check"] == []
        assert [i.incident_id for i in api.list_incidents(ws)] == [inc.incident_id]
    # the teammate's fix lands (the seed as it was); the repair rebuilds the seed and what its
    # failures left stale, and is verified: the seed has no time column, so what it measured on
    # any day is what the rebuild rewrote, never a change "outside the scope"
    shutil.copyfile(baselined / seed.relative_to(ws_dir), seed)
    applied = tell_repair(ws_dir, inc.incident_id).applied
    v = applied.verification
    assert v is not None and v.passed, v and v.summary
    assert v.summary.startswith("verified:")
    with api.open_workspace(ws_dir) as ws:
        assert api.list_incidents(ws) == []  # resolved by the verified repair
        assert api.incident(ws, inc.incident_id, live=False).status == "resolved"
    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"), read_only=True)
    try:
        dup = con.execute("SELECT currency, COUNT(*) FROM finance.currency_regions "
                          "GROUP BY 1 HAVING COUNT(*) > 1").fetchall()  # fmt: skip
    finally:
        con.close()
    assert dup == []
