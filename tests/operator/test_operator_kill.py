"""``splice serve`` killed (SIGKILL) in the middle of an autonomous apply: the next start finds
what the recovery of killed applies handles (the proposal interrupted, the warehouse back to its
undo) and the operator goes on with its schedules."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.operator.operator_support import (
    Clock,
    activity,
    copy_with,
    proven,
    reload_monday,
    schedule_row,
    serving,
    wait_for,
)
from tests.serve.serve_support import free_port

pytestmark = pytest.mark.slow


def _rows(ws: Path) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute("SELECT * FROM raw.fx_rates WHERE rate_date = DATE '2026-09-28' "
                           "ORDER BY ALL").fetchall()  # fmt: skip
    finally:
        con.close()


def test_a_server_killed_in_an_autonomous_apply_recovers_and_resumes_its_schedules(
    stale_story: Any, tmp_path: Path
) -> None:
    from splice import api
    from splice.demo.vendor import set_incident
    from splice.operator.ladder import operator_principal

    ws = copy_with(stale_story.build.workspace, tmp_path / "travel", "")
    port = free_port()
    toml = ws / "splice.toml"
    text = toml.read_text().replace('autonomy = "L2"', 'autonomy = "L3"', 1)
    toml.write_text(
        text
        + f"""
[[schedule]]
name = "check"
cron = "0 7 * * *"
do = "watch"

[operator]
quiet_seconds = 0
tick_seconds = 0.3

[serve]
port = {port}
housekeeping_seconds = 1
"""
    )
    proven(ws, 3)
    set_incident(ws, None)  # the vendor fixed its feed: the reload would load Friday no more
    # the operator drafted a reload before it stopped (its own proposal, pending)
    with api.open_workspace(ws) as w:
        p = reload_monday(w, "INC-1", principal=operator_principal(w))
    before = _rows(ws)
    clock = Clock(ws, "2026-10-01T06:00")
    reached = ws / ".splice" / "faults" / "segment-s1.reached"
    with serving(ws, port, clock, SPLICE_FAULT_PAUSE="segment:s1",
                 SPLICE_FAULT_PAUSE_SECONDS="300"):  # fmt: skip
        wait_for("the apply to reach its reload", reached.exists, log=ws / "serve.log")
        os.kill(int(reached.read_text()), signal.SIGKILL)  # the server, mid-apply
    assert _status(ws, p.proposal_id) == "applying"  # as the killed server left it

    with serving(ws, port, clock) as _base:  # the next start
        wait_for("the recovery", lambda: _status(ws, p.proposal_id) == "interrupted",
                 log=ws / "serve.log")  # fmt: skip
        assert _rows(ws) == before  # the undo restored (nothing was reloaded yet)
        # the server was "down" over three 07:00 ticks: the latest runs, once
        clock.set("2026-10-03T07:01")
        row = wait_for("the schedule after the restart",
                       lambda: (r := schedule_row(ws, "check")) and r.finished_at and r,
                       log=ws / "serve.log")  # fmt: skip
        assert row.outcome == "ok" and row.detail["tick"] == "2026-10-03T07:00:00+00:00"
    steps = activity(ws)
    skipped = [a for a in steps if a["kind"] == "skipped"]
    assert [a["skipped"] for a in skipped] == [2]  # 1 and 2 October: logged, not run
    started = [a for a in steps if a["kind"] == "schedule" and "started" in a["summary"]]
    assert len(started) == 1
    # interrupted is not pending: the operator does not try it again by itself
    assert not [a for a in steps if a["kind"] == "apply"]


def _status(ws: Path, proposal_id: str) -> str:
    from splice.repair import store
    from splice.workspace.core import Workspace

    with Workspace.open(ws) as w:
        return store.load(w.state, proposal_id).status
