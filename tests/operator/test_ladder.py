"""The ladder acted out by the operator, in this process (the same Operator ``splice serve``
runs), on the demo's week: an org-wide stop holds it; at L3 a restatement still waits for a
person; a proven reversible reload is approved, applied, verified and receipted by
splice-operator."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.operator.operator_support import (
    MORNING,
    Clock,
    activity,
    copy_with,
    load_day,
    proven,
    reload_monday,
    schedule_row,
)

from splice import api
from splice.operator.clock import FileClock
from splice.support.principals import Principal

pytestmark = pytest.mark.slow

MONDAY = date(2026, 9, 28)
QUIET = "\n[operator]\nquiet_seconds = 0\n"
MARIA = Principal.of("maria", kind="person", auth="cli-as")


def _week(sunday_demo: Path, dest: Path, *, levels: dict[str, str] | None = None,
          extra: str = "", ops: Any = None) -> tuple[Path, Clock, Any]:  # fmt: skip
    from splice.demo.vendor import set_incident

    ws = copy_with(sunday_demo, dest, MORNING + QUIET + extra, levels=levels)
    clock = Clock(ws, "2026-09-28T05:00")
    op = api.operator_for_root(ws, clock=FileClock(clock.path))
    if ops is not None:
        op.ops = ops(op.ops)
    op.tick()  # first seen: starts from Sunday's tick
    set_incident(ws, "stale-rates")
    load_day(ws, MONDAY)
    return ws, clock, op


def _proposals(ws: Path) -> list[Any]:
    with api.open_workspace(ws) as w:
        return [p for p, _asked in api.list_proposals(w, include_closed=True)]


def test_an_org_wide_stop_holds_the_runs_and_the_ladder(sunday_demo: Path, tmp_path: Path) -> None:
    from splice.run.journal import Journal
    from splice.workspace.core import Workspace

    ws, clock, op = _week(sunday_demo, tmp_path / "travel")
    with api.open_workspace(ws) as w:
        api.stop(w, principal=MARIA, reason="quarter close")
    clock.set("2026-09-29T06:01")
    op.tick()
    row = schedule_row(ws)
    assert row.outcome == "held" and "quarter close" in row.detail["run"]["held"]
    with Workspace.open(ws) as w, Journal.for_workspace(w) as j:
        assert not [r for r in j.runs(limit=50) if r.command == "splice schedule morning"]
    # [operator] run_during_stop: production runs on and is watched; nothing is proposed
    toml = ws / "splice.toml"
    toml.write_text(toml.read_text().replace("quiet_seconds = 0\n",
                                             "quiet_seconds = 0\nrun_during_stop = true\n"))  # fmt: skip
    clock.set("2026-09-30T06:01")
    op.tick()
    row = schedule_row(ws)
    assert row.outcome == "ok" and row.detail["watch"]["incidents"] == ["INC-1"]
    held = [a for a in activity(ws) if a["kind"] == "held" and a.get("incident") == "INC-1"]
    assert held and held[0]["rule"] == "the org-wide stop", activity(ws)
    assert "quarter close" in held[0]["summary"]
    assert _proposals(ws) == []
    # what the CLI shows of it
    import json
    import os

    from tests.cli_runner import run_cli

    listed = run_cli(["-w", str(ws), "schedule", "list", "--json"])
    assert listed.returncode == 0, listed.stderr
    (morning,) = json.loads(listed.stdout)
    assert morning["last"]["outcome"] == "ok" and morning["do"] == "run+watch"
    status = run_cli(["-w", str(ws), "operator", "status"])
    assert "Org-wide stop by maria: 'quarter close'" in status.stdout
    assert "scheduled runs go on" in status.stdout
    shown = run_cli(["-w", str(ws), "operator", "activity", "--json", "--limit", "3"])
    assert len(json.loads(shown.stdout)) == 3
    by_hand = run_cli(["-w", str(ws), "schedule", "run", "morning", "--json"],
                      env={**os.environ, "SPLICE_OPERATOR_CLOCK": str(clock.path)})  # fmt: skip
    assert by_hand.returncode == 0, by_hand.stderr[-2000:]
    out = json.loads(by_hand.stdout)
    assert (out["outcome"], out["trigger"], out["tick"]) == (
        "ok",
        "by hand",
        "2026-09-30T06:01:00+00:00",
    )
    assert out["run"]["status"] == "success" and out["watch"]["incidents"] == []
    assert schedule_row(ws).last_tick == row.last_tick  # its ticks are not moved
    wrong = run_cli(["-w", str(ws), "schedule", "run", "evening"])
    assert wrong.returncode != 0
    assert "no [[schedule]] named 'evening' in splice.toml (schedules: morning)" in wrong.stderr


def test_at_l3_a_restatement_still_waits_for_a_person(sunday_demo: Path, tmp_path: Path) -> None:
    ws, clock, op = _week(sunday_demo, tmp_path / "travel", levels={"pricing": "L3"},
                          extra="\n")  # fmt: skip
    clock.set("2026-09-29T06:01")
    op.tick()
    steps = activity(ws)
    waits = [a for a in steps if a["kind"] == "waits-for-person"]
    assert len(waits) == 1, steps
    assert "a restatement always needs a person's approval" in waits[0]["rule"]
    (p,) = _proposals(ws)
    assert p.status == "pending" and p.change_class == "restatement"


def _reload_only(ops: Any) -> Any:
    """The operator's actions, drafting a reload of the rates feed for Monday (a proven
    reversible class) instead of the demo's restatement."""
    from splice.operator.service import Operations

    return Operations(run=ops.run, watch=ops.watch,
                      ladder=type(ops.ladder)(propose=reload_monday, apply=ops.ladder.apply,
                                              notify=ops.ladder.notify))  # fmt: skip


def test_at_l3_a_proven_reload_is_approved_applied_and_receipted_by_the_operator(
    sunday_demo: Path, tmp_path: Path
) -> None:
    """The reload runs and is verified as it is: a reload alone does not rewrite the model
    intervals already built from Monday's rates, and the activity says "not verified" then, as
    the verification found (the demo's narrowest repair is a restatement, for a person)."""
    from splice.approvals import auditlog
    from splice.demo.vendor import set_incident
    from splice.workspace.core import Workspace

    ws, clock, op = _week(sunday_demo, tmp_path / "travel", levels={"pricing": "L3"},
                          ops=_reload_only)  # fmt: skip
    proven(ws, 3)
    set_incident(ws, None)  # the vendor fixed its feed before the run: a reload serves Monday
    clock.set("2026-09-29T06:01")
    op.tick()
    steps = activity(ws)
    applied = [a for a in steps if a["kind"] == "apply"]
    assert len(applied) == 1, steps
    assert applied[0]["rule"].startswith("L3 (act reversibly): domain pricing")
    pid = applied[0]["proposal"]
    with Workspace.open(ws) as w:
        entries = {e.kind: e.as_dict()["payload"] for e in auditlog.entries(w.state, pid)}
        for kind in ("request", "approve", "applied", "receipt", "operator"):
            who = entries[kind]["principal"]
            assert (who["name"], who["auth"]) == ("splice-operator", "system"), (kind, who)
        assert (
            "approved autonomously: L3: 3 clean reload_ingestion" in entries["approve"]["comment"]
        )
        verified = entries["verify"]["passed"]
        assert applied[0]["verified"] is verified  # the activity says what the verification found
        assert ("; verified" if verified else "; not verified") in applied[0]["summary"]
        assert auditlog.verify(w.state).intact


@pytest.mark.parametrize("level", ["L0", "L1"])
def test_below_l2_nothing_is_proposed_and_l1_tells_the_owners_at_once(
    story_copy: Path, level: str
) -> None:
    from splice.operator import ladder
    from splice.watch.incidents import get_incident

    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text().replace('autonomy = "L2"', f'autonomy = "{level}"', 1)
                    + '\n[[notify]]\nname = "owners"\ntype = "webhook"\n'
                    'url = "http://127.0.0.1:9/owners"\nevents = ["incident_opened"]\n')  # fmt: skip
    told: list[str] = []
    actions = ladder.Actions(propose=lambda *a, **k: pytest.fail("proposed below L2"),
                             apply=lambda *a, **k: pytest.fail("applied below L3"),
                             notify=lambda w: told.append(w.target))  # fmt: skip
    with api.open_workspace(story_copy) as w:
        inc = get_incident(w.state.conn, "INC-1")
        steps = ladder.act(w, [inc], actions, trigger="test")
    assert [(s.kind, s.level, s.domain) for s in steps] == [
        ("record" if level == "L0" else "notify", level, "pricing")
    ]
    assert told == ([] if level == "L0" else ["prod"])
    assert activity(story_copy)[-1]["rule"].startswith(f"{level} (")
    # whoever sends the outbox next: at L0 the incident is not announced, at L1 it is
    from splice.notify.outbox import enqueue

    with api.open_workspace(story_copy) as w:
        enqueue(w)
        queued = [r[0] for r in w.state.conn.execute(
            "SELECT event_key FROM notify_deliveries WHERE event = 'incident_opened'")]  # fmt: skip
    assert queued == ([] if level == "L0" else ["incident:INC-1"])


def test_triggers_close_together_become_one_watch_once_quiet(story_copy: Path) -> None:
    """Three loads reported within the quiet period are one watch, after it, of everything
    downstream of all three."""
    from splice.operator import store
    from splice.operator.clock import FileClock

    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text() + "\n[operator]\nquiet_seconds = 30\npoll_seconds = 3600\n")
    clock = Clock(story_copy, "2026-10-01T07:00:00")
    op = api.operator_for_root(story_copy, clock=FileClock(clock.path))
    t0 = datetime(2026, 10, 1, 7, 0, tzinfo=UTC).timestamp()
    with api.open_workspace(story_copy) as w:
        for i, node in enumerate(["ingestion:fx_rates_ingest", "ingestion:bookings_load",
                                  "ingestion:fx_rates_ingest"]):  # fmt: skip
            store.add_trigger(w.state, w.target, "openlineage", {"nodes": [node]}, at=t0 + i * 10)
    clock.set("2026-10-01T07:00:40")  # 20 s after the last: not quiet yet
    assert op.watch_triggered() is None
    clock.set("2026-10-01T07:00:51")
    done = op.watch_triggered()
    assert done is not None and done["incidents"] == []
    (watch,) = [a for a in activity(story_copy) if a["kind"] == "watch"]
    assert len(watch["triggers"]) == 3
    assert {"fx_rate", "gmv_usd"} <= set(watch["only"])  # downstream of both feeds
    assert op.watch_triggered() is None  # taken: not watched again


def test_ticks_that_fall_while_the_run_still_runs_are_skipped_and_logged(
    sunday_demo: Path, tmp_path: Path
) -> None:
    """A schedule every 5 minutes whose run takes 12: the two ticks that fall meanwhile are
    skipped and logged (runs never overlap, nor run late); the next tick runs."""
    from splice.operator.service import Operations
    from splice.run.journal import Journal
    from splice.workspace.core import Workspace

    often = ('\n[[schedule]]\nname = "often"\ncron = "*/5 * * * *"\ntimezone = "UTC"\n'
             'do = "run"\n')  # fmt: skip
    ws = copy_with(sunday_demo, tmp_path / "travel", often + QUIET)
    clock = Clock(ws, "2026-09-28T05:58")
    op = api.operator_for_root(ws, clock=FileClock(clock.path))
    real = op.ops
    ends = iter(["2026-09-28T06:12", "2026-09-28T06:16"])

    def slow(w: Any, *a: Any, **k: Any) -> Any:
        out = real.run(w, *a, **k)
        clock.set(next(ends))  # the run took this long, on the operator's clock
        return out

    op.ops = Operations(run=slow, watch=real.watch, ladder=real.ladder)
    op.tick()  # first seen: starts from 05:55
    clock.set("2026-09-28T06:00:30")
    op.tick()  # the 06:00 run, until 06:12
    op.tick()  # 06:05 and 06:10 fell while it ran
    row = schedule_row(ws, "often")
    assert row.last_tick == datetime(2026, 9, 28, 6, 10, tzinfo=UTC).timestamp()
    assert row.outcome == "ok"  # the last run's outcome stands
    (skipped,) = [a for a in activity(ws) if a["kind"] == "skipped"]
    assert skipped["skipped"] == 2 and skipped["overlap"] is True
    assert "fell while the run of 2026-09-28 06:00Z was still running" in skipped["summary"]
    clock.set("2026-09-28T06:15:05")
    op.tick()  # the next tick runs
    with Workspace.open(ws) as w, Journal.for_workspace(w) as j:
        runs = [r for r in j.runs(limit=50) if r.command == "splice schedule often"]
    assert len(runs) == 2
