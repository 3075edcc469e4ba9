"""What Splice needs of an orchestrator, and the record of one of its runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

#: Statuses after which a run does nothing more (Dagster's names; others map onto them).
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


@dataclass
class OrchestratorRun:
    """One run of a job, as the orchestrator records it (times are epoch seconds)."""

    system: str  # "dagster"
    job: str
    run_id: str
    status: str  # QUEUED, STARTED, SUCCESS, FAILURE, CANCELED...
    url: str  # the run's page in the orchestrator's UI
    started: float | None = None
    ended: float | None = None
    partition: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    message: str | None = None  # why it failed, when the orchestrator says

    @property
    def ok(self) -> bool:
        return self.status == "SUCCESS"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fill_days(value: Any, start: date, end: date) -> Any:
    """``value`` with ``{start}`` and ``{end}`` replaced by ISO days in every string it holds
    (dicts and lists walked; other values kept).

    >>> fill_days({"ops": {"load": {"config": {"start": "{start}", "n": 3,
    ...            "days": ["{start}", "{end}"]}}}}, date(2026, 9, 28), date(2026, 9, 29))
    {'ops': {'load': {'config': {'start': '2026-09-28', 'n': 3, 'days': ['2026-09-28', '2026-09-29']}}}}
    """
    if isinstance(value, str):
        return value.replace("{start}", start.isoformat()).replace("{end}", end.isoformat())
    if isinstance(value, dict):
        return {k: fill_days(v, start, end) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_days(v, start, end) for v in value]
    return value


class Orchestrator:
    """An orchestrator that runs one ingestion job (Dagster, Airflow: the subclasses).

    What they share is here: submit each approved request, then poll every run to the end
    (stopping those still going at the deadline). A subclass gives the rest."""

    system: str
    job: str
    cfg: Any  # its table in splice.toml ([ingestion.dagster] / [ingestion.airflow])

    def check(self) -> dict[str, str]:
        """Reach the orchestrator and find the job; raises OrchestratorError (one line) if not."""
        raise NotImplementedError

    def requests(
        self, start: date, end: date, tags: dict[str, str]
    ) -> list[tuple[dict[str, Any], dict[str, str]]]:
        """The runs a reload of ``start..end`` takes: (body, tags) each."""
        raise NotImplementedError

    def describe(self, start: date, end: date) -> str:
        """The reload in words, for the proposal and the receipt."""
        raise NotImplementedError

    def submit(self, body: dict[str, Any], tags: dict[str, str]) -> str:
        """Queue one run; its run id."""
        raise NotImplementedError

    def status(self, run_id: str) -> OrchestratorRun:
        """One run as the orchestrator records it now."""
        raise NotImplementedError

    def terminate(self, run_id: str) -> None:
        """Stop a run Splice started (a killed or timed-out reload)."""
        raise NotImplementedError

    def failure_message(self, run_id: str) -> str | None:
        """Why a run failed, as the orchestrator says."""
        raise NotImplementedError

    def recent_runs(self, limit: int = 10) -> list[OrchestratorRun]:
        """The job's latest runs, newest first."""
        raise NotImplementedError

    def asset_relations(self) -> list[str]:
        """The relations the job says it writes (Dagster asset keys, Airflow assets)."""
        raise NotImplementedError

    def run_link(self, run_id: str) -> str:
        """A run's page in the orchestrator's UI."""
        raise NotImplementedError

    def job_link(self) -> str:
        """The job's page in the orchestrator's UI."""
        raise NotImplementedError

    # -- a local server (``local``: demos and tests) ----------------------------------------
    root: Any  # the workspace directory (``local`` and ``home`` are relative to it)
    _local_up = False

    def local_server(self) -> Any:
        """How to start this orchestrator's local server (a ``LocalServer``)."""
        raise NotImplementedError

    def _ensure_local(self) -> None:
        """Start the local server once per object, before its first request (later requests
        go straight to it: no extra probe per poll)."""
        if self.cfg.local and not self._local_up:
            from splice.orchestrators.local_server import ensure_running

            ensure_running(self.local_server(), self.root)
            self._local_up = True

    def stop_local(self) -> bool:
        """Stop the local server Splice started for the job (``local``); whether one ran."""
        from splice.orchestrators.local_server import stop

        self._local_up = False
        return bool(self.cfg.local) and stop((self.root / self.cfg.home).resolve())

    def wait(self, run_id: str, *, deadline: float) -> OrchestratorRun:
        """Poll the run until it finishes or ``deadline`` (monotonic) passes (then stop it)."""
        while True:
            run = self.status(run_id)
            if run.finished:
                if not run.ok:
                    run.message = self.failure_message(run_id)
                return run
            if time.monotonic() > deadline:
                self.terminate(run_id)
                run.status = "CANCELED"
                run.message = (f"Splice stopped it after {self.cfg.timeout} "
                               f"([ingestion.{self.system}] timeout)")  # fmt: skip
                return run
            time.sleep(self.cfg.poll)

    def reload(
        self,
        start: date,
        end: date,
        *,
        tags: dict[str, str],
        on_submit: Callable[[OrchestratorRun], None] | None = None,
    ) -> list[OrchestratorRun]:
        """Queue the reload of ``start..end`` and wait for every run it takes."""
        return self.run_requests(self.requests(start, end, tags), on_submit=on_submit)

    def run_requests(
        self,
        requests: list[tuple[dict[str, Any], dict[str, str]]],
        *,
        on_submit: Callable[[OrchestratorRun], None] | None = None,
    ) -> list[OrchestratorRun]:
        """Submit each (body, tags), then wait for every run to finish."""
        deadline = time.monotonic() + self.cfg.timeout_s
        submitted: list[str] = []
        for body, tags in requests:
            rid = self.submit(body, tags)
            submitted.append(rid)
            if on_submit is not None:
                on_submit(OrchestratorRun(self.system, self.job, rid, "QUEUED",
                                          self.run_link(rid), tags=tags,
                                          partition=tags.get("dagster/partition")
                                          or tags.get("partition")))  # fmt: skip
        return [self.wait(rid, deadline=deadline) for rid in submitted]
