"""Helpers of the operator tests: a private copy of a demo workspace with schedules, a clock
the test moves, the outside world's loads, and a real ``splice serve`` with that clock."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from tests.mcp.mcp_support import child_env

from splice.demo import relocate

MORNING = """
[[schedule]]
name = "morning"
cron = "0 6 * * *"
timezone = "UTC"
do = "run+watch"
"""


def copy_with(src: Path, dest: Path, extra: str, *, levels: dict[str, str] | None = None) -> Path:
    """A private copy of ``src`` with ``extra`` appended to its splice.toml and each domain's
    autonomy set as ``levels`` says (the demo has pricing at L2, finance at L1)."""
    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)
    toml = dest / "splice.toml"
    text = toml.read_text()
    for name, level in (levels or {}).items():
        head = f'name = "{name}"'
        start = text.index(head)
        at = text.index("autonomy = ", start)
        end = text.index("\n", at)
        text = text[:at] + f'autonomy = "{level}"' + text[end:]
    toml.write_text(text + extra)
    return dest


class Clock:
    """The operator's clock (``SPLICE_OPERATOR_CLOCK``): a file the test writes."""

    def __init__(self, ws: Path, start: str) -> None:
        self.path = ws / ".splice" / "operator-clock"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.set(start)

    def set(self, when: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(when)
        tmp.replace(self.path)


def load_day(ws: Path, day: date) -> None:
    """The outside world's morning load of ``day`` (the team's cron runs the dlt pipelines)."""
    from splice.demo.bookings import load_bookings
    from splice.demo.ingest import ingest_fx_rates

    ingest_fx_rates(ws, day, day)
    load_bookings(ws, day, day)


def schedule_row(ws: Path, name: str = "morning") -> Any:
    """What the state says of the schedule now (read-only: no session is started)."""
    from splice.operator import store
    from splice.workspace.core import Workspace

    with Workspace.open(ws) as w:
        if not w.state_exists:
            return None
        return store.schedule_rows(w.state).get((name, w.target))


def activity(ws: Path) -> list[dict[str, Any]]:
    from splice.operator.service import activity as read
    from splice.workspace.core import Workspace

    with Workspace.open(ws) as w:
        return list(reversed(read(w, limit=500)))


def wait_for(
    what: str, check: Callable[[], Any], *, timeout: float = 240.0, log: Path | None = None
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            tail = log.read_text()[-4000:] if log is not None and log.exists() else ""
            raise TimeoutError(f"waited {timeout:.0f} s for {what}\n{tail}")
        time.sleep(0.3)


@contextmanager
def serving(ws: Path, port: int, clock: Clock, *, timeout: float = 180.0) -> Iterator[str]:
    """``splice serve`` of ``ws`` on 127.0.0.1:port, its operator on ``clock``; yields its URL."""
    log = open(ws / "serve.log", "w")  # noqa: SIM115 - closed below
    env = {**child_env(), "SPLICE_OPERATOR_CLOCK": str(clock.path)}
    proc = subprocess.Popen([sys.executable, "-m", "splice", "--workspace", str(ws), "serve"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError((ws / "serve.log").read_text())
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError((ws / "serve.log").read_text())
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
