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


@pytest.mark.parametrize("level", ["L3", "L4"])
def test_the_feed_caught_as_it_lands_is_reloaded_verified_and_receipted_by_itself(
    sunday_demo: Path, tmp_path: Path, level: str
) -> None:
    """At L3 the incident Splice repaired waits for an owner to close it (an agent may not); at
    L4 Splice closes it."""
    from splice.approvals import auditlog
    from splice.demo.vendor import set_incident
    from splice.repair import store
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
        ws = copy_with(sunday_demo, tmp_path / "travel", extra, levels={"pricing": level})
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
            assert applied[0]["rule"].startswith(f"{level} (")
            assert (
                "domain pricing lets Splice apply a proven reversible repair" in applied[0]["rule"]
            )
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
            _closed(ws, level, base)
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
        entries = {e.kind: e.as_dict()["payload"] for e in auditlog.entries(w.state, pid)}
        for kind in ("request", "approve", "applied", "receipt", "operator"):
            who = entries[kind]["principal"]
            assert (who["name"], who["kind"], who["auth"]) == (
                "splice-operator", "agent", "system"), (kind, who)  # fmt: skip
        assert f"approved autonomously: {level}: 3 clean reload_ingestion" in (
            entries["approve"]["comment"])  # fmt: skip
        assert entries["verify"]["passed"] is True
        assert auditlog.verify(w.state).intact
    receipt = run_cli(["-w", str(ws), "receipt", pid])
    assert receipt.returncode == 0, receipt.stderr[-2000:]
    assert "Passed: verified" in receipt.stdout
    assert "has not read 2026-09-28 or later yet" in receipt.stdout  # the models, honestly


def _closed(ws: Path, level: str, base: str) -> None:
    """At L4 Splice closed the incident; at L3 it is repaired, until an owner closes it."""
    from splice.watch.incidents import get_incident
    from splice.workspace.core import Workspace

    with Workspace.open(ws) as w:
        after = get_incident(w.state.conn, "INC-1")
    closing = [a for a in activity(ws) if a["kind"] in ("close", "awaits-close")]
    if level == "L4":
        assert after.status == "resolved"
        assert [a["kind"] for a in closing] == ["close"]
        return
    assert after.status == "repaired" and "splice incident close INC-1" in after.resolution
    assert [a["kind"] for a in closing] == ["awaits-close"]
    _an_owner_closes_it(ws, base)


def _an_owner_closes_it(ws: Path, base: str) -> None:
    """What Splice repaired by itself at L3 waits for a person: an agent may not close it, nor
    a person who owns another domain; an owner does, on the incident's page (in the audit
    log), once."""
    import json

    from tests.web.web_support import PageClient, text_of

    from splice.approvals import auditlog
    from splice.workspace.core import Workspace

    listed = run_cli(["-w", str(ws), "incidents", "--json"])
    assert [(i["id"], i["status"]) for i in json.loads(listed.stdout)] == [
        ("INC-1", "repaired")]  # fmt: skip
    bot = run_cli(["-w", str(ws), "incident", "close", "INC-1", "--as", "splice-agent"])
    assert bot.returncode != 0 and "an agent never decides" in bot.stderr, bot.stderr
    lee = run_cli(["-w", str(ws), "incident", "close", "INC-1", "--as", "lee"])
    assert lee.returncode != 0 and "only an owner of domain pricing" in lee.stderr, lee.stderr
    pages = {}
    for who in ("lee", "maria"):
        pages[who] = PageClient(base)
        pages[who].signin(make_key(ws, who, "person", "read,propose,approve"))
    try:
        seen = pages["lee"].get("/incidents/INC-1").text
        assert 'data-testid="close-form"' not in seen
        assert "only an owner of domain pricing" in text_of(seen)
        assert 'data-testid="close-form"' in pages["maria"].get("/incidents/INC-1").text
        r = pages["maria"].post("/incidents/INC-1/close", {"note": "read the receipt"})
        assert r.status_code in (200, 303), r.text[-2000:]
        shown = text_of(pages["maria"].get("/incidents/INC-1").text)
    finally:
        for page in pages.values():
            page.close()
    assert "closed by maria (person, " in shown, shown[:1500]
    assert "after Splice's verified repair PR-" in shown
    listed = json.loads(run_cli(["-w", str(ws), "incidents", "--all", "--json"]).stdout)
    assert [(i["id"], i["status"]) for i in listed] == [("INC-1", "resolved")]
    again = run_cli(["-w", str(ws), "incident", "close", "INC-1", "--as", "maria"])
    assert again.returncode != 0 and "INC-1 is resolved" in again.stderr
    with Workspace.open(ws) as w:
        (entry,) = [e.as_dict() for e in auditlog.entries(w.state) if e.kind == "close"]
        assert entry["payload"]["incident_id"] == "INC-1"
        assert entry["payload"]["principal"]["name"] == "maria"
        assert entry["payload"]["comment"] == "read the receipt"
        assert auditlog.verify(w.state).intact
