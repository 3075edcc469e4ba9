"""Reads for people and agents (metrics, anomalies, connectors, nodes) and notifications."""

from __future__ import annotations

from typing import Any

from splice.workspace.core import Workspace


# == reads for people and agents (splice.reads): the quality and connectors tool groups =========
# Kept together at the end of this module, each a thin wrapper over splice.reads; every result
# is plain JSON-ready data (dates as ISO text).
def metrics(ws: Workspace, *, monitors: bool = True) -> list[dict[str, Any]]:
    """Every metric and default monitor ``splice watch`` measures for the target, with its
    series count, how far it is measured, its newest values and its open anomalies."""
    from splice.reads.quality import metrics as _metrics

    return _metrics(ws, monitors=monitors)


def metric_history(
    ws: Workspace, name: str, *, series: str | None = None, last: int | None = None
) -> dict[str, Any]:
    """One metric's points per series, each with its rolling median/MAD baseline and band,
    and the anomalies on it (see :func:`splice.reads.quality.metric_history`)."""
    from splice.reads.quality import metric_history as _history

    return _history(ws, name, series=series, last=last)


def anomalies(
    ws: Workspace,
    *,
    status: str | None = None,
    metric: str | None = None,
    since: Any = None,
) -> list[dict[str, Any]]:
    """The stored anomalies of the target, newest interval first (``status`` is the incident's:
    open, resolved, accepted, merged; None: all)."""
    from splice.reads.quality import anomalies as _anomalies

    return _anomalies(ws, status=status, metric=metric, since=since)


def default_monitors(ws: Workspace) -> list[dict[str, Any]]:
    """The monitors derived from the graph: node, monitor, kind, column and why."""
    from splice.reads.quality import default_monitors as _monitors

    return _monitors(ws)


def ingestion_jobs(ws: Workspace) -> list[dict[str, Any]]:
    """Each ``[[ingestion]]`` job with its tables and its recent dlt loads (read-only)."""
    from splice.reads.connectors import ingestion_jobs as _jobs

    return _jobs(ws)


def dashboards(ws: Workspace) -> list[dict[str, Any]]:
    """Each dashboard (declared or a dbt exposure): what it reads and everything upstream."""
    from splice.reads.connectors import dashboards as _dashboards

    return _dashboards(ws)


def search_nodes(
    ws: Workspace, query: str, *, kind: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Nodes matching ``query`` by name, columns, metrics and descriptions, best first."""
    from splice.reads.nodes import search_nodes as _search

    return _search(ws, query, kind=kind, limit=limit)


def node_details(ws: Workspace, node_id: str) -> dict[str, Any]:
    """One node: record, typed and described columns, neighbours, domain, last build."""
    from splice.reads.nodes import node_details as _details

    return _details(ws, node_id)


def node_sql(ws: Workspace, node_id: str, *, render: bool = False) -> dict[str, Any]:
    """A node's raw SQL (its file) and compiled SQL (dbt's target/compiled, else rendered by
    the tool when ``render`` or when the tool is loaded already; see
    :func:`splice.reads.node_sql.node_sql`)."""
    from splice.reads.node_sql import node_sql as _sql

    return _sql(ws, node_id, render=render)


def node_domains(ws: Workspace, node_ids: list[str]) -> dict[str, str | None]:
    """The domain each node belongs to (None where no domain covers it, or it is unknown)."""
    from splice.approvals.domains import domain_for

    g = ws.graph()
    out: dict[str, str | None] = {}
    for nid in node_ids:
        d = domain_for(g, ws.config, nid) if nid in g.nodes else None
        out[nid] = d.name if d is not None else None
    return out


def graph_drawing(
    ws: Workspace, *, checks: bool = False, project: str | None = None
) -> dict[str, Any]:
    """Every node of the graph laid out in columns for drawing (checks only with ``checks``;
    see :func:`splice.reads.graph_drawing.whole_graph`)."""
    from splice.reads.graph_drawing import whole_graph

    return whole_graph(ws, checks=checks, project=project)


def incident_charts(
    ws: Workspace, incident_id: str, picks: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """One chart's data per anomalous metric of an incident: a series' history, the band its
    detectors tolerate, the anomalous intervals marked, every series of the metric to pick
    from (``picks``: metric -> the series label to draw) and the stopped-moving detector's
    repeat (see :func:`splice.reads.incident_charts.incident_charts`)."""
    from splice.reads.incident_charts import incident_charts as _charts

    return _charts(ws, incident_id, picks)


def incident_lineage(ws: Workspace, incident_id: str) -> dict[str, Any]:
    """An incident's lineage laid out left to right, from the ingestion job through the origin
    to the dashboards (see :func:`splice.reads.incident_lineage.incident_lineage`)."""
    from splice.reads.incident_lineage import incident_lineage as _lineage

    return _lineage(ws, incident_id)


def format_number(v: Any) -> str:
    """A number as Splice shows it in reasons and tables (short, exact enough)."""
    from splice.watch.panel import fmt

    return fmt(v)


def detector_words(detector: str) -> str:
    """What a detector found, in the words of the diagnosis ("stopped moving", "jumped").

    >>> detector_words("stopped_moving"), detector_words("something_new")
    ('stopped moving', 'something_new')
    """
    from splice.watch.diagnosis import DETECTOR_WORDS

    return DETECTOR_WORDS.get(detector, detector)


# -- notifications (splice.notify) ----------------------------------------------------------------
def notify_pending(ws: Workspace, *, now: float | None = None) -> Any:
    """Tell the ``[[notify]]`` channels what happened since the last call: queue the new events
    (audit-log decisions, incidents opened) and send what is due, retrying failed sends with
    backoff. Never raises because a channel failed
    (:class:`splice.notify.outbox.DeliveryReport`)."""
    from splice.notify.outbox import deliver

    return deliver(ws, now=now)


def housekeeping(ws: Workspace, *, now: float | None = None) -> Any:
    """What must happen on time without anyone asking (``splice serve`` calls it every few
    seconds): unanswered requests escalate and expire as of ``now``, access grants whose time is
    up are revoked, then the channels are told
    (returns the :class:`splice.notify.outbox.DeliveryReport`)."""
    from splice.api.grants import end_due_access
    from splice.errors import SpliceError
    from splice.repair.approvals import refresh_all

    problems = []
    try:
        refresh_all(ws, now=now)
    except SpliceError as e:  # a decision raced this one: the next call applies it
        problems.append(f"expiry and escalation: {e.message}")
    try:  # access grants whose time is up are revoked on time
        problems.extend(end_due_access(ws, now=now))
    except SpliceError as e:
        problems.append(f"access grants: {e.message}")
    report = notify_pending(ws)
    report.errors[:0] = problems
    return report


def notify_status(ws: Workspace) -> dict[str, Any]:
    """The notification outbox: channels, counts per status, deliveries not yet delivered."""
    from splice.notify.outbox import status

    return status(ws)


def notify_test(ws: Workspace, *, channel: str | None = None) -> list[dict[str, Any]]:
    """Send a test message to every ``[[notify]]`` channel (or the one named), now."""
    from splice.notify.outbox import send_test

    return send_test(ws, channel)


# -- the web page's graph pages (splice.reads.neighbourhood) --------------------------------------
def node_neighbourhood(ws: Workspace, node_id: str, *, limit: int = 300) -> dict[str, Any]:
    """Every node upstream and downstream of one node across projects, nearest first, each with
    its distance and the binding crossed to reach it (tests and audits left out)."""
    from splice.reads.neighbourhood import node_neighbourhood as _around

    return _around(ws, node_id, limit=limit)


def graph_summary(ws: Workspace, *, bindings: int = 50) -> dict[str, Any]:
    """Per project its tool and node counts per kind; the bindings that join the projects."""
    from splice.reads.neighbourhood import graph_summary as _summary

    return _summary(ws, bindings=bindings)


def review(root: Any, **options: Any) -> Any:
    """A pull request's review: :func:`splice.review.review` (its options: base, head, data,
    keep, target, execution_time, progress); the result's ``comment_limit`` bounds its Markdown."""
    from splice.review import review as _review

    return _review(root, **options)


def review_markdown(data: dict[str, Any], limit: int = 60_000) -> str:
    from splice.review.render import markdown

    return markdown(data, limit)


def review_text(data: dict[str, Any]) -> str:
    from splice.review.render import text

    return text(data)
