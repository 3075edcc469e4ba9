"""`splice apply` killed (SIGKILL) at each step of the demo repair: the next command finds the
proposal, restores the undo (or, killed after the run, leaves the finished repair), and the
warehouse equals one or the other, never a mix; a reload's child process dies with its parent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from principals_support import approve_everywhere, as_principal
from tests.cli_runner import run_cli

from splice.demo import relocate
from splice.demo.story import StoryResult, tell_repair
from splice.demo.vendor import set_incident


@pytest.fixture(scope="module")
def story(stale_story: StoryResult) -> StoryResult:
    """The session's story up to the diagnosis (read-only: copy it)."""
    return stale_story


def _copy(story: StoryResult, dest: Path) -> Path:
    shutil.copytree(story.build.workspace, dest, symlinks=True)
    relocate(dest)
    set_incident(dest, None)  # the vendor fixed its feed
    return dest


def _snapshot(ws: Path, relations: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every relation; dlt's own load ids left out (a reload makes new ones)."""
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        out = {}
        for r in relations:
            cols = [c for c in con.execute(f"SELECT * FROM {r} LIMIT 0").fetchdf().columns
                    if not c.startswith("_dlt_")]  # fmt: skip
            sel = ", ".join(f'"{c}"' for c in cols)
            out[r] = con.execute(f"SELECT {sel} FROM {r} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def repaired(story: StoryResult, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The finished repair, for comparison: its relations and their rows."""
    ws = _copy(story, tmp_path_factory.mktemp("done") / "travel")
    done = tell_repair(ws, story.incidents[0].incident_id)
    relations = [u.relation for u in done.proposal.undo]
    return {"relations": relations, "rows": _snapshot(ws, relations)}


def _proposed(story: StoryResult, ws: Path) -> tuple[str, list[str]]:
    from splice.repair.flow import propose
    from splice.workspace.core import Workspace

    with Workspace.open(ws) as w:
        p = propose(w, story.incidents[0].incident_id, principal=as_principal("splice-agent"))
        approve_everywhere(w, p.proposal_id, "maria")
    return p.proposal_id, [u.relation for u in p.undo]


def _splice(ws: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "splice", *args],
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"it ended before {path.name}: {out[-1500:]} {err[-1500:]}")
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.1)


def _status(ws: Path, pid: str) -> str:
    done = run_cli(["proposals", "--all", "--json"], cwd=ws)
    assert done.returncode == 0, done.stderr
    (p,) = [p for p in json.loads(done.stdout) if p["proposal_id"] == pid]
    return str(p["status"])


@pytest.mark.parametrize(
    ("point", "after"),
    [
        ("segment:s2", "undo"),  # the reload done, the restatement not started
        ("segment:s3", "undo"),  # SQLMesh restated, dbt not rebuilt
        ("verify", "repair"),  # the run finished, not yet verified
    ],
)
def test_a_killed_apply_leaves_the_undo_or_the_finished_repair(
    story: StoryResult, repaired: dict[str, Any], tmp_path: Path, point: str, after: str
) -> None:
    ws = _copy(story, tmp_path / "travel")
    pid, relations = _proposed(story, ws)
    before = _snapshot(ws, relations)
    proc = _splice(ws, "apply", pid, "--as", "maria", SPLICE_FAULT_PAUSE=point,
                   SPLICE_FAULT_PAUSE_SECONDS="300")  # fmt: skip
    _wait_for(ws / ".splice" / "faults" / f"{point.replace(':', '-')}.reached", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    # the next command notices: the proposal is never stuck in applying
    status = _status(ws, pid)
    now = _snapshot(ws, relations)
    if after == "undo":
        assert status == "interrupted"
        assert now == before, "the warehouse is not the undo"
    else:
        assert status == "applied"
        assert now == repaired["rows"], "the warehouse is not the finished repair"
        # its incident stays open until verified: splice verify runs the verification again,
        # judging the origin against the values recorded when the repair began
        ver = run_cli(["verify", pid, "--as", "maria", "--json"], cwd=ws)
        assert ver.returncode == 0, (ver.stdout + ver.stderr)[-3000:]
        v = json.loads(ver.stdout)["verification"]
        assert v["passed"] and v["summary"].startswith("verified again"), v["summary"]
        assert v["fault_test"]["cases"], "the values as found were not recorded before the kill"
    # a person can act on it: the next run sees what the repair left, and proposing again works
    run = run_cli(["run", "--json"], cwd=ws)
    assert run.returncode == 0, run.stderr[-2000:]
    if after == "undo":
        again = run_cli(["propose", story.incidents[0].incident_id, "--as", "splice-agent"], cwd=ws)
        assert again.returncode == 0, again.stderr[-2000:]


def test_splice_run_first_recovers_a_killed_apply(story: StoryResult, tmp_path: Path) -> None:
    # the recovery is the repair layer's; splice run (through splice.api) does it first, under
    # its run lock, and says so in the report
    ws = _copy(story, tmp_path / "travel")
    pid, relations = _proposed(story, ws)
    before = _snapshot(ws, relations)
    proc = _splice(ws, "apply", pid, "--as", "maria", SPLICE_FAULT_PAUSE="segment:s2",
                   SPLICE_FAULT_PAUSE_SECONDS="300")  # fmt: skip
    _wait_for(ws / ".splice" / "faults" / "segment-s2.reached", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _snapshot(ws, relations) != before, "the reload had not changed the warehouse yet"
    run = run_cli(["run", "--json"], cwd=ws)
    assert run.returncode == 0, run.stderr[-2000:]
    notes = json.loads(run.stdout)["notes"]
    assert any(f"{pid} is marked interrupted" in n for n in notes), notes
    assert _status(ws, pid) == "interrupted"


SLOW_RELOAD = """
import os, sys, time
from pathlib import Path
import duckdb
Path(".splice/reload-started").write_text(str(os.getpid()))
time.sleep(20)
con = duckdb.connect("warehouse.duckdb")
con.execute("DELETE FROM raw.fx_rates WHERE rate_date BETWEEN ? AND ?", [sys.argv[2], sys.argv[4]])
con.close()
Path(".splice/reload-finished").write_text("done")
"""


def test_a_reload_child_dies_with_its_killed_parent(story: StoryResult, tmp_path: Path) -> None:
    ws = _copy(story, tmp_path / "travel")
    (ws / "ingest" / "slow_reload.py").write_text(SLOW_RELOAD)
    toml = ws / "splice.toml"
    toml.write_text(
        toml.read_text().replace('"ingest/fx_rates_ingest.py"', '"ingest/slow_reload.py"')
    )
    pid, relations = _proposed(story, ws)
    before = _snapshot(ws, relations)
    proc = _splice(ws, "apply", pid, "--as", "maria")
    _wait_for(ws / ".splice" / "reload-started", proc)
    child = int((ws / ".splice" / "reload-started").read_text())
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists(), "the reload outlived its parent"
    assert _status(ws, pid) == "interrupted"
    time.sleep(1)
    assert not (ws / ".splice" / "reload-finished").exists()
    assert _snapshot(ws, relations) == before
