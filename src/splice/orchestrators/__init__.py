"""Orchestrators that run ingestion jobs (Dagster), seen from Splice.

A team's pipelines already run somewhere: an ``[[ingestion]]`` job with ``runner = "dagster"``
is reloaded by queueing a run in Dagster (its run visible there, its id and link in the
journal and the receipt), and Dagster's record of the job's runs is read as evidence.

- :mod:`splice.orchestrators.base`: the run record and what every orchestrator offers;
- :mod:`splice.orchestrators.dagster`: Dagster through its GraphQL API (the
  ``dagster-graphql`` client submits; status, runs and asset keys are plain GraphQL reads);
- :mod:`splice.orchestrators.dagster_local`: a local ``dagster-webserver`` that Splice starts for a
  workspace that asks for it (``[ingestion.dagster] local``: demos and tests);
- :mod:`splice.orchestrators.airflow`: Airflow 3 through its REST API (``/api/v2``: trigger a
  DAG run with the days in its conf, poll its state), and a local Airflow (API server,
  scheduler, DAG processor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from splice.orchestrators.base import Orchestrator, OrchestratorRun, fill_days

__all__ = ["Orchestrator", "OrchestratorRun", "fill_days", "for_job", "for_step"]


def for_job(job: Any, root: Path) -> Orchestrator | None:
    """The orchestrator that runs ``job`` (an ``IngestionSection``), or None when Splice runs
    it itself (``runner = "command"`` / ``"dlt"``)."""
    if job.dagster is not None:
        from splice.orchestrators.dagster import Dagster

        return Dagster(job.dagster, job.dagster.job or job.name, root=root, ingestion=job.name)
    if job.airflow is not None:
        from splice.orchestrators.airflow import Airflow

        return Airflow(job.airflow, job.airflow.dag or job.name, root=root, ingestion=job.name)
    return None


def for_step(jobs: list[Any], root: Path, node_id: str, spec: dict[str, Any]) -> Orchestrator:
    """The orchestrator an approved reload step of ``node_id`` queues in (``spec``: the step's
    ``detail["orchestrator"]``); refused when splice.toml no longer has that job run there."""
    from splice.errors import OrchestratorError

    name = node_id.split(":", 1)[1]
    job = next((j for j in jobs if j.name == name), None)
    orch = for_job(job, root) if job is not None else None
    if orch is None or orch.system != spec["system"] or orch.job != spec["job"]:
        raise OrchestratorError(
            f"{node_id} is no longer run by {spec['system']} job {spec['job']!r} in "
            "splice.toml; the approved reload was made for it and is not queued.",
            fix="propose the repair again",
        )
    return orch
