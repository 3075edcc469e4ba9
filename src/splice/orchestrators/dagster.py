"""Dagster, through its GraphQL API.

Submitting a run goes through the official ``dagster-graphql`` client
(``DagsterGraphQLClient.submit_job_execution``, imported only when a run is submitted: it pulls
in Dagster itself); reading (is the job there, its runs, a run's status, the job's asset keys)
is a plain GraphQL POST, so ``splice ls`` and ``splice incident show`` stay light.

Errors are one line (:class:`~splice.errors.OrchestratorError`) naming the setting to correct:
an unreachable webserver (a retry may help), a job Dagster does not know (with the jobs it
does know), a run config Dagster rejects.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from splice.config.orchestrators import DagsterJob
from splice.errors import OrchestratorError
from splice.orchestrators.base import Orchestrator, OrchestratorRun, fill_days
from splice.support import http

#: Seconds to wait for one answer of the API server (a refused connection fails at once; a
#: busy server, its scheduler and workers beside it on a small machine, can take seconds).
READ_TIMEOUT_S = 30.0

_JOBS = """query { repositoriesOrError { __typename
  ... on RepositoryConnection { nodes { name location { name } jobs { name } } }
  ... on PythonError { message } } }"""

_RUNS = """query($job: String!, $limit: Int!) { runsOrError(filter: {pipelineName: $job},
  limit: $limit) { __typename ... on Runs { results { runId status startTime endTime
  tags { key value } } } ... on PythonError { message } } }"""

_RUN = """query($id: ID!) { runOrError(runId: $id) { __typename
  ... on Run { runId status startTime endTime tags { key value } }
  ... on RunNotFoundError { message } ... on PythonError { message } } }"""

_FAILURE = """query($id: ID!) { logsForRun(runId: $id, limit: 400) { __typename
  ... on EventConnection { events { __typename ... on MessageEvent { message level }
  ... on ExecutionStepFailureEvent { stepKey error { message } } } } } }"""

#: The exception's dotted class name Dagster puts before its message.
_CLASS = re.compile(r"^[\w.]+(Error|Failure|Exception): ")

_ASSETS = """query { assetNodes { assetKey { path } jobNames } }"""

_TERMINATE = """mutation($id: String!) { terminateRun(runId: $id) { __typename } }"""


class Dagster(Orchestrator):
    """One Dagster job of one ``[[ingestion]]`` entry."""

    system = "dagster"

    def __init__(self, cfg: DagsterJob, job: str, *, root: Path, ingestion: str) -> None:
        self.cfg = cfg
        self.job = job
        self.root = root
        self.ingestion = ingestion
        self._where: dict[str, str] | None = None

    # -- reading --------------------------------------------------------------------------
    def _setting(self) -> str:
        return f"[ingestion.dagster] url of {self.ingestion!r} in splice.toml"

    def graphql(self, query: str, variables: dict[str, Any] | None = None,
                *, timeout: float = READ_TIMEOUT_S) -> dict[str, Any]:  # fmt: skip
        """One GraphQL request; its ``data``. Unreachable or refused: OrchestratorError."""
        self._ensure_local()
        try:  # a query is read-only, so it is asked again; a mutation is not
            out = http.request("POST", f"{self.cfg.url}/graphql", timeout=timeout,
                               json={"query": query, "variables": variables or {}},
                               idempotent=not query.lstrip().startswith("mutation")).json()  # fmt: skip
        except http.ErrorStatus as e:
            raise OrchestratorError(
                f"Dagster at {self.cfg.url} answered HTTP {e.status} to a GraphQL request.",
                fix=f"check that {self.cfg.url} is a Dagster webserver ({self._setting()})",
                retry=e.status >= 500,
            ) from None
        except (http.NoAnswer, ValueError) as e:
            reason = e.reason if isinstance(e, http.NoAnswer) else e
            raise OrchestratorError(
                f"cannot reach Dagster at {self.cfg.url} ({reason}); nothing was submitted.",
                fix=f"start the Dagster webserver, or correct {self._setting()}",
                retry=getattr(e, "retry", True),  # a garbled answer: maybe a restart
            ) from None
        if out.get("errors"):
            msg = "; ".join(str(e.get("message")) for e in out["errors"])[:300]
            raise OrchestratorError(f"Dagster at {self.cfg.url} refused a query: {msg}.",
                                    fix="check the Dagster version (Splice reads its GraphQL API)")  # fmt: skip
        return out.get("data") or {}

    def check(self) -> dict[str, str]:
        """Find the job (its repository and code location); raise if Dagster does not know it."""
        if self._where is not None:
            return self._where
        data = self.graphql(_JOBS)["repositoriesOrError"]
        if data.get("__typename") != "RepositoryConnection":
            raise OrchestratorError(
                f"Dagster at {self.cfg.url} could not load its code locations: "
                f"{data.get('message', data.get('__typename'))}.",
                fix="fix the code location in Dagster (its UI shows the error), then retry",
                retry=True,
            )
        found: list[dict[str, str]] = []
        known: list[str] = []
        for repo in data.get("nodes") or []:
            loc = repo["location"]["name"]
            for j in repo.get("jobs") or []:
                if not j["name"].startswith("__"):
                    known.append(j["name"])
                if j["name"] != self.job:
                    continue
                if self.cfg.repository not in (None, repo["name"]):
                    continue
                if self.cfg.location not in (None, loc):
                    continue
                found.append({"repository": repo["name"], "location": loc})
        if not found:
            where = "".join(f" in {k} {v!r}" for k, v in (("repository", self.cfg.repository),
                            ("location", self.cfg.location)) if v)  # fmt: skip
            raise OrchestratorError(
                f"Dagster at {self.cfg.url} has no job {self.job!r}{where} "
                f"(its jobs: {', '.join(sorted(set(known))) or 'none'}).",
                fix=f"correct [ingestion.dagster] job of {self.ingestion!r} in splice.toml",
            )
        if len(found) > 1:
            places = ", ".join(f"{f['location']}/{f['repository']}" for f in found)
            raise OrchestratorError(
                f"Dagster at {self.cfg.url} has job {self.job!r} in several places ({places}).",
                fix=f"set [ingestion.dagster] location (and repository) of {self.ingestion!r}",
            )
        self._where = found[0]
        return found[0]

    def asset_relations(self) -> list[str]:
        """The job's asset keys as relation names (``["raw", "fx_rates"]`` -> ``raw.fx_rates``)."""
        nodes = self.graphql(_ASSETS).get("assetNodes") or []
        return sorted(
            ".".join(n["assetKey"]["path"][-3:])
            for n in nodes
            if self.job in (n.get("jobNames") or [])
        )

    def _run(self, r: dict[str, Any]) -> OrchestratorRun:
        tags = {t["key"]: t["value"] for t in r.get("tags") or []}
        return OrchestratorRun(
            system=self.system, job=self.job, run_id=r["runId"], status=str(r["status"]),
            url=self.cfg.link_for(r["runId"]), started=r.get("startTime"),
            ended=r.get("endTime"), partition=tags.get("dagster/partition"), tags=tags,
        )  # fmt: skip

    def recent_runs(self, limit: int = 10) -> list[OrchestratorRun]:
        data = self.graphql(_RUNS, {"job": self.job, "limit": limit})["runsOrError"]
        if data.get("__typename") != "Runs":
            raise OrchestratorError(f"Dagster could not list the runs of {self.job!r}: "
                                    f"{data.get('message')}.", retry=True)  # fmt: skip
        return [self._run(r) for r in data.get("results") or []]

    def status(self, run_id: str) -> OrchestratorRun:
        data = self.graphql(_RUN, {"id": run_id})["runOrError"]
        if data.get("__typename") != "Run":
            raise OrchestratorError(f"Dagster has no run {run_id}: {data.get('message')}.")
        return self._run(data)

    def failure_message(self, run_id: str) -> str | None:
        """The last error Dagster logged for the run (its step's exception), if any."""
        try:
            data = self.graphql(_FAILURE, {"id": run_id})["logsForRun"]
        except OrchestratorError:
            return None
        events = data.get("events") or []
        # a step's own error (the op's exception) says more than the run's summary
        steps = [f"step {e.get('stepKey')}: {_CLASS.sub('', e['error']['message'])}" for e in events
                 if e.get("__typename") == "ExecutionStepFailureEvent" and e.get("error")]  # fmt: skip
        errors = steps or [e.get("message") for e in events
                           if e.get("level") in ("ERROR", "CRITICAL") and e.get("message")]  # fmt: skip
        return str(errors[-1]).strip().splitlines()[0][:300] if errors else None

    # -- running --------------------------------------------------------------------------
    def submit(self, run_config: dict[str, Any], tags: dict[str, str]) -> str:
        """Queue one run of the job (the dagster-graphql client); its run id."""
        where = self.check()
        try:
            from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError
        except ImportError:
            raise OrchestratorError(
                "the dagster-graphql client is not installed in Splice's environment.",
                fix="pip install 'splice[dagster]' (dagster, dagster-webserver and "
                "dagster-graphql at one version)",
            ) from None
        u = urlsplit(self.cfg.url)
        client = DagsterGraphQLClient(
            u.hostname or "127.0.0.1",
            port_number=u.port or (443 if u.scheme == "https" else 80),
            use_https=u.scheme == "https",
        )
        try:
            return str(client.submit_job_execution(
                self.job,
                repository_location_name=where["location"],
                repository_name=where["repository"],
                run_config=run_config,
                tags=tags,
            ))  # fmt: skip
        except DagsterGraphQLClientError as e:
            kind = e.args[0] if e.args else "error"
            detail = str(e.args[1] if len(e.args) > 1 else e)[:300]
            raise OrchestratorError(
                f"Dagster refused a run of {self.job!r}: {kind}: {detail}.",
                fix=f"correct [ingestion.dagster] run_config of {self.ingestion!r} in splice.toml"
                if "Config" in str(kind)
                else f"check job {self.job!r} in Dagster's UI",
                retry=kind in ("PythonError", "ConnectionError"),
            ) from None

    def terminate(self, run_id: str) -> None:
        self.graphql(_TERMINATE, {"id": run_id})

    def run_link(self, run_id: str) -> str:
        return self.cfg.link_for(run_id)

    def requests(
        self, start: date, end: date, tags: dict[str, str]
    ) -> list[tuple[dict[str, Any], dict[str, str]]]:
        """The runs a reload of ``start..end`` takes: (run config, tags) each.

        >>> d = Dagster(DagsterJob(url="http://h:1", days="partitions"), "j", root=Path("."),
        ...             ingestion="j")
        >>> [t["dagster/partition"] for _c, t in d.requests(date(2026, 9, 28), date(2026, 9, 29), {})]
        ['2026-09-28', '2026-09-29']
        """
        run_config = fill_days(self.cfg.run_config, start, end)
        if self.cfg.days == "run_config":
            return [(run_config, dict(tags))]
        out = []
        day = start
        while day <= end:
            out.append(
                (run_config, {**tags, "dagster/partition": day.strftime(self.cfg.partition_format)})
            )
            day += timedelta(days=1)
        return out

    def describe(self, start: date, end: date) -> str:
        """The reload in words, for the proposal and the receipt."""
        n = len(self.requests(start, end, {}))
        how = (f"run config {json.dumps(fill_days(self.cfg.run_config, start, end), sort_keys=True)}"
               if self.cfg.days == "run_config" else f"{n} partition run(s) {start}..{end}")  # fmt: skip
        return f"Dagster job {self.job} at {self.cfg.url}: {how}"

    def job_link(self) -> str:
        return f"{self.cfg.url}/jobs/{self.job}"

    def local_server(self) -> Any:
        from splice.orchestrators.dagster_local import server

        return server(self.cfg, self.root)
