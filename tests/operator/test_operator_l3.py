"""The seed's week at L3, with nobody typing: the team watches the rates feed as it lands (a
``[[metrics]]`` on the raw relation), its loader reports the load to ``splice serve`` with
OpenLineage, and the operator catches the frozen vendor before any model has read it. The
narrowest repair is then the reload alone (a proven reversible class), which Splice approves
as ``splice-operator``, applies, verifies and receipts; Tuesday's run builds Monday from the
repaired rates, and no wrong number reaches a dashboard."""

from __future__ import annotations

import datetime as dt
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest
from tests.cli_runner import run_cli
from tests.notify.notify_support import http_receiver
from tests.operator.operator_support import (
    MORNING,
    Clock,
    activity,
    copy_with,
    load_day,
    proven,
    schedule_row,
    serving,
    wait_for,
)
from tests.serve.serve_support import free_port, make_key

pytestmark = pytest.mark.slow

MONDAY = date(2026, 9, 28)
#: the team's metric on the feed itself, as it lands (before any model reads it)
FX_FEED = """
[[metrics]]
name = "fx_feed"
node = "pricing:raw.fx_rates"
time = "rate_date"
value = "avg(rate_to_usd)"
dimensions = ["currency"]
owner = "pricing"
domain = "pricing"
"""


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _finished(ws: Path, tick: str) -> object:
    row = schedule_row(ws)
    return row is not None and row.last_tick == _at(tick) and row.finished_at is not None and row


def _load_reported(url: str, key: str, warehouse: Path) -> None:
    """The team's loader tells Splice it loaded the feed (openlineage-python's own client, as
    Airflow's or Dagster's OpenLineage integration would)."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

    client = OpenLineageClient(transport=HttpTransport(HttpConfig(
        url=url, auth=ApiKeyTokenProvider({"apiKey": key}))))  # fmt: skip
    client.emit(RunEvent(
        eventType=RunState.COMPLETE, eventTime=dt.datetime.now(dt.UTC).isoformat(),
        run=Run(runId=str(uuid.uuid4())), job=Job(namespace="cron", name="fx_rates_ingest"),
        producer="https://example.com/team-cron",
        outputs=[OutputDataset(namespace=f"duckdb://{warehouse}", name="warehouse.raw.fx_rates")],
    ))  # fmt: skip


def _rates(ws: Path, table: str, day: date) -> dict[str, float]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        rows = con.execute(f"SELECT currency, rate_to_usd FROM {table} WHERE rate_date = ?",
                           [day]).fetchall()  # fmt: skip
    finally:
        con.close()
    return {c: float(r) for c, r in rows}


def test_at_l3_the_feed_caught_as_it_lands_is_reloaded_verified_and_receipted_by_itself(
    sunday_demo: Path, tmp_path: Path
) -> None:
    from splice.approvals import auditlog
    from splice.demo.vendor import set_incident
    from splice.repair import store
    from splice.watch.incidents import get_incident
    from splice.workspace.core import Workspace

    port = free_port()
    with http_receiver() as hook:
        extra = (
            MORNING
            + FX_FEED
            + f"""
[operator]
quiet_seconds = 0
tick_seconds = 0.3
poll_seconds = 1

[[notify]]
name = "owners"
type = "webhook"
url = "{hook.url}/owners"
events = ["incident_opened", "proposal_requested", "proposal_approved", "repair_verified",
          "repair_unverified"]

[serve]
port = {port}
housekeeping_seconds = 1
"""
        )
        ws = copy_with(sunday_demo, tmp_path / "travel", extra, levels={"pricing": "L3"})
        proven(ws, 3)
        key = make_key(ws, "team-cron", "agent", "read")
        clock = Clock(ws, "2026-09-28T05:00")
        log = ws / "serve.log"
        with serving(ws, port, clock) as base:
            wait_for("the schedule to be seen", lambda: schedule_row(ws), log=log)
            set_incident(ws, "stale-rates")  # the vendor freezes on Monday
            clock.set("2026-09-28T06:01")  # Monday's run: Sunday's data; the feed baselined
            monday = wait_for("Monday's run", lambda: _finished(ws, "2026-09-28T06:00"), log=log)
            assert monday.outcome == "ok" and monday.detail["watch"]["incidents"] == []

            clock.set("2026-09-28T18:00")
            load_day(ws, MONDAY)  # the team's load of Monday: the vendor re-serves Friday
            friday = _rates(ws, "raw.fx_rates", date(2026, 9, 25))
            assert _rates(ws, "raw.fx_rates", MONDAY) == friday
            set_incident(ws, None)  # the vendor fixes its feed within the hour
            _load_reported(base, key, (ws / "warehouse.duckdb").resolve())

            applied = wait_for("the operator's reload", lambda: [
                a for a in activity(ws) if a["kind"] in ("apply", "apply-refused",
                                                         "waits-for-person", "not-proposed")],
                log=log)  # fmt: skip
            assert [a["kind"] for a in applied] == ["apply"], [a["summary"] for a in applied]
            assert applied[0]["verified"] is True, applied
            assert applied[0]["summary"].endswith("; verified")
            assert applied[0]["rule"].startswith("L3 (act reversibly): domain pricing")
            repaired = _rates(ws, "raw.fx_rates", MONDAY)
            assert repaired != friday  # Monday's own rates now

            clock.set("2026-09-29T06:01")  # Tuesday's run builds Monday from the repaired rates
            tuesday = wait_for("Tuesday's run", lambda: _finished(ws, "2026-09-29T06:00"),
                               log=log)  # fmt: skip
            assert tuesday.outcome == "ok", tuesday.detail
            assert tuesday.detail["watch"]["incidents"] == []
            got = wait_for("the receipt sent", lambda: [
                b for b in hook.on("/owners") if b["event"] == "repair_verified"
                and b.get("incident_id") == "INC-1"], log=log)  # fmt: skip
        built = _rates(ws, "fx.daily_rates", MONDAY)
        assert built == repaired  # no frozen rate was ever built into the models

    told = [b for b in hook.on("/owners") if b.get("incident_id") == "INC-1"]
    events = [b["event"] for b in told]
    assert sorted(events) == ["incident_opened", "proposal_approved", "proposal_requested",
                              "repair_verified"], events  # fmt: skip
    opened = next(b for b in told if b["event"] == "incident_opened")
    assert opened["details"]["source"] == "ingestion:fx_rates_ingest"
    assert "as_of is 2026-09-25" in opened["details"]["cause"]
    assert {"FX monitor", "GMV (USD)", "Q3 close"} <= set(opened["details"]["dashboards"])
    assert got[0]["actor"] == "splice-operator"

    pid = applied[0]["proposal"]
    with Workspace.open(ws) as w:
        p = store.load(w.state, pid)
        assert p.change_class == "reload_ingestion"  # the reload alone: nothing had read Monday
        assert [s.kind for s in p.steps] == ["reload"]
        assert get_incident(w.state.conn, p.incident_id).status == "resolved"
        entries = {e.kind: e.as_dict()["payload"] for e in auditlog.entries(w.state, pid)}
        for kind in ("request", "approve", "applied", "receipt", "operator"):
            who = entries[kind]["principal"]
            assert (who["name"], who["kind"], who["auth"]) == (
                "splice-operator", "agent", "system"), (kind, who)  # fmt: skip
        assert (
            "approved autonomously: L3: 3 clean reload_ingestion" in entries["approve"]["comment"]
        )
        assert entries["verify"]["passed"] is True
        assert auditlog.verify(w.state).intact
    receipt = run_cli(["-w", str(ws), "receipt", pid])
    assert receipt.returncode == 0, receipt.stderr[-2000:]
    assert "Passed: verified" in receipt.stdout
    assert "has not read 2026-09-28 or later yet" in receipt.stdout  # the models, honestly
