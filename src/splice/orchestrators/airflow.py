"""Airflow 3, through its REST API (``/api/v2``), over Splice's one HTTP transport.

A reload triggers DAG runs (``POST /api/v2/dags/{dag}/dagRuns``) with the days in their
``conf`` (one run) or as their logical dates (one run per day), each with a run id that
names the proposal (``splice__PR-1__…``) and a note saying why, then polls each to the end.
Reading the DAG (is it there, paused?), its runs and the assets its tasks produce are plain
GET requests. With ``username`` (and the password in ``password_env``) Splice first gets a
token from ``/auth/token``.

Errors are one line (:class:`~splice.errors.OrchestratorError`) naming the setting to correct.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.parse
import uuid
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from splice.config.orchestrators import AirflowDag
from splice.errors import OrchestratorError
from splice.orchestrators.base import Orchestrator, OrchestratorRun, fill_days
from splice.support import http

#: Seconds to wait for one answer of the API server (a refused connection fails at once; a
#: busy server, its scheduler and workers beside it on a small machine, can take seconds).
READ_TIMEOUT_S = 30.0

#: Airflow's DAG run states, in the common vocabulary of :class:`OrchestratorRun`.
STATES = {"queued": "QUEUED", "running": "STARTED", "success": "SUCCESS", "failed": "FAILURE"}


def _epoch(iso: str | None) -> float | None:
    """An ISO timestamp as epoch seconds.

    >>> _epoch("1970-01-01T00:01:00Z"), _epoch(None)
    (60.0, None)
    """
    if not iso:
        return None
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class Airflow(Orchestrator):
    """One Airflow DAG of one ``[[ingestion]]`` entry."""

    system = "airflow"

    def __init__(self, cfg: AirflowDag, dag: str, *, root: Path, ingestion: str) -> None:
        self.cfg = cfg
        self.job = dag
        self.root = root
        self.ingestion = ingestion
        self._token: str | None = None
        self._checked = False

    # -- HTTP -----------------------------------------------------------------------------
    def _setting(self, key: str = "url") -> str:
        return f"[ingestion.airflow] {key} of {self.ingestion!r} in splice.toml"

    def _auth(self) -> dict[str, str]:
        if not self.cfg.username:
            return {}
        if self._token is None:
            env = self.cfg.password_env
            password = os.environ.get(env or "")
            if env and password is None:
                raise OrchestratorError(
                    f"the environment variable {env} ({self._setting('password_env')}) is not set.",
                    fix=f"export {env}=... (the Airflow password of {self.cfg.username})",
                )
            out = self._call("POST", "/auth/token",
                             {"username": self.cfg.username, "password": password or ""},
                             auth=False)  # fmt: skip
            self._token = str(out.get("access_token") or "")
        return {"Authorization": f"Bearer {self._token}"}

    def _call(self, method: str, path: str, body: Any = None, *, auth: bool = True,
              timeout: float = READ_TIMEOUT_S) -> dict[str, Any]:  # fmt: skip
        self._ensure_local()
        try:
            resp = http.request(method, f"{self.cfg.url}{path}", json=body, timeout=timeout,
                                headers=self._auth() if auth else None)  # fmt: skip
        except http.ErrorStatus as e:
            detail = e.text[:300]
            with contextlib.suppress(ValueError, AttributeError):  # FastAPI's {"detail": ...}
                detail = str(json.loads(e.text).get("detail", detail))[:300]
            raise self._http_error(e.status, path, detail) from None
        except http.NoAnswer as e:
            raise OrchestratorError(
                f"cannot reach Airflow at {self.cfg.url} ({e.reason}); nothing was triggered.",
                fix=f"start the Airflow API server, or correct {self._setting()}",
                retry=e.retry,
            ) from None
        return json.loads(resp.content) if resp.content else {}

    def _http_error(self, code: int, path: str, detail: str) -> OrchestratorError:
        if code in (401, 403):
            return OrchestratorError(
                f"Airflow at {self.cfg.url} refused Splice ({code}: {detail}).",
                fix=f"set {self._setting('username')} and password_env to a user that may "
                "trigger the DAG",
            )
        if code == 404 and path.startswith(f"/api/v2/dags/{self.job}"):
            return OrchestratorError(
                f"Airflow at {self.cfg.url} has no DAG {self.job!r} ({detail}).",
                fix=f"correct {self._setting('dag')}, or wait for Airflow to parse the DAG file",
            )
        return OrchestratorError(
            f"Airflow at {self.cfg.url} answered {code} to {path}: {detail}.",
            fix=f"correct {self._setting('conf')}" if code in (400, 422) else None,
            retry=code >= 500,
        )

    # -- reading --------------------------------------------------------------------------
    def check(self) -> dict[str, str]:
        """Find the DAG; refuse an unknown or paused one (its runs would wait forever). A
        local Airflow just started may not have parsed the DAG file yet: it gets a minute."""
        deadline = time.monotonic() + (60 if self.cfg.local else 0)
        while True:
            try:
                dag = self._call("GET", f"/api/v2/dags/{urllib.parse.quote(self.job)}")
                break
            except OrchestratorError as e:
                if "has no DAG" not in e.message or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        if dag.get("is_paused"):
            raise OrchestratorError(
                f"DAG {self.job!r} is paused in Airflow at {self.cfg.url}: a run triggered now "
                "would wait until someone unpauses it.",
                fix=f"unpause it in Airflow (airflow dags unpause {self.job}), then retry",
            )
        self._checked = True
        return {}

    def _run(self, r: dict[str, Any]) -> OrchestratorRun:
        state = str(r.get("state") or "queued")
        rid = str(r["dag_run_id"])
        logical = r.get("logical_date")
        return OrchestratorRun(
            system=self.system, job=self.job, run_id=rid,
            status=STATES.get(state, state.upper()),
            url=self.cfg.link_for(self.job, rid), started=_epoch(r.get("start_date")),
            ended=_epoch(r.get("end_date")),
            partition=str(logical)[:10] if logical and self.cfg.days == "logical_date" else None,
            tags={"note": str(r.get("note") or "")} if r.get("note") else {},
        )  # fmt: skip

    def recent_runs(self, limit: int = 10) -> list[OrchestratorRun]:
        q = urllib.parse.urlencode({"limit": limit, "order_by": "-run_after"})
        out = self._call("GET", f"/api/v2/dags/{urllib.parse.quote(self.job)}/dagRuns?{q}")
        return [self._run(r) for r in out.get("dag_runs") or []]

    def status(self, run_id: str) -> OrchestratorRun:
        path = f"/api/v2/dags/{urllib.parse.quote(self.job)}/dagRuns/{urllib.parse.quote(run_id)}"
        return self._run(self._call("GET", path))

    def failure_message(self, run_id: str) -> str | None:
        """Which tasks failed (Airflow's task instances of the run)."""
        path = (f"/api/v2/dags/{urllib.parse.quote(self.job)}/dagRuns/"
                f"{urllib.parse.quote(run_id)}/taskInstances")  # fmt: skip
        try:
            tis = self._call("GET", path).get("task_instances") or []
        except OrchestratorError:
            return None
        failed = sorted(
            t["task_id"] for t in tis if t.get("state") in ("failed", "upstream_failed")
        )
        return f"task(s) {', '.join(failed)} failed" if failed else None

    def asset_relations(self) -> list[str]:
        """The assets the DAG's tasks produce, as relation names (``raw.fx_rates``)."""
        out = self._call("GET", "/api/v2/assets?limit=1000")
        names: set[str] = set()
        for a in out.get("assets") or []:
            if not any(t.get("dag_id") == self.job for t in a.get("producing_tasks") or []):
                continue
            name = str(a.get("name") or a.get("uri") or "")
            if "://" in name:  # a URI: its last path parts name the table
                name = ".".join(p for p in urllib.parse.urlsplit(name).path.split("/") if p)
            names.add(".".join(name.split(".")[-3:]))
        return sorted(n for n in names if n)

    def job_link(self) -> str:
        return f"{self.cfg.url}/dags/{self.job}"

    # -- running --------------------------------------------------------------------------
    def requests(
        self, start: date, end: date, tags: dict[str, str]
    ) -> list[tuple[dict[str, Any], dict[str, str]]]:
        """The DAG runs a reload of ``start..end`` takes: (body, tags) each.

        >>> a = Airflow(AirflowDag(url="http://h:1", days="logical_date"), "d", root=Path("."),
        ...             ingestion="d")
        >>> [b["logical_date"] for b, _t in a.requests(date(2026, 9, 28), date(2026, 9, 29), {})]
        ['2026-09-28T00:00:00Z', '2026-09-29T00:00:00Z']
        """
        conf = fill_days(self.cfg.conf, start, end)
        if self.cfg.days == "conf":
            return [({"logical_date": None, "conf": conf}, dict(tags))]
        out = []
        day = start
        while day <= end:
            out.append(({"logical_date": f"{day.isoformat()}T00:00:00Z", "conf": conf},
                        {**tags, "partition": day.isoformat()}))  # fmt: skip
            day += timedelta(days=1)
        return out

    def describe(self, start: date, end: date) -> str:
        n = len(self.requests(start, end, {}))
        how = (f"conf {json.dumps(fill_days(self.cfg.conf, start, end), sort_keys=True)}"
               if self.cfg.days == "conf" else f"{n} run(s) with logical dates {start}..{end}")  # fmt: skip
        return f"Airflow DAG {self.job} at {self.cfg.url}: {how}"

    def submit(self, body: dict[str, Any], tags: dict[str, str]) -> str:
        """Trigger one DAG run; its run id (``splice__PROPOSAL__…`` when a proposal asks)."""
        if not self._checked:
            self.check()
        proposal = tags.get("splice/proposal")
        rid = f"splice__{proposal or 'reload'}__{uuid.uuid4().hex[:8]}"
        note = "; ".join(f"{k}={v}" for k, v in sorted(tags.items()) if k != "partition")
        payload = {**body, "dag_run_id": rid, "note": note or None}
        try:
            out = self._call("POST", f"/api/v2/dags/{urllib.parse.quote(self.job)}/dagRuns",
                             payload)  # fmt: skip
        except OrchestratorError as e:
            if not e.retry:
                raise  # Airflow answered, refusing: nothing was triggered
            # the answer was lost (timed out, connection dropped): Airflow may have made the
            # run anyway; it is known by the id Splice chose, so ask before saying it did not
            try:
                self.status(rid)
            except OrchestratorError as asked:
                if not asked.retry:  # Airflow answers now: it has no such run
                    raise e from None
                raise OrchestratorError(
                    f"Airflow at {self.cfg.url} did not answer the trigger of run {rid} of DAG "
                    f"{self.job!r}, and cannot be asked whether it made it.",
                    fix=f"look for run {rid} in Airflow before running the reload again",
                    retry=True,
                ) from None
            return rid
        return str(out.get("dag_run_id") or rid)

    def terminate(self, run_id: str) -> None:
        path = f"/api/v2/dags/{urllib.parse.quote(self.job)}/dagRuns/{urllib.parse.quote(run_id)}"
        self._call("PATCH", path, {"state": "failed"})

    def run_link(self, run_id: str) -> str:
        return self.cfg.link_for(self.job, run_id)

    def local_server(self) -> Any:
        from splice.orchestrators.airflow_local import server

        return server(self.cfg, self.root)
