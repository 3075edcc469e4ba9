"""The reading tool groups: ``catalog``, ``incidents``, ``quality``, ``connectors``.

Each tool is thin: one :mod:`splice.api` call through :func:`splice.mcp.calls.call`.
The docstrings are what an agent reads to choose a tool; keep them about the question a tool
answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context

from splice import api
from splice.mcp.calls import call
from splice.mcp.params import (
    AnomalyStatus,
    Column,
    Depth,
    Direction,
    IncidentId,
    IncidentStatus,
    Last,
    Limit,
    MetricFilter,
    MetricName,
    NodeId,
    NodeKind,
    Query,
    RunId,
    Selector,
    Series,
    Since,
)

if TYPE_CHECKING:
    from splice.api import Workspace

Ctx = Context[Any, Any]


# -- catalog --------------------------------------------------------------------------------
def search_nodes(ctx: Ctx, query: Query, kind: NodeKind = None, limit: Limit = 20) -> Any:
    """Find models, sources, seeds, ingestion tables and dashboards by name, description or
    column (for example "gmv" or "fx rates"), best match first. Each result's ``id`` is what
    get_node, get_graph and get_column_lineage take."""
    return call(ctx, lambda ws: api.search_nodes(ws, query, kind=kind, limit=limit), key="nodes")


def get_node(ctx: Ctx, node_id: NodeId) -> Any:
    """One node: its tool and project, relation, columns with types, parents and children,
    owners, and its last build."""
    return call(ctx, lambda ws: api.node_details(ws, node_id))


def get_graph(ctx: Ctx, selector: Selector = None) -> Any:
    """The joined graph across dbt, SQLMesh, ingestion and dashboards (optionally a selection
    such as "+pricing:marts.agg_gmv_daily", everything upstream of it) as nodes and edges."""
    return call(ctx, lambda ws: api.graph_view(ws, selector, "json"))


def get_column_lineage(
    ctx: Ctx,
    column: Column,
    direction: Direction = "both",
    depth: Depth = None,
) -> Any:
    """Column lineage across tools for "node.column" (for example
    "pricing:fx.daily_rates.rate_to_usd"): where it comes from (up) and what reads it, down to
    the dashboards (down)."""
    way = {"up": "upstream", "down": "downstream"}.get(direction)
    return call(ctx, lambda ws: api.lineage(ws, column, direction=way, depth=depth))


def run_doctor(ctx: Ctx) -> Any:
    """Where the join of projects is weak: unbound sources, ambiguous relations, lineage gaps."""
    return call(ctx, lambda ws: api.doctor(ws), key="checks")


# -- incidents ------------------------------------------------------------------------------
def list_incidents(ctx: Ctx, status: IncidentStatus = "open") -> Any:
    """The target's incidents, newest first: id, title, origin node, intervals, anomalies;
    ``opened_at`` and ``resolved_at`` in ISO 8601 (UTC)."""
    return call(
        ctx,
        lambda ws: [
            i.as_dict(with_diagnosis=False)
            for i in api.list_incidents(ws, status=None if status == "all" else status)
        ],
        key="incidents",
    )


def get_incident(ctx: Ctx, incident_id: IncidentId) -> Any:
    """One incident with its diagnosis: the origin node and the cause across systems (for
    example a vendor's frozen rates), the evidence, the blast radius down to dashboards, and
    the repair scope."""
    return call(ctx, lambda ws: api.incident(ws, incident_id))


def run_watch(ctx: Ctx) -> Any:
    """Measure every metric and monitor for the intervals not yet judged, and open or update
    incidents (writes Splice's history; changes nothing in the warehouse)."""
    return call(ctx, lambda ws: api.watch(ws), notify=True)


# -- quality --------------------------------------------------------------------------------
def list_metrics(ctx: Ctx) -> Any:
    """Every metric and default monitor watched, with how far it is measured and its open
    anomalies."""
    return call(ctx, lambda ws: api.metrics(ws), key="metrics")


def get_metric_history(ctx: Ctx, name: MetricName, series: Series = None, last: Last = None) -> Any:
    """A metric's values per series with the baseline the detectors compare against, and the
    anomalies found on it."""
    return call(ctx, lambda ws: api.metric_history(ws, name, series=series, last=last))


def list_anomalies(
    ctx: Ctx, status: AnomalyStatus = None, metric: MetricFilter = None, since: Since = None
) -> Any:
    """Anomalies the detectors found (optionally of one status or metric, or since a date)."""
    return call(
        ctx,
        lambda ws: api.anomalies(ws, status=status, metric=metric, since=since),
        key="anomalies",
    )


def list_default_monitors(ctx: Ctx) -> Any:
    """The monitors Splice derives from the graph for every node with a time column (volume,
    nulls, duplicates, per-dimension values, lags), and why each applies."""
    return call(ctx, lambda ws: api.default_monitors(ws), key="monitors")


# -- connectors -----------------------------------------------------------------------------
def list_ingestion_jobs(ctx: Ctx) -> Any:
    """The ingestion jobs before the models (dlt pipelines and the like), their tables and
    their recent loads."""
    return call(ctx, lambda ws: api.ingestion_jobs(ws), key="jobs")


def list_dashboards(ctx: Ctx) -> Any:
    """The dashboards after the models, the columns they read and what is upstream of them."""
    return call(ctx, lambda ws: api.dashboards(ws), key="dashboards")


def list_runs(ctx: Ctx, limit: Limit = 20) -> Any:
    """The runs in the journal, newest first (status, what built, how long; times in ISO 8601,
    UTC)."""
    return call(ctx, lambda ws: api.list_runs(ws, limit=limit), key="runs")


def get_run_journal(ctx: Ctx, run_id: RunId) -> Any:
    """One run (an id, a unique prefix, or "latest") and its events in order."""

    def journal(ws: Workspace) -> Any:
        rid = run_id
        if rid.strip().lower() == "latest":
            newest = api.list_runs(ws, limit=1)
            rid = newest[0]["run_id"] if newest else rid
        return api.run_journal(ws, rid)

    return call(ctx, journal)


def list_schedules(ctx: Ctx) -> Any:
    """The schedules splice serve runs by itself ([[schedule]]: cron, time zone, run and/or
    watch), each with its next tick and last outcome; the operator's clock, each domain's
    autonomy level (L0-L4) and the org-wide stop."""
    return call(ctx, lambda ws: api.operator_status(ws))


def get_operator_activity(ctx: Ctx, limit: Limit = 50) -> Any:
    """What the operator did by itself, newest first: schedules run or skipped, what triggered
    each watch (a schedule, a run, an orchestrator's run, an OpenLineage event), and every
    autonomous step (told, proposed, approved and applied, held) with the rule that allowed it."""
    return call(ctx, lambda ws: api.operator_activity(ws, limit=limit), key="activity")


GROUPS: dict[str, list[Any]] = {
    "catalog": [search_nodes, get_node, get_graph, get_column_lineage, run_doctor],
    "incidents": [list_incidents, get_incident, run_watch],
    "quality": [list_metrics, get_metric_history, list_anomalies, list_default_monitors],
    "connectors": [
        list_ingestion_jobs,
        list_dashboards,
        list_runs,
        get_run_journal,
        list_schedules,
        get_operator_activity,
    ],
}

#: Tools that write Splice's own state (never the warehouse's data).
WRITES_STATE = {"run_watch"}
#: Reads answered from Splice's state and the loaded graph (and its column lineage, once
#: analysed): no warehouse query, no tool. They run one at a time (splice.mcp.server.LANES).
FROM_STATE = {
    "search_nodes",
    "get_column_lineage",
    "list_incidents",
    "get_incident",
    "list_anomalies",
    "list_runs",
    "get_run_journal",
    "list_dashboards",
    "list_schedules",
    "get_operator_activity",
}
