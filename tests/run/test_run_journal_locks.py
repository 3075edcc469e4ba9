"""The run journal and the run lock, with real processes (no tools)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from splice.run.journal import Journal
from splice.run.locks import RunLock, RunLockedError
from splice.state.store import StateStore
from splice.warehouse.locks import is_held

SRC = str(Path(__file__).resolve().parents[2] / "src")


def journal_at(tmp_path: Path) -> Journal:
    path = tmp_path / ".splice" / "state.db"
    StateStore.open(path).close()  # migrations, as the workspace does
    return Journal(path)


HOLDER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {src!r})
    from pathlib import Path
    from splice.run.journal import Journal
    from splice.run.locks import RunLock
    from splice.state.store import StateStore
    root = Path({root!r})
    StateStore.open(root / ".splice" / "state.db").close()
    j = Journal(root / ".splice" / "state.db")
    lock = RunLock(root / ".splice" / "locks", j, ["target:prod"], run_id="r-holder",
                   command="splice run -s pricing:*").acquire()
    child = 0
    if {fork}:
        child = os.fork()
        if child == 0:  # a child that outlives its parent, as SQLMesh's workers can
            time.sleep(60)
            os._exit(0)
        time.sleep(0.3)  # let the child start (it closes its copy of the lock file at once)
    print("held", child, flush=True)
    time.sleep(60)
    """
)


def start_holder(root: Path, *, fork: bool = False) -> tuple[subprocess.Popen[str], int]:
    """A process holding the prod lock (and its forked child's pid, 0 without one)."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(src=SRC, root=str(root), fork=fork)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    word, child = p.stdout.readline().split()
    assert word == "held"
    return p, int(child)


def test_journal_records_events_in_order(tmp_path: Path) -> None:
    with journal_at(tmp_path) as j:
        j.open_run("r1", target="prod", selector="x+", exclude=None, command="splice run -s x+")
        j.start_run("r1", data={"segments": []})
        j.event("r1", "node_started", project="p", segment_id="s1", node_id="p:a")
        j.event(
            "r1",
            "node_finished",
            project="p",
            segment_id="s1",
            node_id="p:a",
            status="success",
            duration=0.5,
            rows=3,
        )
        j.finish_run("r1", "success", {"counts": {"success": 1}})
        evs = j.events("r1")
        assert [e.kind for e in evs] == [
            "run_started",
            "node_started",
            "node_finished",
            "run_finished",
        ]
        assert [e.seq for e in evs] == [1, 2, 3, 4]
        assert evs[2].rows == 3 and evs[2].project == "p"
        (rec,) = j.runs()
        assert rec.status == "success" and rec.summary["counts"] == {"success": 1}
        assert j.run("r").run_id == "r1"  # a unique prefix finds it


def test_second_holder_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    holder, _ = start_holder(tmp_path)
    try:
        with journal_at(tmp_path) as j, pytest.raises(RunLockedError) as err:
            RunLock(tmp_path / ".splice" / "locks", j, ["target:prod"]).acquire()
        msg = err.value.message
        assert f"pid {holder.pid}" in msg and "splice run -s pricing:*" in msg
        assert "since 20" in msg and "r-holder" in msg and "host" in msg
        assert err.value.holder["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("fork", [False, True], ids=["plain", "with-forked-child"])
def test_sigkilled_holder_is_taken_over(tmp_path: Path, fork: bool) -> None:
    holder, child = start_holder(tmp_path, fork=fork)
    lock_dir = tmp_path / ".splice" / "locks"
    assert is_held(lock_dir, "target:prod")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    try:
        # a child forked while the lock was held (still alive here) does not keep it
        assert not is_held(lock_dir, "target:prod")
        _take_over(tmp_path, lock_dir, holder.pid)
    finally:
        if child:
            os.kill(child, signal.SIGKILL)


def _take_over(tmp_path: Path, lock_dir: Path, dead_pid: int) -> None:
    with journal_at(tmp_path) as j:
        lock = RunLock(lock_dir, j, ["target:prod"], run_id="r2", command="splice run").acquire()
        try:
            assert len(lock.notes) == 1
            assert f"pid {dead_pid}" in lock.notes[0] and "that process is gone" in lock.notes[0]
            assert j.conn.execute("SELECT run_id, pid FROM run_locks").fetchall() == [
                ("r2", os.getpid())
            ]
        finally:
            lock.release()
        assert j.conn.execute("SELECT COUNT(*) FROM run_locks").fetchone() == (0,)


def test_interrupted_run_is_closed_by_the_next(tmp_path: Path) -> None:
    with journal_at(tmp_path) as j:
        j.open_run("dead", target="prod", selector=None, exclude=None, command="splice run")
        j.start_run("dead")
        j.event("dead", "segment_started", project="finance", segment_id="s1")
        j.event("dead", "node_started", project="finance", segment_id="s1", node_id="finance:a")
        j.event("dead", "node_started", project="finance", segment_id="s1", node_id="finance:b")
        j.event(
            "dead",
            "node_finished",
            project="finance",
            segment_id="s1",
            node_id="finance:a",
            status="success",
        )
        (rec,) = j.running()
        written = j.mark_interrupted(rec, note="interrupted: test")
        assert [e.node_id for e in written] == ["finance:b"]
        assert j.run("dead").status == "interrupted"
        kinds = [(e.kind, e.status) for e in j.events("dead")][-3:]
        assert kinds == [
            ("node_finished", "interrupted"),
            ("segment_finished", "interrupted"),
            ("run_finished", "interrupted"),
        ]
