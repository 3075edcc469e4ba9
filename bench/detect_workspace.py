"""Benchmark: incident scenarios on the real demo workspace (dlt, SQLMesh, dbt, DuckDB).

    python bench/detect_workspace.py                       # every scenario
    python bench/detect_workspace.py --scenarios late-lying,duplicated-load --json
    python bench/detect.py --workspace                     # the same, after the panel figures

The demo is built once with a longer clean history (from ``HISTORY_START``) up to Sunday
2026-07-26 and baselined (``splice watch --backfill``).  The *clean* scenario then runs
production on, clean, to 2026-09-30 (one ingestion, ``splice run`` and ``splice watch`` up to
Sunday 2026-09-27, then again for 09-28..30): every anomaly there is a false alarm, and its
warehouse is the truth every other scenario is compared with.  Every other scenario copies the
workspace of 2026-09-27 (or of 2026-07-26 for a fault that lasts past the 8-week training
window), switches its fault on (the vendor's ``vendor.json``, or the bookings loader), loads
and runs on to 2026-09-30, and watches.  Scored per scenario:

- detected: an incident opened; delay: intervals of the origin from the first bad interval to
  the first flagged one (0: found on the first bad interval);
- incidents opened; origin right (the expected origin node);
- cause class right (``diagnosis["fault"]["class"]``);
- scope per node: the diagnosis' intervals per node (``scope["nodes"]``; else the origin's
  ``scope["intervals"]``) against the truth: the intervals whose rows differ from the clean
  run's (count, sums of every numeric column and a fingerprint of every text column's values
  per value of the node's date column; a node without one is judged whole) -- exact / wider
  / narrower / other / missed;
- the repair: the vendor is fixed (the bookings need nothing: the reload regenerates them),
  then propose, approve, apply (as ``story.tell_repair``); Splice's verification verdict and
  whether it is right (it passes exactly when the warehouse then equals the clean run's);
- false alarms: anomalies of the clean scenario, and per scenario the anomalies on intervals
  outside the damage (``out``).

A change inside the project (``change``: a file of the workspace edited before production runs
on, as a teammate's commit) is scored like a fault: the origin is the node whose code changed.
A scenario with two independent faults (``also``: the second fault's origin and class, and which
of the scenario's switches is that fault) expects one incident per fault: its row scores the
first, and a row ``NAME[2]`` the second; each incident's scope is judged against the damage of
its fault alone (the scenario run again with only that switch on), and the row of the
scenario's union of both scopes against the damage of both (``scope`` of the first row).

Columns of the table: det (detected), delay (intervals), inc (incidents opened), out (alarms
outside the damage), origin, cause (right or NO, and the class named), scope (verdicts per node),
repair (verification right or WRONG / v verified or nv not, then the number of rounds: a
repair whose verification fails is followed by the proposal for what it found, up to 3), clean
(after the last round every node equals the clean build), s (seconds).  Then per round the
verification's cost: its seconds, the recomputation's part, and the repair run's own seconds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

HISTORY_START = date(2026, 4, 1)
BASE_THROUGH = date(2026, 7, 26)  # a Sunday: the long scenario's fault starts the next day
THU = date(2026, 9, 24)  # a Thursday: the Friday scenario starts the next day
CLEAN_THROUGH = date(2026, 9, 27)  # a Sunday: the short scenarios start the next day
END = date(2026, 9, 30)
RATES = "pricing:fx.daily_rates"
BOOKINGS = "pricing:marts.fct_bookings_usd"
MON = date(2026, 9, 28)


@dataclass
class Scenario:
    name: str
    what: str
    cause: str  # the fault class the diagnosis should name
    origin: str
    start: date  # the first bad interval at the origin
    incident: str | None = None  # the vendor's incident (vendor.json)
    bookings: str | None = None  # "duplicate" | "late" | "late-few" | "drop-channel"
    base: str = "sep"  # "sep": the workspace of 2026-09-27; "thu": of 09-24; "jul": of 07-26
    daily: bool = False  # run and watch day by day (as production does), not once at the end
    journaled: bool = False  # each day's rates loaded by a journaled ingestion (splice ingest)
    change: str | None = None  # a fault of the workspace itself (demo.faults.WORKSPACE_FAULTS)
    # the team fixes the change before the repair (the teammate reverts the seed's duplicate
    # row), as the vendor fixes its feed; a change the repair itself must refuse stays
    reverted: bool = False
    # more independent faults: (origin, cause, the switch that is that fault: "incident",
    # "bookings" or "change"); the first (origin, cause) is the other switches'
    also: list[tuple[str, str, str]] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)


SCENARIOS: list[Scenario] = [
    Scenario("stale-rates", "all rates frozen Mon-Tue, as-of honest", "stopped_moving", RATES,
             MON, incident="stale-rates"),
    Scenario("friday-freeze", "all rates frozen on a Friday: the weekend's GMV converts at it",
             "stopped_moving", RATES, date(2026, 9, 25), incident="friday-freeze", base="thu"),
    Scenario("frozen-some", "JPY, CHF, SEK frozen Mon-Wed, as-of claims the day",
             "stopped_moving", RATES, MON, incident="frozen-some"),
    Scenario("late-honest", "rates a business day late from Mon, as-of honest", "late", RATES,
             MON, incident="late-honest"),
    Scenario("late-lying", "rates a business day late from Mon, as-of claims the day", "late",
             RATES, MON, incident="late-lying"),
    Scenario("inverted-rate", "EUR inverted Mon-Wed", "inverted", RATES, MON,
             incident="inverted-rate"),
    Scenario("unit-change", "JPY x100 from Mon", "unit_change", RATES, MON,
             incident="unit-change"),
    Scenario("negative-rate", "GBP negative on Mon: a blocking audit fails", "failed_audit",
             RATES, MON, incident="negative-rate"),
    Scenario("duplicated-load", "Monday's bookings loaded twice", "duplicated_load", BOOKINGS,
             MON, bookings="duplicate"),
    Scenario("late-bookings", "40% of Monday's bookings loaded after Monday was processed",
             "late_rows", BOOKINGS, MON, bookings="late"),
    Scenario("late-bookings-few", "5% of Monday's bookings loaded after Monday was processed",
             "late_rows", BOOKINGS, MON, bookings="late-few"),
    Scenario("friday-freeze-daily", "rates frozen on a Friday, watched every day: the weekend "
             "lands after the diagnosis", "stopped_moving", RATES, date(2026, 9, 25),
             incident="friday-freeze", base="thu", daily=True),
    Scenario("late-lying-daily", "rates a business day late from Mon (as-of lies), watched "
             "every day: the fault goes on", "late", RATES, MON, incident="late-lying",
             daily=True),
    Scenario("late-caught-up", "rates a business day late Mon-Tue (as-of lies), caught up on "
             "Wed, watched every day", "late", RATES, MON, incident="late-caught-up",
             daily=True),
    Scenario("codes-lowercase", "currency codes in lower case from Mon: the join drops them",
             "domain_change", RATES, MON, incident="codes-lowercase"),
    Scenario("channel-vanishes", "the partner channel's bookings stop arriving from Mon",
             "slice_missing", BOOKINGS, MON, bookings="drop-channel"),
    Scenario("unit-change-lasting", "JPY x100 from 2026-07-27 to the end (past training)",
             "unit_change", RATES, date(2026, 7, 27), incident="unit-change-lasting",
             base="jul"),
    Scenario("vendor-outage", "the vendor answers 503 on Mon-Tue, then recovers (journaled daily "
             "loads)", "failed_ingestion", RATES, MON, incident="vendor-outage", daily=True,
             journaled=True),
    Scenario("failing-check", "a seed row twice: its unique test fails Mon, Tue, Wed (daily)",
             "failed_audit", "finance:currency_regions", MON, change="seed-duplicate",
             daily=True, journaled=True, reverted=True),
    Scenario("seed-edit", "a teammate moves EUR to the Americas in the regions seed on Mon",
             "code_change", "finance:currency_regions", MON, change="seed-region"),
    Scenario("two-causes", "EUR inverted Mon-Tue, and Monday's bookings loaded twice",
             "inverted", RATES, MON, incident="inverted-two-days", bookings="duplicate",
             also=[(BOOKINGS, "duplicated_load", "bookings")]),
]  # fmt: skip


def _copy(src: Path, dest: Path) -> Path:
    from splice.demo import relocate

    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)
    return dest


def _run(ws_dir: Path, through: date) -> Any:
    from splice import api

    with api.open_workspace(ws_dir) as ws:
        return api.run(
            ws, execution_time=datetime.combine(through + timedelta(1), datetime.min.time())
        )


def _watch(ws_dir: Path, backfill: bool = False) -> Any:
    from splice import api

    with api.open_workspace(ws_dir) as ws:
        return api.watch(ws, backfill=backfill)


def _run_on(ws_dir: Path, start: date, end: date, bookings: str | None = None,
            journaled: bool = False) -> dict[str, Any]:  # fmt: skip
    """Production runs on from ``start`` to ``end``: ingest, load, splice run (``journaled``:
    day by day, each day's rates loaded by a journaled ingestion run)."""
    from splice.demo.faults import run_on

    r = run_on(ws_dir, start, end, bookings=bookings, daily=journaled)
    return {"run": r.report.status, "run_ok": r.report.ok, "bookings_loads": r.loads,
            "runs": r.runs}  # fmt: skip


# -- the truth: what differs from the clean run -------------------------------------------------
def _relations(ws_dir: Path) -> dict[str, tuple[str, str | None, list[str], list[str]]]:
    """node -> (relation, date column, numeric columns, text columns) for every built model and
    seed."""
    import duckdb

    from splice import api

    with api.open_workspace(ws_dir) as ws:
        g = ws.graph()
        nodes = [
            n for n in g.nodes.values() if n.kind in ("model", "seed") and n.writes is not None
        ]
    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"), read_only=True)
    out = {}
    try:
        for n in nodes:
            rel = n.writes
            assert rel is not None
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE "
                "table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [rel.schema, rel.name],
            ).fetchall()
            names = {c: t for c, t in cols}
            time_col = (n.time_column or "").lower() or next(
                (c for c in ("booking_date", "rate_date") if c in names), None
            )
            nums = [c for c, t in cols if t.startswith(("DOUBLE", "DECIMAL", "BIGINT", "INTEGER",
                                                         "HUGEINT", "FLOAT"))]  # fmt: skip
            texts = [c for c, t in cols if t.startswith("VARCHAR")]
            out[n.id] = (f'"{rel.schema}"."{rel.name}"', time_col, nums, texts)
    finally:
        con.close()
    return out


def _profile(ws_dir: Path, rels: dict[str, tuple[str, str | None, list[str], list[str]]]
             ) -> dict[str, Any]:  # fmt: skip
    import duckdb

    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"), read_only=True)
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    try:
        for node, (rel, tc, nums, texts) in rels.items():
            sums = "".join(f', SUM("{c}")::DOUBLE' for c in nums)
            # text columns by a fingerprint of their values: a code that changed case is damage
            sums += "".join(f', SUM(hash("{c}") % 1000003)::DOUBLE' for c in texts)
            if tc:
                rows = con.execute(
                    f'SELECT "{tc}"::DATE, COUNT(*){sums} FROM {rel} GROUP BY 1'
                ).fetchall()
                out[node] = {r[0].isoformat(): tuple(r[1:]) for r in rows}
            else:  # no date column: its rows themselves (sums over the table can cancel out)
                rows = con.execute(f"SELECT * FROM {rel} ORDER BY ALL").fetchall()
                out[node] = {"*": tuple(tuple(_norm(v) for v in r) for r in rows)}
    finally:
        con.close()
    return out


def _norm(v: Any) -> Any:
    """A cell as compared: numbers to 10 significant digits, the rest as text."""
    if isinstance(v, bool) or v is None:
        return v
    try:
        return float(f"{float(v):.10g}")
    except (TypeError, ValueError):
        return str(v)


def _same(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    if a is None or b is None or len(a) != len(b):
        return a == b
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple) or isinstance(y, tuple) or x is None or y is None:
            if x != y:
                return False
        elif abs(float(x) - float(y)) > 1e-6 * max(1.0, abs(float(x)), abs(float(y))):
            return False
    return True


def damage(now: dict[str, Any], truth: dict[str, Any]) -> dict[str, list[str]]:
    """node -> the intervals (ISO dates; ``*``: the whole table) that differ from the truth."""
    out: dict[str, list[str]] = {}
    for node, ref in truth.items():
        got = now.get(node, {})
        bad = sorted(k for k in set(ref) | set(got) if not _same(ref.get(k), got.get(k)))
        if bad:
            out[node] = bad
    return out


def judge_scope(diagnosis: dict[str, Any], truth: dict[str, list[str]]) -> dict[str, str]:
    """node -> exact / wider / narrower / other / missed / extra / whole (the diagnosis' scope
    per node against the damage)."""
    scope = diagnosis.get("scope") or {}
    listed: dict[str, tuple[set[str], bool]] = {}
    if scope.get("nodes"):
        for n in scope["nodes"]:
            listed[n["node"]] = (set(n.get("intervals") or []), bool(n.get("full")))
        # intervals a blocking audit kept from being built are damage the repair covers too
        for b in scope.get("blocked") or []:
            got, full = listed.get(b["node"], (set(), False))
            listed[b["node"]] = (got | set(b.get("intervals") or []), full or bool(b.get("full")))
    else:
        origin = (diagnosis.get("origin") or {}).get("node")
        if origin:
            listed[origin] = (set(scope.get("intervals") or []), False)
    out: dict[str, str] = {}
    for node in sorted(set(truth) | set(listed)):
        bad = set(truth.get(node, []))
        got, full = listed.get(node, (set(), False))
        if node not in listed:
            out[node] = "missed"
        elif not bad:
            out[node] = "extra"
        elif full or "*" in bad:
            out[node] = "whole" if (full or got) else "missed"
        elif got == bad:
            out[node] = "exact"
        elif got > bad:
            out[node] = "wider"
        elif got < bad:
            out[node] = "narrower"
        else:
            out[node] = "other"
    if not scope.get("nodes"):
        out = {n: v if n in listed else f"{v} (no per-node scope)" for n, v in out.items()}
    return out


# -- one scenario --------------------------------------------------------------------------------
def _intervals_between(days: list[str], a: str, b: str) -> int:
    return sum(1 for d in days if a < d <= b)


def run_scenario(s: Scenario, bases: dict[str, Path], truth: dict[str, Any],
                 rels: dict[str, Any], tmp: Path, repair: bool = True) -> dict[str, Any]:  # fmt: skip
    from splice import api
    from splice.demo.story import tell_repair
    from splice.demo.vendor import set_incident

    t0 = time.perf_counter()
    ws_dir = _copy(bases[s.base], tmp / s.name / "travel")
    set_incident(ws_dir, s.incident)
    changed: Path | None = None
    if s.change:
        from splice.demo.faults import apply_workspace_fault

        changed = apply_workspace_fault(ws_dir, s.change)
    start = {"jul": BASE_THROUGH, "thu": THU}.get(s.base, CLEAN_THROUGH) + timedelta(1)
    if s.daily:  # production as it runs: each day loaded, built and watched
        day, ran = start, {}
        while day <= END:
            ran = _run_on(ws_dir, day, day, s.bookings if day == start else None, s.journaled)
            found = _watch(ws_dir)
            day += timedelta(1)
    else:
        ran = _run_on(ws_dir, start, END, s.bookings, s.journaled)
        found = _watch(ws_dir)
    if s.daily:  # every anomaly and incident of the run-on, not only the last day's
        with api.open_workspace(ws_dir) as ws:
            found = _all_found(ws, start)
    res: dict[str, Any] = {"scenario": s.name, "what": s.what, **ran}
    incs = list(found.incidents)
    res["incidents"] = len(incs)
    res["anomalies"] = len(found.anomalies)
    first = [a for a in found.anomalies if a.node_id == s.origin]
    flagged = sorted({a.interval.isoformat() for a in first})
    origin_days = sorted(truth.get(s.origin, {}))
    res["detected"] = bool(incs) and bool(flagged)
    res["first_flagged"] = flagged[0] if flagged else None
    res["delay"] = (
        _intervals_between(origin_days, s.start.isoformat(), flagged[0]) if flagged else None
    )
    main = None
    for inc in incs:
        d = inc.diagnosis or {}
        if (d.get("origin") or {}).get("node") == s.origin:
            main = inc
            break
    main = main or (incs[0] if incs else None)
    d = (main.diagnosis if main else None) or {}
    fault = d.get("fault") or {}
    res["incident"] = main.incident_id if main else None
    res["origin"] = (d.get("origin") or {}).get("node")
    res["origin_right"] = res["origin"] == s.origin
    res["cause_class"] = fault.get("class")
    res["cause_classes"] = fault.get("classes")
    res["cause_right"] = fault.get("class") == s.cause
    if s.cause == "code_change":  # a change inside the project: named, with its run
        said = str(d.get("cause") or "")
        res["cause_right"] &= s.origin in said and any(r in said for r in ran["runs"])
    res["cause"] = d.get("cause")
    now = _profile(ws_dir, rels)
    bad = damage(now, truth)
    res["damage"] = {
        n: (v if len(v) <= 6 else [v[0], "..", v[-1], f"({len(v)})"]) for n, v in bad.items()
    }
    outside = [
        f"{a.node_id} {a.metric} {a.interval.isoformat()} {a.detector}"
        for a in found.anomalies
        if "*" not in bad.get(a.node_id, [])
        and a.interval.isoformat() not in bad.get(a.node_id, [])
    ]
    res["alarms_outside_damage"] = len(outside)
    res["alarms_outside_examples"] = outside[:3]
    res["scope"] = judge_scope(d, bad) if main else {}
    res["scope_exact"] = bool(res["scope"]) and all(v == "exact" for v in res["scope"].values())
    if s.also:
        _score_also(s, res, incs, found, bases, truth, rels, tmp, bad)
    res["detect_s"] = round(time.perf_counter() - t0, 1)
    if repair and main is not None:
        if s.reverted and changed is not None:  # the teammate's fix lands before the repair
            shutil.copyfile(bases[s.base] / changed.relative_to(ws_dir), changed)
        try:
            for other in res.get("also") or []:  # the other faults' incidents first: the
                if other.get("incident"):  # audit one fails would fail the other's restatement
                    v = tell_repair(ws_dir, other["incident"]).applied.verification
                    other["repaired_first"] = bool(v and v.passed)  # verified
            rounds: list[dict[str, Any]] = []
            for _ in range(3):  # a repair, then follow-ups for what its verification found
                applied = tell_repair(ws_dir, main.incident_id).applied
                v = applied.verification
                left = damage(_profile(ws_dir, rels), truth)
                rec = (v.recomputed or {}) if v else {}
                rounds.append({
                    "verified": bool(v and v.passed), "summary": v.summary if v else None,
                    "left": {n: len(x) for n, x in left.items()},
                    "seconds": round(v.seconds, 2) if v else None,
                    "recompute_s": rec.get("seconds"),
                    "run_s": round(applied.run.duration or 0.0, 2) if applied.run else None,
                })  # fmt: skip
                if (v and v.passed) or not left:
                    break
            last = rounds[-1]
            res["rounds"] = rounds
            res["verified"] = last["verified"]
            res["verification"] = last["summary"]
            res["after_repair_damage"] = last["left"]
            res["truly_clean"] = not last["left"]
            # the bar: never "verified" while any node still differs from the clean build
            res["verified_while_wrong"] = sum(1 for r in rounds if r["verified"] and r["left"])
            res["verification_right"] = res["verified_while_wrong"] == 0 and all(
                r["verified"] == (not r["left"]) for r in rounds)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - a benchmark reports what failed and goes on
            res["repair_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            res["verified"] = None
            res["verification_right"] = False
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res


def _all_found(ws: Any, start: date) -> Any:
    """Every anomaly and incident of the workspace's target from ``start`` on (a daily run-on
    watched many times; not the base's clean history), shaped as a watch result."""
    from types import SimpleNamespace

    from splice.watch.incidents import list_incidents

    conn = ws.state.conn
    incs = [i for i in list_incidents(conn, ws.target)
            if i.status != "merged" and i.last_interval >= start]  # fmt: skip
    rows = conn.execute(
        "SELECT node_id, metric, interval_start, detector FROM watch_anomalies "
        "WHERE target = ? AND interval_start >= ?",
        (ws.target, start.isoformat()),
    ).fetchall()
    anomalies = [
        SimpleNamespace(node_id=r[0], metric=r[1], interval=date.fromisoformat(r[2]), detector=r[3])
        for r in rows
    ]
    return SimpleNamespace(incidents=incs[::-1], anomalies=anomalies)


def _alone(s: Scenario, switch: str | None, bases: dict[str, Path], truth: dict[str, Any],
           rels: dict[str, Any], tmp: Path) -> dict[str, list[str]]:  # fmt: skip
    """The damage of one of the scenario's faults alone: ``switch`` on (None: every switch but
    those its ``also`` faults name)."""
    from splice.demo.faults import apply_workspace_fault
    from splice.demo.vendor import set_incident

    others = {k for _o, _c, k in s.also}
    on = {switch} if switch else {"incident", "bookings", "change"} - others
    ws_dir = _copy(bases[s.base], tmp / f"{s.name}-alone-{switch or 'first'}" / "travel")
    set_incident(ws_dir, s.incident if "incident" in on else None)
    if s.change and "change" in on:
        apply_workspace_fault(ws_dir, s.change)
    start = {"jul": BASE_THROUGH, "thu": THU}.get(s.base, CLEAN_THROUGH) + timedelta(1)
    _run_on(ws_dir, start, END, s.bookings if "bookings" in on else None)
    out = damage(_profile(ws_dir, rels), truth)
    shutil.rmtree(ws_dir.parent, ignore_errors=True)
    return out


def _score_also(s: Scenario, res: dict[str, Any], incs: list[Any], found: Any,
                bases: dict[str, Path], truth: dict[str, Any], rels: dict[str, Any], tmp: Path,
                bad: dict[str, list[str]]) -> None:  # fmt: skip
    """Scores each of a scenario's independent faults on its own incident (see the doc)."""
    by_origin = {((i.diagnosis or {}).get("origin") or {}).get("node"): i for i in incs}
    main = by_origin.get(s.origin)
    nodes: dict[str, dict[str, Any]] = {}  # per node, the union of the incidents' scopes
    blocked: list[dict[str, Any]] = []
    for inc in incs:
        sc = (inc.diagnosis or {}).get("scope") or {}
        for n in sc.get("nodes") or []:
            u = nodes.setdefault(n["node"], {"node": n["node"], "intervals": [], "full": False})
            u["intervals"] = sorted(set(u["intervals"]) | set(n.get("intervals") or []))
            u["full"] = u["full"] or bool(n.get("full"))
        blocked += sc.get("blocked") or []
    res["scope_union"] = judge_scope({"scope": {"nodes": list(nodes.values()),
                                                "blocked": blocked}}, bad)  # fmt: skip
    if main is not None:
        res["scope"] = judge_scope(main.diagnosis or {}, _alone(s, None, bases, truth, rels, tmp))
        res["scope_exact"] = bool(res["scope"]) and all(v == "exact" for v in res["scope"].values())
    res["also"] = []
    for origin, cause, switch in s.also:
        inc = by_origin.get(origin)
        d = (inc.diagnosis if inc else None) or {}
        fault = d.get("fault") or {}
        flagged = sorted({a.interval.isoformat() for a in found.anomalies if a.node_id == origin})
        origin_days = sorted(truth.get(origin, {}))
        alone = _alone(s, switch, bases, truth, rels, tmp)
        scope = judge_scope(d, alone) if inc else {}
        res["also"].append({
            "scenario": f"{s.name}[{len(res['also']) + 2}]", "what": f"{cause} at {origin}",
            "detected": inc is not None and bool(flagged),
            "delay": _intervals_between(origin_days, s.start.isoformat(), flagged[0])
            if flagged else None,
            "incidents": len(incs), "alarms_outside_damage": res.get("alarms_outside_damage", 0),
            "incident": inc.incident_id if inc else None, "origin": (d.get("origin") or {}).get("node"),
            "origin_right": inc is not None, "cause_class": fault.get("class"),
            "cause_right": fault.get("class") == cause, "cause": d.get("cause"), "scope": scope,
            "scope_exact": bool(scope) and all(v == "exact" for v in scope.values()),
            "seconds": 0.0,
        })  # fmt: skip


def build_bases(tmp: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """The base workspaces (history to 07-26; run on clean to 09-27) and the clean scenario's
    figures, and the truth (the clean run to 09-30)."""
    from splice.demo import build_demo
    from splice.demo.vendor import set_incident

    t0 = time.perf_counter()
    jul = tmp / "base-jul" / "travel"
    say(f"building the demo {HISTORY_START} .. {BASE_THROUGH} and baselining it")
    build_demo(jul, through=BASE_THROUGH, start=HISTORY_START)
    base = _watch(jul, backfill=True)
    set_incident(jul, None)
    say(f"clean month(s): running on {BASE_THROUGH + timedelta(1)} .. {CLEAN_THROUGH}")
    thu = _copy(jul, tmp / "base-thu" / "travel")
    _run_on(thu, BASE_THROUGH + timedelta(1), THU)
    w0 = _watch(thu)
    sep = _copy(thu, tmp / "base-sep" / "travel")
    _run_on(sep, THU + timedelta(1), CLEAN_THROUGH)
    w1 = _watch(sep)
    say(f"clean: running on {CLEAN_THROUGH + timedelta(1)} .. {END} (the truth)")
    ref = _copy(sep, tmp / "clean" / "travel")
    _run_on(ref, CLEAN_THROUGH + timedelta(1), END)
    w2 = _watch(ref)
    rels = _relations(ref)
    truth = _profile(ref, rels)
    alarms = [a.as_dict() for a in list(w0.anomalies) + list(w1.anomalies) + list(w2.anomalies)]
    return {
        "bases": {"jul": jul, "thu": thu, "sep": sep},
        "truth": truth,
        "rels": rels,
        "clean": {
            "days": (END - BASE_THROUGH).days,
            "baseline_anomalies": len(base.anomalies),
            "false_alarms": len(alarms),
            "incidents": len(w0.incidents) + len(w1.incidents) + len(w2.incidents),
            "examples": [
                f"{a['node']} {a['metric']} {a['interval']} {a['detector']}" for a in alarms[:5]
            ],  # fmt: skip
            "seconds": round(time.perf_counter() - t0, 1),
        },
    }


def workspace_bench(names: list[str] | None = None, *, repair: bool = True,
                    progress: Callable[[str], None] | None = None) -> dict[str, Any]:  # fmt: skip
    say = progress or (lambda _m: None)
    chosen = [s for s in SCENARIOS if not names or s.name in names]
    unknown = set(names or []) - {s.name for s in SCENARIOS}
    if unknown:
        raise SystemExit(f"unknown scenario(s) {sorted(unknown)}; known: "
                         f"{', '.join(s.name for s in SCENARIOS)}")  # fmt: skip
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="splice-bench-ws-") as d:
        tmp = Path(d)
        b = build_bases(tmp, say)
        results = []
        for s in chosen:
            say(f"scenario {s.name}: {s.what}")
            results.append(run_scenario(s, b["bases"], b["truth"], b["rels"], tmp, repair))
            shutil.rmtree(tmp / s.name, ignore_errors=True)
    return {
        "clean": b["clean"],
        "scenarios": results,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def print_table(report: dict[str, Any]) -> None:
    c = report["clean"]
    print(f"\nworkspace scenarios on the real demo (history from {HISTORY_START})")
    print(f"clean run-on {BASE_THROUGH + timedelta(1)} .. {END} ({c['days']} days): "
          f"{c['false_alarms']} false alarm(s), {c['incidents']} incident(s)"
          + (f"  e.g. {'; '.join(c['examples'])}" if c["examples"] else ""))  # fmt: skip
    head = (f"{'scenario':20} {'det':4} {'delay':5} {'inc':3} {'out':3} {'origin':6} "
            f"{'cause':22} {'scope':34} {'repair':8} {'clean':5} {'s':>5}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for r in [x for r0 in report["scenarios"] for x in [r0, *r0.get("also", [])]]:
        sc = r.get("scope") or {}
        verdicts: dict[str, int] = {}
        for v in sc.values():
            verdicts[v.split(" ")[0]] = verdicts.get(v.split(" ")[0], 0) + 1
        scope = ("exact" if r["scope_exact"] else
                 ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())) or "-")  # fmt: skip
        cause = f"{'ok' if r['cause_right'] else 'NO'} {r['cause_class']}"
        rep = ("-" if "verified" not in r else "error" if r.get("repair_error") else
               f"{'ok' if r['verification_right'] else 'WRONG'}/{'v' if r['verified'] else 'nv'}"
               f"{len(r.get('rounds') or [])}")  # fmt: skip
        clean = "-" if "truly_clean" not in r else ("yes" if r["truly_clean"] else "NO")
        print(f"{r['scenario']:20} {'yes' if r['detected'] else 'NO':4} "
              f"{'-' if r['delay'] is None else r['delay']:>5} {r['incidents']:>3} "
              f"{r.get('alarms_outside_damage', 0):>3} "
              f"{'ok' if r['origin_right'] else 'NO':6} {cause[:22]:22} {scope[:34]:34} "
              f"{rep:8} {clean:5} {r['seconds']:>5}")  # fmt: skip
    print("scope per node (node: verdict):")
    for r in [x for r0 in report["scenarios"] for x in [r0, *r0.get("also", [])]]:
        print(
            f"  {r['scenario']}: "
            + "; ".join(f"{n}: {v}" for n, v in (r.get("scope") or {}).items())
        )
        if r.get("scope_union"):
            print(f"  {r['scenario']} (both incidents' scopes, against the damage of both): "
                  + "; ".join(f"{n}: {v}" for n, v in r["scope_union"].items()))  # fmt: skip
    print(
        "repairs (per round: verified?, nodes still differing from the clean build, "
        "verification s / recomputation s / repair run s):"
    )
    for r in report["scenarios"]:
        if r.get("repair_error"):
            print(f"  {r['scenario']}: error {r['repair_error']}")
        for i, x in enumerate(r.get("rounds") or []):
            print(f"  {r['scenario']} #{i + 1}: {'verified' if x['verified'] else 'not verified'}"
                  f"; left {x['left'] or 'nothing'}; {x['seconds']} / {x['recompute_s']} / "
                  f"{x['run_s']} s")  # fmt: skip
    wrong = sum(r.get("verified_while_wrong") or 0 for r in report["scenarios"])
    print(f"repairs verified while a node still differed from the clean build: {wrong}")
    print(f"(workspace bench ran {report['seconds']:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scenarios", help="comma-separated names (default: all)")
    ap.add_argument("--no-repair", action="store_true", help="skip the repair and verification")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.scenarios.split(",")] if args.scenarios else None
    report = workspace_bench(names, repair=not args.no_repair,
                             progress=None if args.json else print)  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
