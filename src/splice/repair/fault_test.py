"""The fault's own test, applied again to every repaired interval at the origin.

Recomputation (:mod:`splice.repair.recompute`) proves production equals a rebuild from its
inputs; it cannot see an input that is itself still wrong (a reload that fetched the frozen rates
again for one of the days).  So the origin's series are judged by the fault's own words:

- every repaired interval must have **changed** on the series the fault was seen on: an interval
  that still holds the values it had when the incident was found was not repaired (its own
  summary would list it as unchanged), whatever the detectors think of it now;
- a value that **stopped moving** must no longer hold the frozen reference day's values (not
  merely "differ from the day before");
- a **late** feed must no longer hold the values of the interval(s) before it.

An interval fails when at least half of the fault's series on it still fail (a pegged currency
that truly repeats cannot fail a repair on its own).  The values are the watch's own points,
read before the repair's verification measures afresh (``before``) and after (``after``).

>>> c = [Case(1, "m", {"c": "EUR"}, "2026-09-28", "2026-09-25", 1.1),
...      Case(2, "m", {"c": "JPY"}, "2026-09-28", "2026-09-25", 0.007)]
>>> after = {(1, "2026-09-28"): 1.2, (1, "2026-09-25"): 1.1, (2, "2026-09-28"): 0.007,
...          (2, "2026-09-25"): 0.0069}
>>> [(f["interval"], f["unchanged"], f["still"]) for f in judge(c, after, "stopped_moving")]
[('2026-09-28', 1, 0)]
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.state.sql import Statement, in_list, statement

_FOUND_SELECT = statement("SELECT proposal_id FROM repair_proposals WHERE incident_id = ?")
_CASES_SELECT = statement(
    "SELECT series_id, dims FROM watch_series WHERE target = ? AND metric = ?"
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Share of the fault's series on an interval that must still fail for the interval to fail.
SHARE = 0.5
#: Fault classes whose reference interval is judged (the rest: "changed" only).
REFERENCED = ("stopped_moving", "late")


@dataclass
class Case:
    """One series on one repaired interval: its value when found and the interval it repeated."""

    series_id: int
    metric: str
    dims: dict[str, Any]
    interval: str
    reference: str | None
    before: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _series_points(conn: Any, ids: list[int]) -> dict[int, list[tuple[str, float | None]]]:
    out: dict[int, list[tuple[str, float | None]]] = defaultdict(list)
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        q = exp.select("series_id", "interval_start", "value").from_("watch_points")
        q = q.where(in_list("series_id", len(chunk))).order_by("interval_start")
        rows = conn.execute(Statement(q), chunk).fetchall()
        for sid, day, v in rows:
            out[int(sid)].append((str(day)[:10], v))
    return out


def cases(conn: Any, target: str, diagnosis: dict[str, Any], anomalies: list[dict[str, Any]],
          intervals: list[str]) -> list[Case]:  # fmt: skip
    """The cases to judge: every series the fault was seen on at the origin, on every repaired
    interval of the origin (``intervals``), with its value now (before the repair is measured)."""
    origin = (diagnosis.get("origin") or {}).get("node")
    fault = diagnosis.get("fault") or {}
    cls = str(fault.get("class") or "")
    n = int(fault.get("n") or 1) if cls == "late" else 0
    at = [a for a in anomalies if a["node_id"] == origin]
    if not at or not intervals:
        return []
    same_as: dict[tuple[str, str], str] = {}
    for a in at:
        key = (a["metric"], json.dumps(a["dims"], sort_keys=True))
        s = (a.get("data") or {}).get("same_as")
        if a["detector"] == "stopped_moving" and s:
            same_as.setdefault(key, str(s)[:10])
    ids: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for a in at:
        key = (a["metric"], json.dumps(a["dims"], sort_keys=True))
        if key in ids:
            continue
        for sid, dims in conn.execute(
            _CASES_SELECT,
            (target, a["metric"]),
        ).fetchall():
            if json.loads(dims) == a["dims"]:
                ids[key] = (int(sid), a["dims"])
                break
    points = _series_points(conn, [sid for sid, _ in ids.values()])
    out: list[Case] = []
    for key, (sid, dims) in sorted(ids.items()):
        pts = points.get(sid, [])
        days = [d for d, _ in pts]
        value = dict(pts)
        for day in intervals:
            # the reference applies to the series that repeated (the rates, not their as-of
            # lag, whose usual value repeats every day); the others must have changed
            ref: str | None = None
            if cls == "stopped_moving":
                ref = same_as.get(key)
            elif cls == "late" and key in same_as and day in days and days.index(day) >= n:
                ref = days[days.index(day) - n]
            if ref == day:
                ref = None
            out.append(Case(sid, key[0], dims, day, ref or None, value.get(day)))
    return out


def found(ws: Workspace, incident_id: str) -> list[Case]:
    """The cases of an incident with its values as found: as they are now (before its repair
    runs), except where an earlier repair of the same incident recorded them first (a follow-up
    repair is judged against the values the fault left, not those the first repair left)."""
    from splice.approvals import auditlog
    from splice.repair.damage import node_damage
    from splice.watch.incidents import get_incident, incident_anomalies

    conn = ws.state.conn
    inc = get_incident(conn, incident_id)
    damage = node_damage(inc.diagnosis or {})
    days = [d.isoformat() for d in damage[0].days] if damage else []
    now = cases(conn, ws.target, inc.diagnosis or {}, incident_anomalies(conn, incident_id), days)
    first: dict[tuple[int, str], Case] = {}
    ids = [r[0] for r in conn.execute(
        _FOUND_SELECT, (inc.incident_id,))]  # fmt: skip
    for pid in ids:
        for e in auditlog.entries(ws.state, pid):
            payload = e.as_dict().get("payload") or {}
            for c in (payload.get("fault_cases") or []) if isinstance(payload, dict) else []:
                case = Case(**c)
                first.setdefault((case.series_id, case.interval), case)
    if not first:
        return now
    keep = {(c.series_id, c.interval): c for c in now}
    for key, c in first.items():
        if key in keep:
            keep[key] = Case(c.series_id, c.metric, c.dims, c.interval,
                             keep[key].reference or c.reference, c.before)  # fmt: skip
        else:
            keep[key] = c
    return sorted(keep.values(), key=lambda c: (c.series_id, c.interval))


def judge(cs: list[Case], after: dict[tuple[int, str], float | None], cls: str
          ) -> list[dict[str, Any]]:  # fmt: skip
    """The intervals that still fail the fault's test: ``{"interval", "series", "unchanged",
    "still", "examples"}`` (``still``: series still holding the reference interval's values)."""
    by_day: dict[str, list[Case]] = defaultdict(list)
    for c in cs:
        by_day[c.interval].append(c)
    failed = []
    for day, group in sorted(by_day.items()):
        present = [c for c in group if (c.series_id, day) in after or c.before is not None]
        if not present:
            continue
        unchanged = [c for c in present
                     if c.before is not None and _same(after.get((c.series_id, day)), c.before)]  # fmt: skip
        still = [
            c for c in present
            if cls in REFERENCED and c.reference is not None
            and (c.series_id, c.reference) in after
            and _same(after.get((c.series_id, day)), after.get((c.series_id, c.reference)))
        ]  # fmt: skip
        need = max(1, math.ceil(SHARE * len(present)))
        if len(unchanged) >= need or len(still) >= need:
            ex = (still or unchanged)[:3]
            failed.append({
                "interval": day, "series": len(present), "unchanged": len(unchanged),
                "still": len(still),
                "examples": [{"metric": c.metric, "dims": c.dims, "before": c.before,
                              "after": after.get((c.series_id, day)), "reference": c.reference,
                              "reference_value": after.get((c.series_id, c.reference))
                              if c.reference else None} for c in ex],
            })  # fmt: skip
    return failed


def after_values(conn: Any, cs: list[Case]) -> dict[tuple[int, str], float | None]:
    """The points of the cases' series now (after the repair was measured)."""
    pts = _series_points(conn, sorted({c.series_id for c in cs}))
    return {(sid, d): v for sid, rows in pts.items() for d, v in rows}


def words(failed: list[dict[str, Any]], cls: str) -> str:
    """The failed intervals in one sentence."""
    parts = []
    for f in failed:
        what = []
        if f["unchanged"]:
            what.append(f"{f['unchanged']} of {f['series']} series still hold the values they "
                        "had when the incident was found")  # fmt: skip
        if f["still"]:
            ref = next((e["reference"] for e in f["examples"] if e.get("reference")), None)
            label = "stopped-moving reference" if cls == "stopped_moving" else "earlier interval"
            what.append(f"{f['still']} of {f['series']} series still repeat the {label}"
                        + (f" {ref}" if ref else ""))  # fmt: skip
        parts.append(f"{f['interval']}: {'; '.join(what)}")
    return "the fault's own test still fails on " + "; ".join(parts)
