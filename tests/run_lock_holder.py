"""Another process holding a `splice run`'s warehouse lock (``.splice/locks/warehouse.lock``,
with its pid and run id written in), as a run holds it between two of its segments while the
DuckDB file itself is free for a moment."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

HOLDER = """
import fcntl, json, os, sys
from pathlib import Path
from splice.warehouse.locks import lock_file
path = lock_file(Path(sys.argv[1]), "warehouse")
path.parent.mkdir(parents=True, exist_ok=True)
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, json.dumps({"pid": os.getpid(), "run_id": "r-holding"}).encode(), 0)
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def holding(script: str, arg: str) -> Iterator[int]:
    """While open, a child runs ``script`` with ``arg`` (it prints "locked" once it holds what
    it takes, then waits for its stdin to close); yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, arg], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder.pid
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def run_holding(ws: Path) -> contextlib.AbstractContextManager[int]:
    """While open, a child process holds ``ws``'s warehouse run lock; yields its pid."""
    return holding(HOLDER, str(ws / ".splice" / "locks"))
