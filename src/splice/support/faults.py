"""Fault-injection points, for the tests that kill Splice at a chosen moment.

``SPLICE_FAULT_PAUSE`` names points (comma separated); when a process reaches one it writes
``.splice/faults/POINT.reached`` (holding its pid) and sleeps (``SPLICE_FAULT_PAUSE_SECONDS``,
default 600), so a test can SIGKILL it exactly there. Points: ``segment:ID`` (before a run's
segment starts: for a repair ``segment:s2`` is after the reload and before the restatement),
``verify`` (a repair ran, before it is verified). Unset, every call returns at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def pause(splice_dir: Path, point: str) -> None:
    wanted = os.environ.get("SPLICE_FAULT_PAUSE")
    if not wanted or point not in {p.strip() for p in wanted.split(",")}:
        return
    marks = splice_dir / "faults"
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"{point.replace(':', '-')}.reached").write_text(str(os.getpid()))
    time.sleep(float(os.environ.get("SPLICE_FAULT_PAUSE_SECONDS", "600")))
