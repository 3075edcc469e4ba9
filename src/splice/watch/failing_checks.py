"""Runs that keep failing are an incident: a check that failed in the last
:data:`FAILING_RUNS` runs in a row, noticed at every ``splice watch``.

A failing test on a seed (or a blocking audit) fails every run until someone fixes it: each
run skips the nodes below it, whose tables stay as they were, and no metric moves, so nothing
else would say so.  From the run journal, per check (a dbt test, a SQLMesh audit), its latest
streak of runs that ran it and failed (a run that passed it ends the streak; a run that did not
run it neither counts nor ends it).  A streak of :data:`FAILING_RUNS` or more is an anomaly
``failing_check`` on the checked node, one per data day of a failing run (the day before the
run's execution time: the interval it processed), so the incident, its diagnosis (fault class
``failed_audit``, the check named) and its scope (the checked node and the nodes the runs
skipped, :mod:`splice.watch.blocked`) follow as for any anomaly.

The anomalies live on the checked node's row-count monitor when it has one (as late rows do:
the metric a repair's verification measures again), else on a series of their own per check
(metric ``NODE/checks``, dimension ``check``, kind ``check``: there is no measured value, only
the runs' outcomes).  The check is named in each anomaly's ``data``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph
from splice.state.sql import Statement, placeholders, statement
from splice.watch.results import Anomaly, store_anomaly

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

DETECTOR = "failing_check"
#: A check failing in this many runs in a row (the runs that ran it) is an incident.
FAILING_RUNS = 3
#: The journal is read this many runs back.
RECENT_RUNS = 200
SERIES_KIND = "check"

_RECENT_RUNS = statement(
    "SELECT run_id, started_at FROM runs WHERE target = ? ORDER BY started_at DESC, "
    "run_id DESC LIMIT ?"
)
_ROW_COUNT_MONITOR = statement(
    "SELECT series_id, metric FROM watch_series WHERE target = ? AND metric = ? AND dims = ?"
)


def _data_day(started: float, execution_time: str | None) -> date:
    """The interval a run processed: the day before its execution time (else its start).

    >>> _data_day(0.0, "2026-09-29T00:00:00")
    datetime.date(2026, 9, 28)
    """
    if execution_time:
        try:
            return datetime.fromisoformat(execution_time).date() - timedelta(days=1)
        except ValueError:
            pass
    return datetime.fromtimestamp(started).date()


def streaks(conn: Any, target: str) -> dict[str, list[dict[str, Any]]]:
    """Per check: the failing runs of its latest streak, oldest first (each: ``run_id``,
    ``day``, ``at``, ``status``, ``of``, ``message``, ``failures``, ``blocking``, ``skipped``:
    the nodes that run skipped because of it)."""
    runs = conn.execute(_RECENT_RUNS, (target, RECENT_RUNS)).fetchall()
    if not runs:
        return {}
    started = {r[0]: float(r[1]) for r in runs}
    q = (
        exp.select("run_id", "kind", "node_id", "status", "data").from_("run_events")
        .where("kind IN ('run_started', 'check_finished', 'node_finished')",
               exp.column("run_id").isin(*placeholders(len(started))))
        .order_by("ts", "seq")
    )  # fmt: skip
    rows = conn.execute(Statement(q), list(started)).fetchall()
    clock: dict[str, str | None] = {}
    skipped: dict[str, list[tuple[str, str]]] = {}
    checks: list[tuple[str, str, str, dict[str, Any]]] = []
    for run_id, kind, node_id, status, data in rows:
        d = json.loads(data) if data else {}
        if kind == "run_started":
            clock[run_id] = d.get("execution_time")
        elif kind == "node_finished" and status == "skipped" and node_id:
            skipped.setdefault(run_id, []).append((node_id, str(d.get("skipped_because") or "")))
        elif kind == "check_finished" and node_id:
            checks.append((run_id, node_id, str(status), d))
    checks.sort(key=lambda c: started[c[0]])
    out: dict[str, list[dict[str, Any]]] = {}
    for run_id, check, status, d in checks:
        if status in ("pass", "success", "warn"):
            out.pop(check, None)
        elif status in ("fail", "error"):
            of = [str(x) for x in d.get("of") or []]
            out.setdefault(check, []).append({
                "run_id": run_id, "status": status, "of": of,
                "day": _data_day(started[run_id], clock.get(run_id)).isoformat(),
                "at": datetime.fromtimestamp(started[run_id]).isoformat(timespec="seconds"),
                "message": str(d.get("message") or "")[:200] or None,
                "failures": d.get("failures"), "blocking": d.get("blocking"),
                "skipped": sorted({n for n, why in skipped.get(run_id, [])
                                   if any(o in why for o in of) or check in why}),
            })  # fmt: skip
    return out


def find_failing_checks(
    ws: Workspace, graph: Graph, say: Callable[[str], None] | None = None
) -> list[Anomaly]:
    """The checks failing in :data:`FAILING_RUNS` runs in a row or more, as anomalies (not
    stored).  A failure here never fails the watch: it is said (``say``), nothing is found."""
    try:
        return _find(ws.state.conn, ws.target, graph)
    except Exception as e:  # noqa: BLE001 - the metrics' watch stands without this check
        if say is not None:
            say(f"Failing checks were not looked for: {str(e).splitlines()[0]}")
        return []


def _find(conn: Any, target: str, graph: Graph) -> list[Anomaly]:
    found: list[Anomaly] = []
    for check, runs in sorted(streaks(conn, target).items()):
        if len(runs) < FAILING_RUNS:
            continue
        cnode = graph.nodes.get(check)
        of = [o for o in runs[-1]["of"] if o in graph.nodes] or (
            [o for o in cnode.depends_on if o in graph.nodes] if cnode is not None else [])  # fmt: skip
        if not of:
            continue  # a check of nothing in the graph any more
        node = graph.nodes[of[0]]
        name = cnode.name if cnode is not None else check.split(":")[-1]
        what = cnode.kind if cnode is not None and cnode.kind in ("test", "audit") else "check"
        first, last = runs[0], runs[-1]
        stale = sorted({n for r in runs for n in r["skipped"]})
        reason = (
            f"{what} {name} of {node.name} failed in {len(runs)} runs in a row since "
            f"{first['run_id']} ({first['at']})"
            + (f": {last['message']}" if last.get("message") else "")
            + (f"; the runs skipped {', '.join(stale)}, whose tables stay as they were"
               if stale else "")
        )  # fmt: skip
        seen: set[str] = set()
        for r in runs:
            if r["day"] in seen:
                continue
            seen.add(r["day"])
            found.append(Anomaly(
                metric=f"{node.id}/checks", node_id=node.id, dims={"check": name},
                interval=date.fromisoformat(r["day"]), detector=DETECTOR, direction="down",
                value=float(len(runs)), expected=0.0, score=float(len(runs)), reason=reason,
                data={"check": check, "kind": what, "runs": [x["run_id"] for x in runs],
                      "run": r["run_id"], "first_run": first["run_id"],
                      "last_run": last["run_id"], "message": last.get("message"),
                      "failures": last.get("failures"), "blocking": last.get("blocking"),
                      "skipped": stale},
                owner=node.owner,
            ))  # fmt: skip
    return found


def record_failing_checks(
    conn: Any, target: str, watch_id: str, now: float, found: list[Anomaly]
) -> list[Anomaly]:
    """Store the anomalies of :func:`find_failing_checks` (inside the watch's transaction), each
    on its check's series; returns those not stored before."""
    from splice.watch.history import dims_key, ensure_series

    out = []
    for a in found:
        monitor = conn.execute(
            _ROW_COUNT_MONITOR, (target, f"{a.node_id}/row_count", dims_key({}))
        ).fetchone()
        if monitor is not None:
            sid, a.metric, a.dims = int(monitor[0]), str(monitor[1]), {}
        else:
            sid = ensure_series(conn, target, a.metric, a.node_id, a.metric, SERIES_KIND,
                                a.dims, now)  # fmt: skip
        if store_anomaly(conn, sid, target, a, watch_id, now):
            out.append(a)
    return out
