"""The fault named on the real demo (dlt, SQLMesh, dbt, DuckDB): an inverted rate and a
duplicated bookings load, each watched after production ran on into them."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from splice import api
from splice.demo import relocate
from splice.demo.faults import run_on
from splice.demo.layout import Q3_END
from splice.demo.story import FREEZE_FROM
from splice.demo.vendor import set_incident


@pytest.fixture(scope="session")
def baselined(baselined_demo: Path) -> Path:
    """The clean demo up to Sunday 2026-09-27, baselined (the session's: read it, never
    modify it)."""
    return baselined_demo


def _fault(base: Path, dest: Path, incident: str | None, bookings: str | None) -> tuple[Any, Any]:
    shutil.copytree(base, dest, symlinks=True)
    relocate(dest)
    set_incident(dest, incident)
    ran = run_on(dest, FREEZE_FROM, Q3_END, bookings=bookings)
    with api.open_workspace(dest) as ws:
        found = api.watch(ws)
    return ran, found


def test_an_inverted_rate_is_named_inverted_with_the_ratio(baselined: Path, tmp_path: Path) -> None:
    ran, found = _fault(baselined, tmp_path / "travel", "inverted-rate", None)
    assert ran.report.ok  # EUR per USD is still inside every audit's range
    assert len(found.incidents) == 1
    d = found.incidents[0].diagnosis
    assert d["origin"]["node"] == "pricing:fx.daily_rates"
    fault = d["fault"]
    assert fault["class"] == "inverted"
    assert fault["evidence"]["series"] == ["currency=EUR"]
    assert abs(fault["evidence"]["product"] - 1.0) < 0.02  # value x expected ~ 1
    assert fault["evidence"]["ratio"] < 0.9
    assert d["cause"].startswith("Inverted: currency=EUR reads 0.8")
    assert "the reciprocal" in d["cause"] and "fx_rates_ingest ran and succeeded" in d["cause"]
    assert fault["intervals"][0] == FREEZE_FROM.isoformat()


def test_a_duplicated_bookings_load_is_named_with_its_counts_and_load_ids(
    baselined: Path, tmp_path: Path
) -> None:
    ran, found = _fault(baselined, tmp_path / "travel", None, "duplicate")
    first, second = ran.loads
    d = next(
        i.diagnosis
        for i in found.incidents
        if i.diagnosis["origin"]["node"] == "pricing:marts.fct_bookings_usd"
    )
    fault = d["fault"]
    assert fault["class"] == "duplicated_load"
    assert fault["n"] == 2
    assert fault["evidence"]["load_ids"] == sorted([first, second])
    day = fault["evidence"]["intervals"][0]
    assert day["interval"] == FREEZE_FROM.isoformat()
    assert day["rows"] == 2 * day["distinct"] and day["keys"] == ["booking_id"]
    assert f"{day['rows']:,} rows for {day['distinct']:,} distinct booking_id" in d["cause"]
    assert first in d["cause"] and second in d["cause"]
    # the uniqueness audit the duplicates failed is named as well
    if not ran.report.ok:
        assert "failed_audit" in fault["classes"]
        assert "unique_values" in d["cause"]
    assert FREEZE_FROM.isoformat() in d["scope"]["intervals"]
    assert date.fromisoformat(d["scope"]["start"]) == FREEZE_FROM


def test_rows_loaded_after_their_day_was_processed_are_noticed_and_named(
    baselined: Path, tmp_path: Path
) -> None:
    # 5% of Monday's bookings arrive after Monday was processed: too few for the volume
    # monitors, but Splice compares when they were loaded with when Monday was processed
    ran, found = _fault(baselined, tmp_path / "travel", None, "late-few")
    late = [a for a in found.anomalies if a.detector == "late_rows"]
    assert [(a.node_id, a.interval) for a in late] == [
        ("pricing:marts.fct_bookings_usd", FREEZE_FROM)
    ]
    on_time, arrived_late = ran.loads[0], ran.loads[1]
    assert late[0].data["loads"][0]["load_id"] == arrived_late
    (inc,) = found.incidents
    d = inc.diagnosis
    assert d["fault"]["class"] == "late_rows"
    assert d["fault"]["evidence"]["restate"] == [FREEZE_FROM.isoformat()]
    assert d["fault"]["n"] == late[0].value
    assert "it needs a restatement: 2026-09-28" in d["cause"] and arrived_late in d["cause"]
    assert on_time not in d["fault"]["words"]
    assert d["scope"]["intervals"] == [FREEZE_FROM.isoformat()]
    assert "missed rows that arrived late" in d["title"]
    # watched again, nothing new: the same late rows are not reported twice
    with api.open_workspace(tmp_path / "travel") as ws:
        again = api.watch(ws)
    assert [a for a in again.anomalies if a.detector == "late_rows"] == []


def _edit(ws_dir: Path, path: str, old: str, new: str) -> None:
    f = ws_dir / path
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new))


def test_a_seed_edit_is_named_with_the_seed_and_the_run_that_shipped_it(
    baselined: Path, tmp_path: Path
) -> None:
    # a teammate moves EUR to the Americas in finance's regions seed; production runs it on
    # Monday: no vendor fault, no bookings fault, every audit passes
    ws_dir = tmp_path / "travel"
    shutil.copytree(baselined, ws_dir, symlinks=True)
    relocate(ws_dir)
    from splice.demo.faults import apply_workspace_fault

    seed = apply_workspace_fault(ws_dir, "seed-region")
    assert "EUR,Euro,Americas" in seed.read_text()
    ran = run_on(ws_dir, FREEZE_FROM, Q3_END)
    assert ran.report.ok
    with api.open_workspace(ws_dir) as ws:
        found = api.watch(ws)
    (inc,) = found.incidents
    d = inc.diagnosis
    assert d["origin"]["node"] == "finance:currency_regions"
    fault = d["fault"]
    assert fault["class"] == "code_change"
    assert fault["evidence"]["components"] == ["sql"]  # the seed's file, nothing else
    assert fault["evidence"]["run_id"] == ran.runs[-1]
    assert "seed finance:currency_regions" in d["cause"] and ran.runs[-1] in d["cause"]
    assert inc.title == (
        f"currency_regions was built with new code that changed published values in run "
        f"{ran.runs[-1]}"
    )
    # what it rewrote: the region of every closed month finance had already published
    rewritten = fault["evidence"]["restated"]["finance:fct_gmv_by_currency"]
    assert rewritten["intervals"] == ["2026-07-01", "2026-08-01"]
    assert rewritten["measures"] == ["checksum(region)"]  # counts and sums did not move
    scope = {n["node"]: n for n in d["scope"]["nodes"]}
    assert set(scope) == {"finance:currency_regions", "finance:fct_gmv_by_currency"}
    assert scope["finance:currency_regions"]["full"]
    # September closed on the 30th: built with the new code, so in scope as well
    assert scope["finance:fct_gmv_by_currency"]["intervals"] == [
        "2026-07-01", "2026-08-01", "2026-09-01"
    ]  # fmt: skip
    # the rates and GMV did not move: nothing else is anomalous
    assert {a.node_id for a in found.anomalies} == set(scope)
    with api.open_workspace(ws_dir) as ws:
        assert api.watch(ws).anomalies == []  # measured again, the new values are the history
    # no reload or restatement undoes a code change: the proposal says what would
    from splice.demo.story import DEMO_AGENT
    from splice.errors import RepairError
    from splice.support.principals import Principal

    agent = Principal.of(DEMO_AGENT, kind="agent", auth="cli-as", scopes="read,propose")
    with (
        api.open_workspace(ws_dir) as ws,
        pytest.raises(RepairError, match="is a change inside the project") as refused,
    ):
        api.propose(ws, inc.incident_id, principal=agent)
    assert "revert seeds/currency_regions.csv in project finance" in str(refused.value.fix)


def test_a_model_sql_edit_names_the_model_and_what_it_rewrote(
    baselined: Path, tmp_path: Path
) -> None:
    # a teammate sums the local amounts instead of the dollars in finance's channel mart
    ws_dir = tmp_path / "travel"
    shutil.copytree(baselined, ws_dir, symlinks=True)
    relocate(ws_dir)
    _edit(ws_dir, "finance/models/marts/fct_gmv_by_channel.sql", "sum(amount_usd)", "sum(amount)")
    ran = run_on(ws_dir, FREEZE_FROM, Q3_END)
    with api.open_workspace(ws_dir) as ws:
        found = api.watch(ws)
    (inc,) = found.incidents
    d = inc.diagnosis
    assert d["origin"]["node"] == "finance:fct_gmv_by_channel"
    assert d["fault"]["class"] == "code_change" and d["fault"]["evidence"]["run_id"] == ran.runs[-1]
    assert "model finance:fct_gmv_by_channel was built with new code (sql " in d["cause"]
    rewritten = d["fault"]["evidence"]["restated"]["finance:fct_gmv_by_channel"]
    assert rewritten["intervals"] == ["2026-07-01", "2026-08-01"]
    assert "sum(gmv_usd)" in rewritten["measures"] and "row_count" not in rewritten["measures"]
    eur = [a for a in found.anomalies if a.metric.endswith("/sum(gmv_usd)")]
    assert eur and all(a.value > a.expected for a in eur)  # local units outweigh dollars


def test_two_independent_faults_open_two_incidents_each_with_its_cause_and_scope(
    baselined: Path, tmp_path: Path
) -> None:
    # EUR inverted on Monday and Tuesday, and Monday's bookings loaded twice: one path
    # (rates -> bookings in USD -> GMV), two faults
    ran, found = _fault(baselined, tmp_path / "travel", "inverted-two-days", "duplicate")
    by_origin = {i.diagnosis["origin"]["node"]: i.diagnosis for i in found.incidents}
    assert set(by_origin) == {"pricing:fx.daily_rates", "pricing:marts.fct_bookings_usd"}
    rates, bookings = (
        by_origin["pricing:fx.daily_rates"],
        by_origin["pricing:marts.fct_bookings_usd"],
    )
    assert rates["fault"]["class"] == "inverted"
    assert rates["fault"]["intervals"] == ["2026-09-28", "2026-09-29"]
    assert bookings["fault"]["class"] == "duplicated_load"
    assert sorted(bookings["fault"]["evidence"]["load_ids"]) == sorted(ran.loads)
    # the uniqueness audit the duplicates failed is the duplicate's, not the inversion's
    assert "unique_values" in bookings["cause"] and "unique_values" not in rates["cause"]
    scope = {n["node"]: n["intervals"] for n in rates["scope"]["nodes"]}
    assert scope["pricing:fx.daily_rates"] == ["2026-09-28", "2026-09-29"]
    assert scope["pricing:marts.fct_bookings_usd"] == ["2026-09-28", "2026-09-29"]
    dup = {n["node"]: n["intervals"] for n in bookings["scope"]["nodes"]}
    assert dup["pricing:marts.fct_bookings_usd"] == ["2026-09-28"]
    assert "pricing:fx.daily_rates" not in dup
    # each anomaly is in one incident: the rates' own in the first, the rows' in the second
    first = next(i for i in found.incidents if i.origin_node == "pricing:fx.daily_rates")
    with api.open_workspace(tmp_path / "travel") as ws:
        from splice.watch.incidents import incident_anomalies

        mine = incident_anomalies(ws.state.conn, first.incident_id)
    assert {a["node_id"] for a in mine} == {"pricing:fx.daily_rates"}
    assert sum(i.anomalies for i in found.incidents) == len(found.anomalies)


def test_currency_codes_in_lower_case_are_found_at_the_rates_on_their_first_day(
    baselined: Path, tmp_path: Path
) -> None:
    # the vendor sends "eur" for "EUR" from Monday: rows load, counts and distinct counts look
    # normal, and the bookings no longer find Monday's rates (they keep Friday's)
    ran, found = _fault(baselined, tmp_path / "travel", "codes-lowercase", None)
    assert ran.report.ok  # every audit passes
    rates = "pricing:fx.daily_rates"
    changed = [a for a in found.anomalies if a.node_id == rates]
    assert min(a.interval for a in changed) == FREEZE_FROM
    assert {a.detector for a in changed} == {"domain_change"}
    assert len({a.dims["currency"] for a in changed if a.interval == FREEZE_FROM}) == 30
    # the join's coverage fell where the bookings read the rates, on the same day
    coverage = [a for a in found.anomalies if a.detector == "coverage_drop"]
    assert [(a.node_id, a.interval) for a in coverage][0] == (
        "pricing:marts.fct_bookings_usd",
        FREEZE_FROM,
    )
    assert coverage[0].value == 0.0
    (inc,) = found.incidents
    d = inc.diagnosis
    assert d["origin"]["node"] == rates
    assert d["fault"]["class"] == "domain_change"
    assert d["cause"].startswith("Domain change: currency values changed case on 2026-09-28")
    assert "30 of 30 values no longer match raw.bookings.currency" in d["cause"]
    assert d["scope"]["intervals"] == ["2026-09-28", "2026-09-29", "2026-09-30"]
    # the bookings of those days joined Friday's rate: they are in scope too
    nodes = {n["node"]: n["intervals"] for n in d["scope"]["nodes"]}
    assert nodes["pricing:marts.fct_bookings_usd"] == ["2026-09-28", "2026-09-29", "2026-09-30"]


def test_a_booking_channel_that_stops_arriving_is_named_on_its_first_day(
    baselined: Path, tmp_path: Path
) -> None:
    # the partner channel (a tenth of the bookings) stops arriving from Monday: the day's
    # total drops by less than its weekly swing, the slice drops to nothing
    _, found = _fault(baselined, tmp_path / "travel", None, "drop-channel")
    bookings = "pricing:marts.fct_bookings_usd"
    drops = [a for a in found.anomalies if a.detector == "slice_drop"]
    assert {(a.node_id, str(a.dims)) for a in drops} == {(bookings, "{'channel': 'partner'}")}
    assert min(a.interval for a in drops) == FREEZE_FROM
    first = min(drops, key=lambda a: a.interval)
    assert first.value == 0 and first.expected > 50
    (inc,) = found.incidents
    d = inc.diagnosis
    assert d["origin"]["node"] == bookings
    assert d["fault"]["class"] == "slice_missing"
    expected = f"{first.expected:,.0f}"
    assert d["cause"].startswith(
        f"Slice missing: channel = partner: 0 rows where {expected} were expected on 2026-09-28"
    )
    assert d["scope"]["intervals"] == ["2026-09-28", "2026-09-29", "2026-09-30"]
