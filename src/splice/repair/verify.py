"""Verification after a repair: the numbers are back within their baseline, nothing else moved.

For the metrics of the incident (every spec one of its anomalies belongs to) and the declared
metrics in its blast radius, Splice

1. reads the stored points (the values as they were when the incident was found);
2. measures and judges those metrics afresh over their whole history (``splice watch
   --backfill -m ...``: the same queries and detectors as every watch);
3. compares: inside the scope the values should have changed and no anomaly may remain;
   outside the scope no value may have changed (a repair that moves other days is wrong).

The incident is resolved only when both hold; otherwise it stays open and the result says what
is still wrong.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

#: Two stored values are the same when they differ by no more than this (relative).
REL_TOL = 1e-9


@dataclass
class Verification:
    passed: bool
    specs: list[str]
    scope: list[str]
    changed_in_scope: int
    changed_outside: list[dict[str, Any]] = field(default_factory=list)
    remaining: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    summary: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "summary": self.summary,
            "specs": self.specs,
            "scope": self.scope,
            "changed_in_scope": self.changed_in_scope,
            "changed_outside": self.changed_outside[:50],
            "changed_outside_count": len(self.changed_outside),
            "remaining": self.remaining[:50],
            "remaining_count": len(self.remaining),
            "figures": self.figures,
            "seconds": round(self.seconds, 3),
        }


def _points(conn: Any, target: str, specs: list[str]) -> dict[tuple[str, str, str], float | None]:
    marks = ",".join("?" * len(specs))
    rows = conn.execute(
        "SELECT s.metric, s.dims, p.interval_start, p.value FROM watch_points p "
        "JOIN watch_series s ON s.series_id = p.series_id "
        f"WHERE s.target = ? AND s.spec IN ({marks})",
        [target, *specs],
    ).fetchall()
    return {(r[0], r[1], r[2]): r[3] for r in rows}


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def incident_specs(ws: Any, incident: Any, anomalies: list[dict[str, Any]]) -> list[str]:
    """The specs to verify: those of the incident's anomalies and its declared metrics."""
    specs = {a["spec"] for a in anomalies}
    blast = (incident.diagnosis or {}).get("blast_radius") or {}
    specs |= {m["name"] for m in blast.get("metrics") or []}
    return sorted(specs)


def verify(ws: Any, incident: Any, *, proposal_id: str | None = None) -> Verification:
    """Measure the incident's metrics afresh and judge the repair (see the module docstring)."""
    import time

    from splice.watch.incidents import incident_anomalies, resolve_incident
    from splice.watch.service import watch

    t0 = time.perf_counter()
    conn = ws.state.conn
    anomalies = incident_anomalies(conn, incident.incident_id)
    specs = incident_specs(ws, incident, anomalies)
    scope_days = (incident.diagnosis.get("scope") or {}).get("intervals") or []
    in_scope = set(scope_days)
    before = _points(conn, ws.target, specs)
    watch(ws, backfill=True, only=specs)
    after = _points(conn, ws.target, specs)
    changed_in = 0
    outside: list[dict[str, Any]] = []
    per_metric: dict[tuple[str, str], list[tuple[float | None, float | None]]] = defaultdict(list)
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        metric, dims, day = key
        if day in in_scope:
            per_metric[(metric, day)].append((b, a))
            if not _same(a, b):
                changed_in += 1
        elif not _same(a, b):
            outside.append({"metric": metric, "dims": json.loads(dims), "interval": day,
                            "before": b, "after": a})  # fmt: skip
    marks = ",".join("?" * len(specs))
    days = ",".join("?" * len(scope_days)) or "''"
    remaining = [
        {"metric": r[0], "dims": json.loads(r[1]), "interval": r[2], "detector": r[3],
         "reason": r[4]}
        for r in conn.execute(
            "SELECT a.metric, a.dims, a.interval_start, a.detector, a.reason "
            "FROM watch_anomalies a JOIN watch_series s ON s.series_id = a.series_id "
            f"WHERE a.target = ? AND s.spec IN ({marks}) AND a.interval_start IN ({days}) "
            "ORDER BY a.interval_start, a.metric",
            [ws.target, *specs, *scope_days],
        )
    ]  # fmt: skip
    figures = []
    for (metric, day), pairs in sorted(per_metric.items()):
        bs = [b for b, _ in pairs if b is not None]
        afs = [a for _, a in pairs if a is not None]
        figures.append({
            "metric": metric, "interval": day, "series": len(pairs),
            "changed": sum(1 for b, a in pairs if not _same(a, b)),
            "before": sum(bs) if len(pairs) == 1 and bs else (sum(bs) / len(bs) if bs else None),
            "after": sum(afs) if len(pairs) == 1 and afs else (sum(afs) / len(afs) if afs else None),
            "aggregate": "value" if len(pairs) == 1 else "mean over series",
        })  # fmt: skip
    passed = not remaining and not outside and changed_in > 0
    if passed:
        summary = (
            f"verified: {changed_in} value(s) in {', '.join(scope_days)} changed and are back "
            f"within their baseline (no anomaly remains); no value outside the scope changed"
        )
    else:
        parts = []
        if remaining:
            parts.append(f"{len(remaining)} anomal{'y' if len(remaining) == 1 else 'ies'} remain "
                         f"in scope (e.g. {remaining[0]['metric']} {remaining[0]['detector']} "
                         f"on {remaining[0]['interval']})")  # fmt: skip
        if outside:
            parts.append(f"{len(outside)} value(s) outside the scope changed (e.g. "
                         f"{outside[0]['metric']} on {outside[0]['interval']})")  # fmt: skip
        if changed_in == 0:
            parts.append("no value in the scope changed: the repair did not reach the metrics")
        summary = "not verified: " + "; ".join(parts)
    with ws.state.transaction():
        if passed:
            resolve_incident(
                conn, incident.incident_id,
                f"repaired{' by ' + proposal_id if proposal_id else ''}; {summary}",
            )  # fmt: skip
        else:
            conn.execute(
                "UPDATE incidents SET status = 'open', resolved_at = NULL, resolution = ? "
                "WHERE incident_id = ?",
                (summary, incident.incident_id),
            )
    return Verification(
        passed=passed, specs=specs, scope=scope_days, changed_in_scope=changed_in,
        changed_outside=outside, remaining=remaining, figures=figures,
        seconds=time.perf_counter() - t0, summary=summary,
    )  # fmt: skip
