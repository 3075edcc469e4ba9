"""Repairs applied in the background: the page's Apply answers at once with a progress view, and
the apply runs in a thread of the server, once.

The apply itself is :func:`splice.api.apply`, unchanged: its checks (who may apply, the org-wide
stop, the undo still matching the warehouse), its locks (the run's, the warehouse's) and its
recovery of an apply whose process died are the library's. The server keeps one job per
proposal: a second Apply while one runs (a double click, a second tab) joins the running job
and never starts another; and should two servers be asked at once, the library lets one of them
move the proposal to ``applying`` and refuses the other ("it runs once").

A job remembers its steps in words and the run's events (segments and nodes as they finish),
which the progress view (``/proposals/ID/applying``) shows and refreshes until the apply ends.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from splice import api
from splice.errors import SpliceError
from splice.support.principals import Principal

log = logging.getLogger("splice.web")
#: At most this many progress lines are kept per job (the first and the latest).
MAX_LINES = 400


@dataclass
class ApplyJob:
    """One apply running (or run) in the background."""

    proposal_id: str
    by: str
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    lines: list[tuple[float, str]] = field(default_factory=list)
    error: str | None = None
    fix: str | None = None
    status: str | None = None  # the proposal's status when the apply ended
    run_id: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None

    def say(self, text: str) -> None:
        self.lines.append((time.time(), text))
        if len(self.lines) > MAX_LINES:
            del self.lines[20 : len(self.lines) - MAX_LINES + 20]

    def on_event(self, ev: Any) -> None:
        """A run event in words (segments and nodes as they finish)."""
        line = event_line(ev)
        if ev.kind == "run_started":
            self.run_id = ev.run_id
        if line:
            self.say(line)


def event_line(ev: Any) -> str | None:
    """One journal event as a progress line, or None for those not worth a line.

    >>> from splice.run.journal import RunEvent
    >>> event_line(RunEvent("r1", 1, 0.0, "node_finished", project="finance",
    ...            segment_id="s2", node_id="finance:fct", status="success", duration=1.25))
    'finance:fct: success (1.2 s)'
    >>> event_line(RunEvent("r1", 2, 0.0, "segment_started", project="pricing", segment_id="s1"))
    'segment s1 (pricing) started'
    """
    from splice.support.numbers import duration

    took = f" ({duration(ev.duration)})" if ev.duration is not None else ""
    if ev.kind == "run_started":
        return f"run {ev.run_id} started"
    if ev.kind == "segment_started":
        return f"segment {ev.segment_id} ({ev.project}) started"
    if ev.kind == "segment_finished":
        return f"segment {ev.segment_id} ({ev.project}): {ev.status}{took}"
    if ev.kind in ("node_finished", "check_finished") and ev.node_id:
        return f"{ev.node_id}: {ev.status}{took}"
    if ev.kind == "run_finished":
        return f"run {ev.run_id}: {ev.status}"
    return None


class Applies:
    """The server's apply jobs, one per proposal."""

    def __init__(self, hub: Any) -> None:
        self.hub = hub
        self._lock = threading.Lock()
        self._jobs: dict[str, ApplyJob] = {}

    def get(self, proposal_id: str) -> ApplyJob | None:
        with self._lock:
            return self._jobs.get(proposal_id)

    def start(self, proposal_id: str, principal: Principal) -> tuple[ApplyJob, bool]:
        """The job applying ``proposal_id``: the one running, else a new one started now.
        Returns (job, started)."""
        with self._lock:
            job = self._jobs.get(proposal_id)
            if job is not None and job.running:
                return job, False
            job = ApplyJob(proposal_id, principal.name)
            self._jobs[proposal_id] = job
        job.say(f"apply started by {principal.name}")
        threading.Thread(
            target=self._run, args=(job, principal), name=f"apply-{proposal_id}", daemon=True
        ).start()
        return job, True

    def _run(self, job: ApplyJob, principal: Principal) -> None:
        try:
            with self.hub.workspace() as ws:
                applied = api.apply(
                    ws, job.proposal_id, principal=principal,
                    progress=job.say, run_progress=job.on_event,
                )  # fmt: skip
                job.status = applied.proposal.status
                if applied.run is not None:
                    job.run_id = applied.run.run_id
        except SpliceError as e:
            job.error, job.fix = e.message, e.fix
        except Exception:  # noqa: BLE001 - logged; the page says where to look
            log.exception("applying %s failed", job.proposal_id)
            job.error = "Splice failed while applying; the server's log has the details."
        finally:
            if job.error:
                job.say(f"refused or failed: {job.error}")
            else:
                job.say(f"done: {job.proposal_id} is {job.status}")
            job.finished_at = time.time()
            self.hub.notify_soon()
