"""An incident in words: what ``splice incident show``, the demo and receipts print."""

from __future__ import annotations

from typing import Any

from splice.support.clock import utc_text
from splice.support.numbers import value
from splice.watch.incidents import Incident

MAX_EVIDENCE = 6


def _fmt(v: Any) -> str:
    return value(v)


def path_line(path: list[dict[str, Any]]) -> str:
    """The column path as one line, nearest first.

    >>> path_line([{"node": "p:a", "column": "x", "across_binding": False},
    ...            {"node": "ingestion:j", "column": "x", "across_binding": True,
    ...             "relation": "wh.raw.t"}])
    'p:a.x <- (binding) ingestion:j.x [wh.raw.t]'
    """
    parts = []
    for step in path:
        text = f"{step['node']}.{step['column']}"
        if step.get("relation"):
            text += f" [{step['relation']}]"
        if step.get("across_binding"):
            text = "(binding) " + text
        parts.append(text)
    return " <- ".join(parts)


def incident_lines(inc: Incident) -> list[str]:
    """The diagnosis of one incident, as plain lines of text."""
    d = inc.diagnosis
    lines = [f"{inc.incident_id} [{inc.status}] {inc.title}"]
    lines.append(
        f"  target {inc.target}; {inc.anomalies} anomalies on "
        f"{inc.first_interval}..{inc.last_interval}"
        + (f"; {inc.resolution}" if inc.resolution else "")
    )
    origin = d.get("origin") or {}
    if origin.get("node"):
        cols = ", ".join(origin.get("columns") or [])
        lines.append(f"Where it starts: {origin['node']}" + (f" ({cols})" if cols else ""))
        lines.append(f"  {origin.get('why', '')}")
        for other in origin.get("other_origins") or []:
            lines.append(f"  also anomalous with nothing anomalous upstream: {other}")
    if d.get("path"):
        lines.append("Lineage: " + path_line(d["path"]))
    if d.get("cause"):
        lines.append("Cause: " + d["cause"])
    src = d.get("source") or {}
    for load in src.get("loads") or []:
        lines.append(
            f"  load {load['load_id']} of {src['node']}: {load_outcome(load)} at "
            f"{str(load['at'])[:19]}, {load['rows']} rows for {load['first']}..{load['last']}"
        )
    orch = src.get("orchestrator") or {}
    if orch.get("error"):
        lines.append(
            f"  {orch.get('system')} runs of {orch.get('job')}: not read ({orch['error']})"
        )
    for run in orch.get("runs") or []:
        part = f" partition {run['partition']}" if run.get("partition") else ""
        lines.append(
            f"  {run['system']} run {run['run_id'][:8]} of {run['job']}{part}: {run['status']}, "
            f"{utc_text(run.get('started'))} .. {utc_text(run.get('ended'))} ({run['url']})"
        )
    for p in src.get("payload_dates") or []:
        stale = [x for x in p["days"] if x["stale"]]
        for x in stale:
            lines.append(
                f"  {src['relation']}.{p['column']} for {x['interval']}: {x['oldest']} "
                f"({x['lag_days']} days behind; usually {p['usual_lag_days']})"
            )
    ev = d.get("evidence") or []
    if ev:
        lines.append("Evidence:")
        for e in ev[:MAX_EVIDENCE]:
            ex = e["example"]
            lines.append(
                f"  {e['metric']} {e['detector']}: {e['series']} series on "
                f"{', '.join(e['intervals'])}; e.g. {ex['series']} on {ex['interval']}: "
                f"{_fmt(ex['value'])} (expected {_fmt(ex['expected'])}). {ex['reason']}"
            )
        if len(ev) > MAX_EVIDENCE:
            lines.append(f"  (+{len(ev) - MAX_EVIDENCE} more; --json lists all)")
    blast = d.get("blast_radius") or {}
    if blast:
        nodes = blast.get("nodes") or []
        by_project: dict[str, list[str]] = {}
        for n in nodes:
            by_project.setdefault(n["project"], []).append(n["node"].split(":", 1)[1])
        lines.append(f"Blast radius: {len(nodes)} downstream node(s)")
        for proj, names in sorted(by_project.items()):
            lines.append(f"  {proj}: {', '.join(names)}")
        dash = blast.get("dashboards") or []
        if dash:
            lines.append(
                "  dashboards: "
                + ", ".join(f"{x['label'] or x['name']} ({x['node']})" for x in dash)
            )
        if blast.get("metrics"):
            lines.append("  metrics: " + ", ".join(m["name"] for m in blast["metrics"]))
        for env in blast.get("environments") or []:
            if "error" in env:
                lines.append(f"  {env['project']}: environments unknown ({env['error']})")
                continue
            where = f"{env['project']}@{env['environment']}"
            if env.get("target"):
                where += f" (target {env['target']})"
            lines.append(f"  {where}: {env['effect']}")
    scope = d.get("scope") or {}
    if scope.get("start"):
        lines.append(f"Scope: {scope['start']}..{scope['end']} ({scope.get('why', '')})")
        from splice.watch.scope import scope_lines

        lines += scope_lines(scope)
        if scope.get("derived_at"):
            lines.append(f"  (scope derived {utc_text(scope['derived_at'])} from the data "
                         f"through {scope.get('through') or 'unknown'}; every watch while the "
                         "incident is open derives it again)")  # fmt: skip
    return lines


def load_outcome(load: dict[str, Any]) -> str:
    """A load's outcome in words: its loader's status, or that only its rows tell of it.

    >>> load_outcome({"status": 0, "succeeded": True})
    'status 0 (succeeded)'
    >>> load_outcome({"status": None, "succeeded": None})
    'no load record (known from the rows it wrote)'
    """
    if load.get("succeeded") is None:
        return "no load record (known from the rows it wrote)"
    return f"status {load['status']} ({'succeeded' if load['succeeded'] else 'failed'})"
