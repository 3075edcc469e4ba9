"""Faults of the machine, not of the user or of Splice: a warehouse another process holds, a
disk that is full, a warehouse on a read-only file system. Each is one red line and exit 2
(the full disk says a retry can help), never "This is a bug in Splice", and nothing is left
half-written."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import RED_ERROR, plain, splice
from tests.run_lock_holder import holding, run_holding

from splice.demo import DemoResult, relocate

LOCKER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()
"""


def assert_red_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2; the last line on stderr is the red error (a progress spinner may come before
    it), with a fix; no traceback, no "bug"."""
    assert res.returncode == 2, (res.returncode, res.stdout[-1000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "This is a bug" not in res.stderr, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert RED_ERROR in last, last
    line = plain(last)
    assert " Fix: " in line, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"


def _copy(demo: DemoResult, dest: Path) -> Path:
    shutil.copytree(demo.workspace, dest, symlinks=True)
    relocate(dest)
    return dest


def _locked(path: Path) -> contextlib.AbstractContextManager[int]:
    return holding(LOCKER, str(path))


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_run_full_with_the_warehouse_locked(demo_build: DemoResult, tmp_path: Path) -> None:
    ws = _copy(demo_build, tmp_path / "travel")
    with _locked(ws / "warehouse.duckdb") as pid:
        res = splice("run", "--full", cwd=ws)
    assert_red_error(res, "is locked by another process", f"PID {pid}", "a retry may help")


def test_watch_on_a_full_disk(demo_build: DemoResult, tmp_path: Path) -> None:
    ws = _copy(demo_build, tmp_path / "travel")
    with _tmpfs(tmp_path / "small", "16m") as small:
        state = ws / ".splice" / "state.db"
        shutil.copy(state, small / "state.db")
        state.unlink()
        state.symlink_to(small / "state.db")
        filler = small / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
        # room to open the state (its WAL), not to write a watch's history
        with filler.open("r+b") as fh:
            fh.truncate(filler.stat().st_size - 96 * 1024)
        res = splice("watch", "--backfill", cwd=ws)
        assert_red_error(res, "the disk is full", "a retry may help")
        filler.unlink()
        con = sqlite3.connect(small / "state.db")
        try:  # nothing half-written: the watch wrote all or nothing
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert con.execute("SELECT COUNT(*) FROM watch_points").fetchone() == (0,)
        finally:
            con.close()
        again = splice("watch", "--backfill", cwd=ws)
        assert again.returncode == 0, again.stderr


def test_propose_with_the_warehouse_on_a_read_only_file_system(
    stale_demo_build: DemoResult, tmp_path: Path
) -> None:
    ws = _copy(stale_demo_build, tmp_path / "travel")
    watched = splice("watch", cwd=ws)
    assert watched.returncode == 0, watched.stderr
    with _tmpfs(tmp_path / "ro", "400m") as ro:
        wh = ws / "warehouse.duckdb"
        shutil.copy(wh, ro / "warehouse.duckdb")
        wh.unlink()
        wh.symlink_to(ro / "warehouse.duckdb")
        remount = subprocess.run(["mount", "-o", "remount,ro", str(ro)], capture_output=True)
        assert remount.returncode == 0, remount.stderr
        res = splice("propose", "INC-1", "--as", "splice-agent", cwd=ws)
        assert_red_error(res, "cannot write")
        shown = splice("proposals", "--all", "--json", cwd=ws)
        assert shown.returncode == 0 and '"status": "pending"' not in shown.stdout


def test_a_plan_while_a_run_writes_the_warehouse(demo_build: DemoResult, tmp_path: Path) -> None:
    """A plan reads SQLMesh's state in the DuckDB file; while a run in another process holds
    the warehouse it says so (a retry helps) instead of opening the file between two of the
    run's segments, which would make the run's next segment fail on DuckDB's lock."""
    ws = _copy(demo_build, tmp_path / "travel")
    with run_holding(ws) as pid:
        res = splice("plan", cwd=ws)
    assert_red_error(
        res, f"a splice run (pid {pid}, run r-holding) is writing the warehouse",
        "retry when the run ends", "a retry may help",
    )  # fmt: skip
    assert splice("plan", cwd=ws).returncode == 0, "the run ended: the plan reads the state"
