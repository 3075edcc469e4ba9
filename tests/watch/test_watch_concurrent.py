"""Six `splice watch` at once on the stale-rates demo: every one succeeds or refuses cleanly
naming the holder, one incident is opened, and no interval is measured twice."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from watch_support import copy_workspace

from splice.demo import DemoResult


def test_concurrent_watches_measure_once_and_open_one_incident(
    stale_demo_build: DemoResult, tmp_path: Path
) -> None:
    ws = copy_workspace(stale_demo_build.workspace, tmp_path / "travel")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "splice", "watch", "--json"],
            cwd=ws,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = [p.returncode for p in procs]
    for (_out, err), code in zip(outs, codes, strict=True):
        assert code in (0, 2), err[-2000:]
        assert "Traceback" not in err and "This is a bug" not in err, err[-2000:]
        if code == 2:
            assert "another splice watch holds the watch of target 'prod' lock" in err
    done = [json.loads(out) for (out, _), code in zip(outs, codes, strict=True) if code == 0]
    assert done, "no watch finished"
    # the intervals were measured by exactly one of them; the others found nothing new
    measured = [sum(m["new_points"] for m in d["metrics"]) for d in done]
    assert sorted(measured)[:-1] == [0] * (len(measured) - 1) and max(measured) > 0
    con = sqlite3.connect(ws / ".splice" / "state.db")
    try:
        points = con.execute("SELECT COUNT(*) FROM watch_points").fetchone()[0]
        incidents = con.execute("SELECT incident_id, status FROM incidents").fetchall()
    finally:
        con.close()
    assert points == max(measured)
    assert incidents == [("INC-1", "open")]
