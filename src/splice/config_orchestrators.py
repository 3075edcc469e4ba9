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


class DagsterJob(_Strict):
    """A Dagster job: where its webserver answers, which job, and how the days are passed.

    ``days = "run_config"``: one run, its run config ``run_config`` with ``{start}`` and
    ``{end}`` filled in (ISO days) wherever a string holds them. ``days = "partitions"``: one
    run per day, tagged with the day's partition key (``partition_format``, a strftime format).
    ``local``: a code location file (relative to the workspace) that Splice serves itself with
    ``dagster dev`` on ``url``'s port when nothing answers there (demos and tests).
    """

    url: str  # the webserver, e.g. http://127.0.0.1:3000
    job: str | None = None  # defaults to the [[ingestion]] name
    repository: str | None = None  # needed only when several repositories hold the job
    location: str | None = None
    days: Literal["run_config", "partitions"] = "run_config"
    run_config: dict[str, Any] = Field(default_factory=dict)
    partition_format: str = "%Y-%m-%d"
    timeout: str = "1h"  # the longest a reload may take before the step fails
    poll: float = Field(default=1.0, gt=0, le=60)  # seconds between status reads
    local: str | None = None  # a definitions file Splice serves itself (dagster dev)
    home: str = ".splice/dagster"  # DAGSTER_HOME of the local instance

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r} is not an http(s):// URL of a Dagster webserver")
        return v.rstrip("/")

    @field_validator("timeout")
    @classmethod
    def _duration(cls, v: str) -> str:
        from splice.config import parse_duration  # config imports this module

        parse_duration(v)
        return v

    @property
    def timeout_s(self) -> int:
        from splice.config import parse_duration

        return parse_duration(self.timeout)

    def link_for(self, run_id: str) -> str:
        """The run's page in the Dagster UI."""
        return f"{self.url}/runs/{run_id}"
