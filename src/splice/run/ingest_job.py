"""An ingestion job run for named days as a journaled run (``splice ingest``).

A scheduled load (the rates of the day, say) is a plan of one ``ingestion`` segment: the
job's ``[[ingestion]]`` command with ``{start}`` and ``{end}`` filled in, or the runs queued in
the orchestrator that owns it (:class:`splice.run.executors.ingestion.IngestionExecutor` runs both), so
the journal keeps every run of the job: when, for which days, and when it failed, what it
said (a vendor's HTTP 503, a dlt load error, an orchestrator run that failed).  The diagnosis
of an incident reads them (:mod:`splice.watch.source_runs`): "the rates are missing for
Monday" becomes "fx_rates_ingest failed for Monday: the vendor answered 503".

The run's selector names the job and its days (``ingest:NAME@START..END``), which is how the
journal is read back (:func:`ingest_days`).
"""

from __future__ import annotations

import re
import time
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from splice.errors import InputError
from splice.plan.model import NodeDecision, Plan, Reason, Segment

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

SELECTOR_PREFIX = "ingest:"
_SELECTOR = re.compile(
    r"^ingest:(?P<name>[^@]+)@(?P<start>\d{4}-\d\d-\d\d)\.\.(?P<end>\d{4}-\d\d-\d\d)$"
)


def ingest_selector(name: str, start: date, end: date) -> str:
    """The selector an ingestion run is journaled with.

    >>> ingest_selector("fx", date(2026, 9, 28), date(2026, 9, 29))
    'ingest:fx@2026-09-28..2026-09-29'
    """
    return f"{SELECTOR_PREFIX}{name}@{start.isoformat()}..{end.isoformat()}"


def ingest_days(selector: str | None) -> tuple[str, date, date] | None:
    """(job name, first day, last day) of an ingestion run's selector; None for other runs.

    >>> ingest_days("ingest:fx@2026-09-28..2026-09-29")
    ('fx', datetime.date(2026, 9, 28), datetime.date(2026, 9, 29))
    >>> ingest_days("pricing:fx.daily_rates+") is None
    True
    """
    m = _SELECTOR.match(selector or "")
    if not m:
        return None
    return m["name"], date.fromisoformat(m["start"]), date.fromisoformat(m["end"])


def as_day(value: Any, what: str) -> date:
    """A date from a date or an ISO day (``what`` names it in the error).

    >>> as_day("2026-09-28", "start")
    datetime.date(2026, 9, 28)
    """
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise InputError(f"--{what} {value!r} is not a day.", fix="give it as YYYY-MM-DD") from None


def _job(ws: Workspace, name: str) -> Any:
    job = next((j for j in ws.config.ingestion if j.name == name), None)
    if job is None:
        known = ", ".join(j.name for j in ws.config.ingestion) or "none declared"
        raise InputError(
            f"no ingestion job {name!r} in splice.toml.",
            fix=f"name one of its [[ingestion]] jobs ({known})",
        )
    return job


def _view(ws: Workspace, job: Any, start: date, end: date) -> dict[str, Any]:
    """What the executor runs: the command, or the orchestrator's runs for the days."""
    if job.orchestrated:
        from splice.orchestrators import for_job

        orch = for_job(job, ws.root)
        assert orch is not None
        where = orch.check()  # unreachable or unknown job: a one-line OrchestratorError
        runs = [{"run_config": c, "tags": t} for c, t in orch.requests(start, end, {})]
        return {"orchestrator": {"system": orch.system, "url": orch.cfg.url, "job": orch.job,
                                 **where, "days": orch.cfg.days, "runs": runs}}  # fmt: skip
    if not job.command:
        raise InputError(
            f"ingestion job {job.name!r} has no command to run it with.",
            fix=f"give [[ingestion]] {job.name!r} a command with {{start}} and {{end}} in "
            "splice.toml",
        )
    return {"command": [a.format(start=start.isoformat(), end=end.isoformat())
                        for a in job.command]}  # fmt: skip


def ingestion_plan(ws: Workspace, name: str, start: date, end: date) -> Plan:
    """A plan that runs ingestion job ``name`` for ``start .. end`` (one segment)."""
    if end < start:
        raise InputError(f"the last day {end} is before the first {start}.",
                         fix="give --start on or before --end")  # fmt: skip
    job = _job(ws, name)
    node_id = f"ingestion:{name}"
    graph = ws.graph()
    if node_id not in graph.nodes:
        raise InputError(f"{node_id} is not in the graph.", fix="check splice.toml's [[ingestion]]")
    text = f"ingestion run of {name} for {start.isoformat()}..{end.isoformat()}"
    decision = NodeDecision(
        node_id=node_id,
        project=graph.nodes[node_id].project,
        action="build",
        reasons=[Reason("ingest", text, data={"start": start.isoformat(), "end": end.isoformat()})],
        tool_view=_view(ws, job, start, end),
    )
    seg = Segment(id="s1", project=graph.nodes[node_id].project, format="ingestion",
                  environment="prod", node_ids=[node_id])  # fmt: skip
    return Plan(
        target=ws.target,
        environments={seg.project: seg.environment},
        decisions={node_id: decision},
        segments=[seg],
        selector=ingest_selector(name, start, end),
        created_at=time.time(),
        # the clock after the last day loaded (the data clock, as a production run's)
        execution_time=(end + timedelta(days=1)).isoformat(),
    )
