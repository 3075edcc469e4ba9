"""Two runs at once, and a run SIGKILLed half-way, through the CLI in subprocesses.

One scenario (module fixture), asserted by several tests: run A starts (pricing has a new day
to fill, then finance builds, with a slow dbt Python model at its end); while A is in its dbt
segment, run B is started and refused; A is SIGKILLed; then run C resumes.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from run_support import (
    NEXT_DAY,
    add_slow_model,
    attempts,
    query,
    runs_json,
    splice_bg,
    splice_cli,
    wait_for_event,
)

from splice.demo import relocate
from splice.run.locks import target_lock
from splice.warehouse.locks import WAREHOUSE_LOCK, is_held


@pytest.fixture(scope="module")
def killed(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ws = tmp_path_factory.mktemp("kill") / "travel"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    relocate(ws)
    slow = add_slow_model(ws)
    out: dict[str, Any] = {"ws": ws, "slow": slow}

    a = splice_bg(
        "run", "--execution-time", NEXT_DAY, cwd=ws, env={"SPLICE_TEST_SLOW_SECONDS": "120"}
    )
    try:
        wait_for_event(ws, "node_started", slow, proc=a)
        out["a_pid"] = a.pid
        out["while_running"] = runs_json(ws)
        out["b"] = splice_cli("run", "--execution-time", NEXT_DAY, cwd=ws, timeout=60)
        out["pricing_attempts_before_kill"] = {
            k: v for k, v in attempts(ws).items() if k.startswith("pricing:")
        }
    finally:
        a.send_signal(signal.SIGKILL)
        a.communicate(timeout=30)
    out["a_rc"] = a.returncode
    out["held_after_kill"] = [
        is_held(ws / ".splice" / "locks", n) for n in (target_lock("prod"), WAREHOUSE_LOCK)
    ]
    out["attempts_after_kill"] = attempts(ws)
    out["after_kill"] = runs_json(ws)  # the journal notices the dead holder
    c = splice_cli("run", "--execution-time", NEXT_DAY, "--json", cwd=ws)
    out["c"] = c
    out["c_report"] = json.loads(c.stdout) if c.stdout.strip().startswith("{") else None
    return out


def test_second_run_is_refused_naming_the_holder(killed: dict[str, Any]) -> None:
    b = killed["b"]
    assert b.returncode == 2, b.stderr
    err = " ".join(b.stderr.split())
    assert f"pid {killed['a_pid']}" in err
    assert f"host {socket.gethostname()}" in err
    assert f"(splice run --execution-time {NEXT_DAY})" in err  # the holder's command
    assert "since 20" in err and "s ago" in err
    (running,) = [r for r in killed["while_running"] if r["status"] == "running"]
    assert running["pid"] == killed["a_pid"]
    assert running["run_id"] in err


def test_sigkill_leaves_state_consistent(killed: dict[str, Any]) -> None:
    ws: Path = killed["ws"]
    assert killed["a_rc"] == -signal.SIGKILL
    # the kernel released both locks with the process
    assert killed["held_after_kill"] == [False, False]
    # pricing's segment had finished: committed; finance's was cut: its nodes stay "running"
    # attempts, which the next plan reads as interrupted
    assert set(killed["pricing_attempts_before_kill"].values()) == {"succeeded"}
    after = killed["attempts_after_kill"]
    assert after[killed["slow"]] == "running" and after["finance:fct_gmv_qtd"] == "running"
    (dead,) = [r for r in killed["after_kill"] if r["pid"] == killed["a_pid"]]
    assert dead["status"] == "interrupted"
    shown = splice_cli("runs", "show", dead["run_id"], "--json", cwd=ws)
    events = json.loads(shown.stdout)["events"]
    last = {(e["kind"], e["node_id"]): e["status"] for e in events}
    assert last[("node_finished", killed["slow"])] == "interrupted"
    assert events[-1]["kind"] == "run_finished" and events[-1]["status"] == "interrupted"
    assert [
        e["status"] for e in events if e["kind"] == "segment_finished" and e["project"] == "pricing"
    ] == ["success"]
    # the warehouse opens, and holds its last good state
    assert query(ws, "SELECT COUNT(*) FROM finance.fct_gmv_qtd") == [(92,)]


def test_next_run_picks_up_what_is_left(killed: dict[str, Any]) -> None:
    c = killed["c"]
    assert c.returncode == 0, c.stderr
    rep = killed["c_report"]
    built = {n for n, r in rep["nodes"].items() if r["status"] == "success"}
    assert killed["slow"] in built and "finance:fct_gmv_qtd" in built
    assert not any(n.startswith("pricing:") for n in built)  # committed before the kill
    assert all(s["project"] == "finance" for s in rep["segments"])
    notes = " ".join(rep["notes"])
    assert f"pid {killed['a_pid']}" in notes and "that process is gone" in notes
    assert set(attempts(killed["ws"]).values()) == {"succeeded"}
