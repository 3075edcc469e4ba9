"""Verification after a repair: every damaged interval measured, back within its baseline,
nothing else moved.

For the metrics of the incident (every spec one of its anomalies belongs to) and the declared
metrics in its blast radius, Splice

1. reads the stored points (the values as they were when the incident was found);
2. measures and judges those metrics afresh over their whole history (``splice watch
   --backfill -m ...``: the same queries and detectors as every watch);
3. compares, per spec, over the damaged intervals of the spec's own node (the diagnosis'
   per-node scope, :mod:`splice.repair.damage`: Friday's bad rate damages Saturday's and
   Sunday's GMV too; an older incident without it: the origin's intervals): inside, the values
   may change and no anomaly may remain; outside, no value may have changed (a repair that
   moves other days is wrong);
4. checks the repair reached every damaged interval: each one the proposal's undo did not
   rewrite fails it (a weekend left wrong).  A damaged interval whose values stayed as they
   were while the same metric changed on the node's other damaged intervals is named too, as
   a note: it is what a weekend left wrong looks like, but also what a scope wider than the
   damage looks like, so it alone does not fail a repair that rewrote it.

The incident is resolved only when all of it holds; otherwise it stays open and the result says
what is still wrong.  Anomalies the fresh measurement finds outside the repaired scope (a day
after it, say) are never resolved with it: they leave the incident and open a new one (or join
another open incident), and the result names it ("INC-2 opened: gmv_usd still anomalous on
2026-10-03, after the repaired scope").
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.repair import fault_test
from splice.repair.damage import NodeDamage, day_ranges, node_damage
from splice.repair.recompute import Recomputed, recompute
from splice.repair.recompute import words as recompute_words
from splice.state.sql import Statement, in_list, statement

_SETTLE_UPDATE = statement(
    "UPDATE incidents SET title = ?, origin_node = ?, diagnosis = ?, first_interval = ?, last_interval = ?, anomalies = MAX(?, (SELECT COUNT(*) FROM watch_anomalies a WHERE a.incident_id = incidents.incident_id) - ?) WHERE incident_id = ?"
)
_SETTLE_UPDATE_2 = statement(
    "UPDATE incidents SET status = 'open', resolved_at = NULL, resolution = ?, diagnosis = ? WHERE incident_id = ?"
)
_SETTLE_SELECT = statement("SELECT incident_id FROM watch_anomalies WHERE anomaly_id = ?")
_SETTLE_SELECT_2 = statement("SELECT resolved_at FROM incidents WHERE incident_id = ?")
_SETTLE_SELECT_3 = statement("SELECT opened_at FROM incidents WHERE incident_id = ?")

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Two stored values are the same when they differ by no more than this (relative).
REL_TOL = 1e-9

#: Materializations that store no rows of their own (nothing for a repair to rewrite).
_NOT_STORED = ("view", "ephemeral", "embedded")


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
    #: per node: the damaged intervals measured ({"node", "intervals", "specs"})
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: damaged intervals the repair did not rewrite (by the proposal's undo)
    not_rewritten: list[dict[str, Any]] = field(default_factory=list)
    #: damaged intervals whose values did not change while the same metric's others did (a note)
    unreached: list[dict[str, Any]] = field(default_factory=list)
    #: anomalies outside the repaired scope, and the incident they went to
    beyond: list[dict[str, Any]] = field(default_factory=list)
    #: what became of them, in words ("INC-2 opened: ...")
    followup: str | None = None
    #: production against a fresh build from the repaired inputs (:mod:`recompute`)
    recomputed: dict[str, Any] | None = None
    #: the fault's own test on the origin's repaired intervals (:mod:`fault_test`)
    fault_test: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "summary": self.summary,
            "specs": self.specs,
            "scope": self.scope,
            "nodes": self.nodes,
            "changed_in_scope": self.changed_in_scope,
            "changed_outside": self.changed_outside[:50],
            "changed_outside_count": len(self.changed_outside),
            "remaining": self.remaining[:50],
            "remaining_count": len(self.remaining),
            "not_rewritten": self.not_rewritten,
            "unreached": self.unreached,
            "beyond": self.beyond[:50],
            "beyond_count": len(self.beyond),
            "followup": self.followup,
            "recomputed": self.recomputed,
            "fault_test": self.fault_test,
            "figures": self.figures,
            "seconds": round(self.seconds, 3),
        }


Key = tuple[str, str, str, str, str]  # spec, node, metric, dims, interval


def _points(conn: Any, target: str, specs: list[str]) -> dict[Key, float | None]:
    q = (
        exp.select("s.spec", "s.node_id", "s.metric", "s.dims", "p.interval_start", "p.value")
        .from_("watch_points AS p")
        .join("watch_series AS s", on="s.series_id = p.series_id")
        .where(exp.to_column("s.target").eq(exp.Placeholder()))
        .where(in_list("s.spec", len(specs)))
    )
    rows = conn.execute(Statement(q), [target, *specs]).fetchall()
    return {(r[0], r[1], r[2], r[3], r[4]): r[5] for r in rows}


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def incident_specs(ws: Workspace, incident: Any, anomalies: list[dict[str, Any]]) -> list[str]:
    """The specs to verify: those of the incident's anomalies and its declared metrics."""
    from splice.watch.failing_checks import SERIES_KIND

    # a failing check's own series has no measured value: it is judged by the runs (below)
    specs = {a["spec"] for a in anomalies if a.get("kind") != SERIES_KIND}
    blast = (incident.diagnosis or {}).get("blast_radius") or {}
    specs |= {m["name"] for m in blast.get("metrics") or []}
    return sorted(specs)


class Scope:
    """Which (node, interval) the repair was meant to repair.

    >>> s = Scope(node_damage({"origin": {"node": "p:fx"}, "scope": {
    ...     "intervals": ["2026-09-25"], "nodes": [
    ...         {"node": "p:fx", "intervals": ["2026-09-25"]},
    ...         {"node": "p:gmv", "intervals": ["2026-09-25", "2026-09-26"]}]}}))
    >>> s.holds("p:gmv", "2026-09-26"), s.holds("p:fx", "2026-09-26"), s.holds("p:x", "2026-09-25")
    (True, False, True)
    """

    def __init__(self, damage: list[NodeDamage]) -> None:
        self.damage = damage
        self.by_node = {d.node: d for d in damage}
        origin = damage[0] if damage else None
        self.origin_days = {d.isoformat() for d in origin.days} if origin else set()

    def after(self, node: str, day: date) -> bool:
        """Is ``day`` later than every damaged interval of ``node`` (or of the origin, for a
        node the scope does not list)?"""
        d = self.by_node.get(node)
        days = d.days if d is not None else [date.fromisoformat(x) for x in self.origin_days]
        if d is not None and d.whole:
            return False
        return bool(days) and day > max(days)

    def holds(self, node: str, day: str) -> bool:
        d = self.by_node.get(node)
        if d is None:  # a node the scope does not list: the origin's intervals, as always
            return day in self.origin_days
        return d.covers(date.fromisoformat(day[:10]))


def _rewritten(ws: Workspace, proposal_id: str | None) -> dict[str, set[date] | None] | None:
    """Per node, the days the proposal's undo says it rewrites (None: the whole relation)."""
    if not proposal_id:
        return None
    from splice.repair import store

    p = store.load(ws.state, proposal_id)
    out: dict[str, set[date] | None] = {}
    for u in p.undo:
        if u.start is None or u.end is None:
            out[u.node_id] = None
            continue
        have = out.setdefault(u.node_id, set())
        if have is not None:
            have |= {date.fromordinal(o) for o in range(u.start.toordinal(), u.end.toordinal() + 1)}
    return out


def _not_rewritten(ws: Workspace, damage: list[NodeDamage], rewritten: dict[str, Any] | None
                   ) -> list[dict[str, Any]]:  # fmt: skip
    if rewritten is None:
        return []
    graph = ws.graph()
    out = []
    for d in damage:
        n = graph.nodes.get(d.node)
        if n is None or n.kind not in ("model", "seed", "snapshot") or not d.days:
            continue
        if (n.materialization or "").lower() in _NOT_STORED:
            continue
        if d.node in rewritten and rewritten[d.node] is None:
            continue  # rebuilt whole
        missing = set(d.days) - set(rewritten.get(d.node) or set())
        if missing:
            out.append({"node": d.node, "intervals": [x.isoformat() for x in sorted(missing)],
                        "ranges": [[a.isoformat(), b.isoformat()]
                                   for a, b in day_ranges(missing)]})  # fmt: skip
    return out


def verify(
    ws: Workspace, incident: Any, *, proposal_id: str | None = None, again: bool = False
) -> Verification:
    """Measure the incident's metrics afresh and judge the repair (see the module docstring).

    ``again``: a verification run once more (``splice verify``): the stored points may already
    be the repaired ones, so "a value in the scope changed" is not asked of them; the fault's
    own test judges against the values recorded when the repair began."""
    import time

    from splice.watch.incidents import incident_anomalies
    from splice.watch.service import watch

    t0 = time.perf_counter()
    conn = ws.state.conn
    anomalies = incident_anomalies(conn, incident.incident_id)
    specs = incident_specs(ws, incident, anomalies)
    damage = node_damage(incident.diagnosis or {})
    scope = Scope(damage)
    scope_days = (incident.diagnosis.get("scope") or {}).get("intervals") or []
    diag = incident.diagnosis or {}
    cls = str((diag.get("fault") or {}).get("class") or "")
    origin_days = [x.isoformat() for x in damage[0].days] if damage else []
    earlier = _earlier_cases(ws, proposal_id)
    cases = earlier if earlier is not None else fault_test.cases(
        conn, ws.target, diag, anomalies, origin_days)  # fmt: skip
    before = _points(conn, ws.target, specs)
    if specs:  # (an incident of failing checks alone has no metric: its runs judge it)
        watch(ws, backfill=True, only=specs)
    after = _points(conn, ws.target, specs)
    fault_failed = fault_test.judge(cases, fault_test.after_values(conn, cases), cls)
    rec = recompute(ws, damage)
    checks_failing = _checks_still_failing(ws, anomalies)
    changed_in = 0
    outside: list[dict[str, Any]] = []
    per_metric: dict[tuple[str, str], list[tuple[float | None, float | None]]] = defaultdict(list)
    moved: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)  # (spec, node) -> day
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        spec, node, metric, dims, day = key
        if scope.holds(node, day):
            per_metric[(metric, day)].append((b, a))
            same = _same(a, b)
            moved[(spec, node)][day] = moved[(spec, node)].get(day, False) or not same
            if not same:
                changed_in += 1
        elif not _same(a, b):
            outside.append({"metric": metric, "node": node, "dims": json.loads(dims),
                            "interval": day, "before": b, "after": a})  # fmt: skip
    anomalies_in = (
        exp.select("a.metric", "a.dims", "a.interval_start", "a.detector", "a.reason",
                   "a.node_id", "a.anomaly_id", "s.spec")
        .from_("watch_anomalies AS a")
        .join("watch_series AS s", on="s.series_id = a.series_id")
        .where(exp.to_column("a.target").eq(exp.Placeholder()))
        .where(in_list("s.spec", len(specs)))
        .order_by("a.interval_start", "a.metric")
    )  # fmt: skip
    remaining = [
        {"metric": r[0], "node": r[5], "dims": json.loads(r[1]), "interval": r[2],
         "detector": r[3], "reason": r[4], "anomaly_id": r[6],
         "_key": (r[7], r[5], r[0], r[1], r[2])}
        for r in conn.execute(Statement(anomalies_in), [ws.target, *specs])
        if scope.holds(r[5], r[2])
    ]  # fmt: skip
    # an anomaly the repair left exactly as it was, where production equals its rebuild and the
    # fault's own test passes, is not this fault's damage (a spike in local-currency GMV under
    # a rate fault): it leaves the incident for one of its own, never fails nor rides along
    set_aside: list[int] = []
    if rec.ok and not fault_failed:
        kept = []
        for r in remaining:
            k = r["_key"]
            if k in before and k in after and _same(before[k], after[k]):
                set_aside.append(int(r["anomaly_id"]))
            else:
                kept.append(r)
        remaining = kept
    for r in remaining:
        r.pop("_key", None)
    unreached = []
    for (spec, node), days in sorted(moved.items()):
        still = sorted(d for d, m in days.items() if not m)
        if still and any(days.values()) and node in scope.by_node:
            unreached.append({"spec": spec, "node": node, "intervals": still})
    not_rewritten = _not_rewritten(ws, damage, _rewritten(ws, proposal_id))
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
    measured = [
        {"node": d.node, "intervals": [x.isoformat() for x in d.days], "full": d.full,
         "specs": sorted({s for (s, n) in moved if n == d.node})}
        for d in damage
    ]  # fmt: skip
    passed = (not remaining and not outside and (changed_in > 0 or again or not specs)
              and not not_rewritten
              and not fault_failed and rec.ok and not checks_failing)  # fmt: skip
    extra = []
    if passed:
        extra.append(recompute_words(rec))
        if cases:
            extra.append(f"the fault's own test passes on every repaired interval "
                         f"({len({c.interval for c in cases})} at the origin)")  # fmt: skip
    else:
        if fault_failed:
            extra.append(fault_test.words(fault_failed, cls))
        if not rec.ok:
            extra.append(recompute_words(rec))
        for c in checks_failing:
            extra.append(f"the check {c['check']} still fails (run {c['run_id']}: "
                         f"{c['message'] or 'failed'})")  # fmt: skip
    summary = _summary(passed, changed_in, remaining, outside, unreached, not_rewritten, damage,
                       again=again, extra=extra)  # fmt: skip
    result = Verification(
        passed=passed, specs=specs, scope=scope_days, changed_in_scope=changed_in,
        changed_outside=outside, remaining=remaining, figures=figures, summary=summary,
        nodes=measured, not_rewritten=not_rewritten, unreached=unreached,
        recomputed=rec.as_dict(),
        fault_test={"class": cls, "cases": [c.as_dict() for c in cases],
                    "failed": fault_failed},
    )  # fmt: skip
    if not passed:
        _widen_scope(ws, incident, rec, fault_failed)
    _settle(ws, incident, scope, result, proposal_id, set_aside=set(set_aside))
    result.seconds = time.perf_counter() - t0
    return result


def _checks_still_failing(ws: Workspace, anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checks the incident's ``failing_check`` anomalies name that still fail: the latest
    run that ran them failed them (a passing run ends a streak)."""
    from splice.watch.failing_checks import DETECTOR, streaks

    named = {str((a.get("data") or {}).get("check")) for a in anomalies
             if a.get("detector") == DETECTOR and (a.get("data") or {}).get("check")}  # fmt: skip
    if not named:
        return []
    now = streaks(ws.state.conn, ws.target)
    out = []
    for check in sorted(named):
        runs = now.get(check) or []
        if runs:
            last = runs[-1]
            out.append({"check": check, "run_id": last.get("run_id"),
                        "message": str(last.get("message") or "")[:200]})  # fmt: skip
    return out


def _earlier_cases(ws: Workspace, proposal_id: str | None) -> list[fault_test.Case] | None:
    """The fault-test cases recorded when this proposal began applying: the origin's values as
    found, before the repair ran (None: none recorded, e.g. a proposal applied before this)."""
    if not proposal_id:
        return None
    from splice.approvals import auditlog

    found = None
    for e in auditlog.entries(ws.state, proposal_id):
        payload = e.as_dict().get("payload") or {}
        if isinstance(payload, dict) and "fault_cases" in payload:
            found = [fault_test.Case(**c) for c in payload["fault_cases"]]
    return found


def _widen_scope(
    ws: Workspace, incident: Any, rec: Recomputed, still: list[dict[str, Any]]
) -> None:
    """What the verification found still wrong joins the incident's scope, so the follow-up
    proposal covers it: the intervals where production differs from its rebuild, per node, the
    origin's intervals that still fail the fault's test, and what the nodes downstream read of
    them (the walk the diagnosis' scope makes, :func:`splice.watch.scope.node_scopes`)."""
    from splice.watch.scope import Damage, node_scopes

    diag = incident.diagnosis
    if not isinstance(diag, dict):
        return
    scope = diag.setdefault("scope", {})
    nodes = scope.setdefault("nodes", [])
    by_node = {n.get("node"): n for n in nodes}
    origin = (diag.get("origin") or {}).get("node")
    adds: dict[str, tuple[set[str], bool, str | None]] = {}
    for n in rec.differ:
        days = {k for k in n.differ if k != "*"}
        adds[n.node] = (days, "*" in n.differ, n.time_column)
    if origin and still:
        d, w, tc = adds.get(origin, (set(), False, None))
        adds[origin] = (d | {f["interval"] for f in still}, w, tc or (by_node.get(origin) or {}
                                                                      ).get("time_column"))  # fmt: skip
    graph = ws.graph()
    below: dict[str, tuple[set[str], bool, str | None]] = {}
    try:
        from splice.warehouse.connect import connect

        with connect(ws, "verification (scope of what is still wrong)") as con:
            for nid, (days, _whole, tc) in adds.items():
                if nid not in graph.nodes or not days or not tc:
                    continue
                start = Damage(nid, tc, sorted(date.fromisoformat(x) for x in days))
                for dmg in node_scopes(ws, graph, start, con)[1:]:
                    got = below.setdefault(dmg.node, (set(), False, dmg.time_column))
                    below[dmg.node] = (got[0] | {x.isoformat() for x in dmg.days},
                                       got[1] or (dmg.full and not dmg.days), got[2])  # fmt: skip
    except Exception as e:  # noqa: BLE001 - the differing nodes themselves are added regardless
        below = {}
        scope["widen_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    for nid, (days, whole, tc) in below.items():
        d, w, t = adds.get(nid, (set(), False, None))
        adds[nid] = (d | days, w or whole, t or tc)
    for nid, (days, whole, tc) in adds.items():
        entry = by_node.get(nid)
        if entry is None:
            entry = {"node": nid, "time_column": tc, "intervals": [], "full": False, "why": ""}
            nodes.append(entry)
            by_node[nid] = entry
        entry["intervals"] = sorted(set(entry.get("intervals") or []) | days)
        entry["ranges"] = [[a.isoformat(), b.isoformat()] for a, b in
                           day_ranges(date.fromisoformat(x) for x in entry["intervals"])]  # fmt: skip
        entry["full"] = bool(entry.get("full")) or whole
        why = "verification found it still wrong after the repair"
        if why not in str(entry.get("why") or ""):
            entry["why"] = "; ".join(x for x in (entry.get("why"), why) if x)
        if nid == origin:
            scope["intervals"] = sorted(set(scope.get("intervals") or []) | days)


def _span(days: list[str]) -> str:
    ranges = day_ranges(date.fromisoformat(d) for d in days)
    return ", ".join(a.isoformat() if a == b else f"{a.isoformat()}..{b.isoformat()}"
                     for a, b in ranges)  # fmt: skip


def _summary(passed: bool, changed_in: int, remaining: list[dict[str, Any]],
             outside: list[dict[str, Any]], unreached: list[dict[str, Any]],
             not_rewritten: list[dict[str, Any]], damage: list[NodeDamage], *,
             again: bool = False, extra: list[str] | None = None) -> str:  # fmt: skip
    note = ("; note: damaged intervals whose values did not change while the same metric's "
            "others did: " + "; ".join(f"{u['spec']} on {_span(u['intervals'])}"
                                       for u in unreached)) if unreached else ""  # fmt: skip
    if passed:
        where = "; ".join(
            f"{d.node.split(':', 1)[-1]} {_span([x.isoformat() for x in d.days])}"
            for d in damage if d.days
        )  # fmt: skip
        head = (f"verified again: the damaged intervals ({where}) are within their baseline "
                if again else
                f"verified: {changed_in} value(s) in the damaged intervals ({where}) changed and "
                "are back within their baseline ")  # fmt: skip
        return (head + "(no anomaly remains); no value outside the scope changed"
                + "".join(f"; {x}" for x in extra or []) + note)  # fmt: skip
    parts = []
    if remaining:
        r0 = remaining[0]
        parts.append(f"{len(remaining)} anomal{'y' if len(remaining) == 1 else 'ies'} remain "
                     f"in scope (e.g. {r0['metric']} {r0['detector']} on {r0['interval']})")  # fmt: skip
    if not_rewritten:
        parts.append("damaged intervals the repair did not rewrite: " + "; ".join(
            f"{m['node']} {_span(m['intervals'])}" for m in not_rewritten))  # fmt: skip
    if unreached:
        parts.append("damaged intervals whose values did not change while the same metric's "
                     "others did (the repair did not reach them): " + "; ".join(
                         f"{u['spec']} on {_span(u['intervals'])}" for u in unreached))  # fmt: skip
    if outside:
        parts.append(f"{len(outside)} value(s) outside the scope changed (e.g. "
                     f"{outside[0]['metric']} on {outside[0]['interval']})")  # fmt: skip
    if changed_in == 0 and not again:
        parts.append("no value in the scope changed: the repair did not reach the metrics")
    parts += extra or []
    return "not verified: " + "; ".join(parts)


def _settle(ws: Workspace, incident: Any, scope: Scope, result: Verification,
            proposal_id: str | None, *, set_aside: set[int] | None = None) -> None:  # fmt: skip
    """Resolve the incident (or keep it open), and never let anomalies outside the repaired
    scope be resolved with it: on a pass they leave it for a new incident (triaged as any
    watch would), and the result names the incident they went to."""
    from splice.watch.incidents import incident_anomalies, resolve_incident

    conn = ws.state.conn
    iid = incident.incident_id
    aside = set_aside or set()
    beyond = [a for a in incident_anomalies(conn, iid)
              if not scope.holds(a["node_id"], a["interval"].isoformat())
              or a["anomaly_id"] in aside]  # fmt: skip
    result.beyond = [
        {"anomaly_id": a["anomaly_id"], "metric": a["metric"], "node": a["node_id"],
         "dims": a["dims"], "interval": a["interval"].isoformat(), "detector": a["detector"],
         "after": scope.after(a["node_id"], a["interval"]),
         "unchanged": a["anomaly_id"] in aside}
        for a in beyond
    ]  # fmt: skip
    with ws.state.transaction():
        if result.passed:
            resolve_incident(
                conn, iid, f"repaired{' by ' + proposal_id if proposal_id else ''}; "
                f"{result.summary}",
            )  # fmt: skip
            ids = [b["anomaly_id"] for b in result.beyond]
            # the resolved incident keeps the diagnosis of what was repaired (the fresh
            # measurement re-diagnosed it from what it found, the anomalies outside included)
            # and the count of the anomalies it was repaired for: measuring again replaced
            # them, and a resolved incident says what it had, as its evidence does
            conn.execute(
                _SETTLE_UPDATE,
                (incident.title, incident.origin_node, json.dumps(incident.diagnosis, default=str),
                 incident.first_interval.isoformat(), incident.last_interval.isoformat(),
                 int(incident.anomalies or 0), len(ids), iid),
            )  # fmt: skip
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                unlink = exp.update("watch_anomalies", {"incident_id": exp.null()},
                                    where=in_list("anomaly_id", len(chunk)))  # fmt: skip
                conn.execute(Statement(unlink), chunk)
        else:
            # open, with what is still wrong in its scope (a follow-up proposal covers it)
            conn.execute(
                _SETTLE_UPDATE_2,
                (result.summary, json.dumps(incident.diagnosis, default=str), iid),
            )
    if not result.beyond:
        return
    first = result.beyond[0]
    where = ("unchanged by the repair (not this fault's damage: production equals its "
             "rebuild there)" if first.get("unchanged") else
             f"{'after' if first['after'] else 'outside'} the repaired scope")  # fmt: skip
    what = f"{first['metric']} still anomalous on {first['interval']}, {where}"
    more = len(result.beyond) - 1
    what += f" (and {more} more anomal{'y' if more == 1 else 'ies'})" if more else ""
    if not result.passed:
        result.followup = f"{what}: kept in {iid}, which stays open"
        result.summary += f"; {result.followup}"
        return
    from splice.watch.triage import triage

    try:
        triage(ws)
    except Exception as e:  # noqa: BLE001 - the repair stands; the next watch files them
        result.followup = (f"{what}: not filed yet ({str(e).splitlines()[0]}); the next "
                           "splice watch opens an incident for them")  # fmt: skip
        result.summary += f"; {result.followup}"
        return
    homes: list[str] = []
    for b in result.beyond:
        row = conn.execute(_SETTLE_SELECT,
                           (b["anomaly_id"],)).fetchone()  # fmt: skip
        b["incident"] = row[0] if row else None
        if b["incident"] and b["incident"] not in homes:
            homes.append(b["incident"])
    resolved_at = conn.execute(_SETTLE_SELECT_2,
                               (iid,)).fetchone()[0] or 0.0  # fmt: skip
    words = []
    for h in homes:
        opened_at = conn.execute(_SETTLE_SELECT_3,
                                 (h,)).fetchone()[0]  # fmt: skip
        words.append(f"{h} opened" if opened_at >= resolved_at else f"filed into {h} (open)")
    result.followup = f"{', '.join(words) or 'no incident'}: {what}"
    result.summary += f"; {result.followup}"
    with ws.state.transaction():
        resolve_incident(conn, iid, f"repaired{' by ' + proposal_id if proposal_id else ''}; "
                         f"{result.summary}")  # fmt: skip
