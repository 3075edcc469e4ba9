"""``[ingestion.dagster]`` (and ``[ingestion.airflow]``): an ingestion job that an orchestrator
runs, so that a repair's reload is queued there, visible to whoever runs the pipelines.

>>> d = DagsterJob(url="http://127.0.0.1:3000/", job="fx_rates_ingest")
>>> (d.url, d.days, d.link_for("abc"))
('http://127.0.0.1:3000', 'run_config', 'http://127.0.0.1:3000/runs/abc')
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _OrchestratedJob(_Strict):
    """What every orchestrator's table has: where it answers, how long a reload may take, and
    optionally a local server Splice starts itself (demos and tests)."""

    url: str
    timeout: str = "1h"  # the longest a reload may take before the step fails
    poll: float = Field(default=1.0, gt=0, le=60)  # seconds between status reads
    local: str | None = None
    home: str = ".splice/orchestrator"

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r} is not an http(s):// URL of the orchestrator's webserver")
        return v.rstrip("/")

    @field_validator("timeout")
    @classmethod
    def _duration(cls, v: str) -> str:
        from splice.config.durations import parse_duration

        parse_duration(v)
        return v

    @property
    def timeout_s(self) -> int:
        from splice.config.durations import parse_duration

        return parse_duration(self.timeout)


class DagsterJob(_OrchestratedJob):
    """A Dagster job: where its webserver answers, which job, and how the days are passed.

    ``days = "run_config"``: one run, its run config ``run_config`` with ``{start}`` and
    ``{end}`` filled in (ISO days) wherever a string holds them. ``days = "partitions"``: one
    run per day, tagged with the day's partition key (``partition_format``, a strftime format).
    ``local``: a code location file (relative to the workspace) that Splice serves itself with
    ``dagster-webserver`` on ``url``'s port when nothing answers there (demos and tests).
    """

    job: str | None = None  # defaults to the [[ingestion]] name
    repository: str | None = None  # needed only when several repositories hold the job
    location: str | None = None
    days: Literal["run_config", "partitions"] = "run_config"
    run_config: dict[str, Any] = Field(default_factory=dict)
    partition_format: str = "%Y-%m-%d"
    home: str = ".splice/dagster"  # DAGSTER_HOME of the local instance

    def link_for(self, run_id: str) -> str:
        """The run's page in the Dagster UI."""
        return f"{self.url}/runs/{run_id}"


class AirflowDag(_OrchestratedJob):
    """An Airflow DAG, through Airflow 3's REST API (``/api/v2``).

    ``days = "conf"``: one DAG run whose ``conf`` is ``conf`` with ``{start}`` and ``{end}``
    filled in. ``days = "logical_date"``: one DAG run per day, its logical date that day
    (midnight UTC), for DAGs that read their interval. ``username`` and the password in the
    environment variable ``password_env`` get a token from ``/auth/token``; with neither, the
    API is called without one. ``local``: a DAGs folder (relative to the workspace) that Splice
    serves itself (its API server, scheduler and DAG processor) on ``url``'s port.

    >>> a = AirflowDag(url="http://127.0.0.1:8080", dag="fx")
    >>> a.link_for("fx", "manual__1")
    'http://127.0.0.1:8080/dags/fx/runs/manual__1'
    """

    dag: str | None = None  # defaults to the [[ingestion]] name
    days: Literal["conf", "logical_date"] = "conf"
    conf: dict[str, Any] = Field(default_factory=dict)
    username: str | None = None
    password_env: str | None = None
    home: str = ".splice/airflow"  # AIRFLOW_HOME of the local instance

    def link_for(self, dag: str, run_id: str) -> str:
        """The DAG run's page in the Airflow UI."""
        return f"{self.url}/dags/{dag}/runs/{run_id}"
