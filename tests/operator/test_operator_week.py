"""The seed's week with nobody typing: ``splice serve`` runs the morning schedule on a clock the
test moves; the vendor freezes on Monday; by the end of Tuesday's run the owners' webhook has
the incident (the frozen vendor as its cause, the dashboards in its blast radius) and, pricing
being at L2, the operator's own proposal waits for maria."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.mcp_support import call
from tests.notify.notify_support import http_receiver
from tests.operator.operator_support import (
    MORNING,
    Clock,
    activity,
    copy_with,
    load_day,
    schedule_row,
    serving,
    wait_for,
)
from tests.serve.serve_support import free_port, http_session, make_key
from tests.web.web_support import PageClient, text_of

pytestmark = pytest.mark.slow

MONDAY, TUESDAY = date(2026, 9, 28), date(2026, 9, 29)


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _finished(ws: Path, tick: str) -> object:
    row = schedule_row(ws)
    return row is not None and row.last_tick == _at(tick) and row.finished_at is not None and row


def test_the_seeds_week_runs_watches_tells_and_proposes_by_itself(
    sunday_demo: Path, tmp_path: Path
) -> None:
    from splice.approvals import auditlog
    from splice.demo.vendor import set_incident
    from splice.run.journal import Journal
    from splice.workspace.core import Workspace

    port = free_port()
    with http_receiver() as hook:
        extra = (
            MORNING
            + f"""
[operator]
quiet_seconds = 0
tick_seconds = 0.3
poll_seconds = 1

[[notify]]
name = "owners"
type = "webhook"
url = "{hook.url}/owners"
events = ["incident_opened", "proposal_requested"]

[serve]
port = {port}
housekeeping_seconds = 1
"""
        )
        ws = copy_with(sunday_demo, tmp_path / "travel", extra)
        clock = Clock(ws, "2026-09-28T05:00")
        log = ws / "serve.log"
        key = make_key(ws, "lee", "person", "read")
        with serving(ws, port, clock) as base:
            # first seen on Monday at 05:00: the schedule starts from Sunday's tick (not run)
            wait_for("the schedule to be seen", lambda: schedule_row(ws), log=log)
            assert schedule_row(ws).last_tick == _at("2026-09-27T06:00")
            set_incident(ws, "stale-rates")  # the vendor freezes on Monday

            clock.set("2026-09-28T06:01")  # Monday's run: Sunday's data, all well
            monday = wait_for("Monday's run", lambda: _finished(ws, "2026-09-28T06:00"), log=log)
            assert monday.outcome == "ok", monday.detail
            assert monday.detail["watch"]["incidents"] == []

            load_day(ws, MONDAY)  # the team's cron loads Monday: the vendor re-serves Friday
            clock.set("2026-09-29T06:01")  # Tuesday's run builds Monday, every audit passes
            tuesday = wait_for("Tuesday's run", lambda: _finished(ws, "2026-09-29T06:00"),
                               log=log)  # fmt: skip
            assert tuesday.outcome == "ok", tuesday.detail
            assert tuesday.detail["run"]["status"] == "success"
            assert tuesday.detail["watch"]["incidents"] == ["INC-1"]
            got = wait_for("the owners' webhook",
                           lambda: {b["event"] for b in hook.on("/owners")}
                           >= {"incident_opened", "proposal_requested"}, log=log)  # fmt: skip
            assert got
            _seen_on_the_page_and_over_mcp(base, key)

    opened = next(b for b in hook.on("/owners") if b["event"] == "incident_opened")
    assert opened["incident_id"] == "INC-1"
    assert opened["details"]["source"] == "ingestion:fx_rates_ingest"
    assert "as_of is 2026-09-25" in opened["details"]["cause"]  # the vendor's Friday, on Monday
    assert {"FX monitor", "GMV (USD)", "Q3 close"} <= set(opened["details"]["dashboards"])
    asked = next(b for b in hook.on("/owners") if b["event"] == "proposal_requested")
    assert asked["actor"] == "splice-operator"
    assert "maria" in asked["summary"]

    steps = activity(ws)
    proposed = [a for a in steps if a["kind"] == "propose"]
    assert len(proposed) == 1 and proposed[0]["incident"] == "INC-1"
    assert proposed[0]["rule"].startswith("L2 (propose): domain pricing")
    assert not [a for a in steps if a["kind"] in ("apply", "error")], steps
    with Workspace.open(ws) as w:
        with Journal.for_workspace(w) as j:
            runs = [r for r in j.runs(limit=50) if (r.command or "") == "splice schedule morning"]
        assert [r.status for r in runs] == ["success", "success"]
        requests = [e for e in auditlog.entries(w.state, proposed[0]["proposal"])
                    if e.kind == "request"]  # fmt: skip
        who = requests[0].as_dict()["payload"]["principal"]
        assert (who["name"], who["kind"], who["auth"]) == ("splice-operator", "agent", "system")
        (step,) = [e.as_dict()["payload"] for e in auditlog.entries(w.state, proposed[0]["proposal"])
                   if e.kind == "operator"]  # fmt: skip
        assert step["step"] == "propose" and step["rule"].startswith("L2 (propose)")
        assert step["principal"]["name"] == "splice-operator"
        assert auditlog.verify(w.state).intact


def _seen_on_the_page_and_over_mcp(base: str, key: str) -> None:
    """The schedule, pricing's level and the operator's proposal, as a person and an agent see
    them (the page at /operator; the MCP tools list_schedules and get_operator_activity)."""
    import anyio

    page = PageClient(base)
    try:
        page.signin(key)
        r = page.get("/operator")
        assert r.status_code == 200
        html = r.text
    finally:
        page.close()
    assert 'data-schedule="morning"' in html
    assert 'data-domain="pricing" data-level="L2"' in html
    words = text_of(html)
    assert "schedule morning finished: ok" in words
    assert "L2 (propose): domain pricing lets Splice draft repairs" in words

    async def tools() -> tuple[Any, Any]:
        async with http_session(base, key) as s:
            return (await call(s, "list_schedules"),
                    await call(s, "get_operator_activity", limit=200))  # fmt: skip

    schedules, steps = anyio.run(tools)
    (morning,) = schedules["schedules"]
    assert (morning["name"], morning["last"]["outcome"]) == ("morning", "ok")
    kinds = [a["kind"] for a in steps["activity"]]
    assert "propose" in kinds and "watch" in kinds
