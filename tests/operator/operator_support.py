"""Helpers of the operator tests: a private copy of a demo workspace with schedules, a clock
the test moves, the outside world's loads, and a real ``splice serve`` with that clock."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

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
def serving(ws: Path, port: int, clock: Clock, **env: str) -> Iterator[str]:
    """``splice serve`` of ``ws`` on 127.0.0.1:port, its operator on ``clock``; yields its URL
    (``env``: more environment, e.g. a fault-injection point)."""
    from tests.serve.serve_support import running_server

    with running_server(ws, port, env={"SPLICE_OPERATOR_CLOCK": str(clock.path), **env}) as base:
        yield base


def reload_monday(w: Any, incident_id: str, *, principal: Any) -> Any:
    """A reload of the rates feed for Monday 2026-09-28 (a proven reversible class), drafted
    for ``incident_id`` by ``principal``: a real proposal with its undo captured and tested."""
    import time as clock

    from splice.repair import store, undo
    from splice.repair.flow import request_approval
    from splice.repair.model import Proposal, Step

    monday = date(2026, 9, 28)
    now = clock.time()
    argv = ["python", "ingest/fx_rates_ingest.py", "--start", "2026-09-28", "--end", "2026-09-28"]
    p = Proposal(
        store.new_proposal_id(w.state), incident_id, w.target, "pricing", "reload_ingestion",
        "reload fx_rates_ingest for Monday", "stale vendor rates", monday, monday,
        [Step("reload", "ingestion", ["ingestion:fx_rates_ingest"], monday, monday, argv,
              {"runner": "dlt", "writes": ["raw.fx_rates"], "cwd": str(w.root)})],
        [" ".join(argv)], {}, None, principal.name, now, now + 3600,
    )  # fmt: skip
    store.save(w.state, p, principal=principal)
    entries = undo.capture(w, p.proposal_id, [("ingestion:fx_rates_ingest",
                           "warehouse.raw.fx_rates", "rate_date", monday, monday)])  # fmt: skip
    undo.verify_restorable(w, entries)
    return request_approval(w, p.proposal_id, entries, principal=principal, now=now)


def proven(ws: Path, n: int) -> None:
    """``n`` clean (applied and verified) reload_ingestion applications of pricing before (its
    proven record)."""
    from tests.repair.record_support import clean_reloads

    from splice import api

    with api.open_workspace(ws) as w:
        clean_reloads(w, "pricing", n, at=time.time() - 1000)
