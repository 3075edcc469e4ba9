"""The evidence :func:`splice.watch.cause.classify` reads from Splice's own state.

- the stored points of the series that stopped moving (``watch_points``), to tell a feed that
  is late from one that froze and recovered;
- the failed checks of the run journal (audits and tests of the origin and downstream of it):
  which, of what, since which run;
- when the node reading a source processed each interval (the build evidence:
  ``evidence_versions``, the intervals a build recorded and when), against when the source's
  rows were loaded: rows loaded after their interval was done arrived late;
- the runs of the ingestion job feeding the origin (``splice ingest``: journaled runs for named
  days; for a job an orchestrator runs, also its recent runs there): which of the incident's
  days the job failed to load, in which runs, with each run's error.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from splice.state.sql import statement
from splice.watch.cause_words import series_words

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: The failed checks are looked for in this many latest runs of the target.
RECENT_RUNS = 200
#: At most this many series' histories are read for one incident.
MAX_SERIES = 500

_SERIES_POINTS = statement(
    "SELECT p.interval_start, p.value FROM watch_points p JOIN watch_series s "
    "ON s.series_id = p.series_id WHERE s.target = ? AND s.metric = ? AND s.dims = ? "
    "ORDER BY p.interval_start"
)
_CHECKS_OF_RECENT_RUNS = statement(
    "SELECT e.run_id, e.ts, e.node_id, e.status, e.data FROM run_events e "
    "JOIN runs r USING (run_id) WHERE r.target = ? AND e.kind = 'check_finished' "
    "AND r.run_id IN (SELECT run_id FROM runs WHERE target = ? "
    "ORDER BY started_at DESC LIMIT ?) ORDER BY e.ts, e.seq"
)
_INGESTION_RUNS = statement(
    "SELECT r.run_id, r.selector, e.ts, e.status, e.data FROM runs r JOIN run_events e "
    "ON e.run_id = r.run_id WHERE r.target = ? AND r.selector LIKE ? AND "
    "e.kind = 'node_finished' AND e.node_id = ? ORDER BY e.ts, e.seq"
)
_BUILDS = statement(
    "SELECT recorded_at, intervals FROM evidence_versions WHERE target = ? AND node_id = ? "
    "AND intervals IS NOT NULL ORDER BY seq"
)


def series_history(
    conn: Any, target: str, anomalies: list[dict[str, Any]]
) -> dict[str, list[tuple[str, float]]]:
    """The stored points (series label -> [(ISO day, value)]) of the series that stopped
    moving or whose value jumped (to see how long the fault lasts)."""
    from splice.watch.cause_words import VALUE_DETECTORS
    from splice.watch.history import dims_key

    out: dict[str, list[tuple[str, float]]] = {}
    seen: set[tuple[str, str]] = set()
    for a in anomalies:
        value = a.get("kind", "value") == "value" and a["detector"] in VALUE_DETECTORS
        if a["detector"] != "stopped_moving" and not value or len(out) >= MAX_SERIES:
            continue
        key = (a["metric"], dims_key(a.get("dims") or {}))
        label = series_words(a)
        if key in seen or label in out:
            continue
        seen.add(key)
        rows = conn.execute(_SERIES_POINTS, (target, key[0], key[1])).fetchall()
        out[label] = [(str(d), float(v)) for d, v in rows if v is not None]
    return out


def failed_checks(conn: Any, target: str, nodes: set[str]) -> list[dict[str, Any]]:
    """The checks of ``nodes`` whose latest outcome in ``target``'s runs is a failure: which,
    of what, since which run (the first failure of the current streak)."""
    rows = conn.execute(_CHECKS_OF_RECENT_RUNS, (target, target, RECENT_RUNS)).fetchall()
    streak: dict[str, dict[str, Any]] = {}
    for run_id, ts, check, status, data in rows:
        d = json.loads(data) if data else {}
        of = [str(x) for x in d.get("of") or []]
        if not set(of) & nodes:
            continue
        if status in ("fail", "error"):
            cur = streak.get(check)
            if cur is None:
                cur = streak[check] = {
                    "check": check, "of": of, "status": status, "first_run": run_id,
                    "first_at": datetime.fromtimestamp(ts).isoformat(timespec="seconds"),
                    "runs": 0, "blocking": bool(d.get("blocking")),
                }  # fmt: skip
            cur["runs"] += 1
            cur["last_run"] = run_id
            cur["message"] = str(d.get("message") or "")[:200] or None
            cur["failures"] = d.get("failures")
        elif status in ("pass", "success"):
            streak.pop(check, None)
    return sorted(streak.values(), key=lambda c: (c["first_at"], c["check"]))


def _when(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts).isoformat(timespec="seconds") if ts else None


def ingestion_runs(conn: Any, target: str, node_id: str, days: list[str]) -> dict[str, Any] | None:
    """The journaled runs of ingestion job ``node_id`` for any of ``days`` (ISO): per day, the
    latest run that covered it; ``failed_days`` are those whose latest run failed, ``runs`` the
    failed runs since each such day's last success (None: no run covered any of the days)."""
    from splice.run.ingest_job import SELECTOR_PREFIX, ingest_days

    name = node_id.split(":", 1)[-1]
    rows = conn.execute(_INGESTION_RUNS, (target, f"{SELECTOR_PREFIX}{name}@%", node_id)).fetchall()
    wanted = sorted(set(days))
    covering: dict[str, list[dict[str, Any]]] = {d: [] for d in wanted}
    for run_id, selector, ts, status, data in rows:
        parsed = ingest_days(selector)
        if parsed is None or parsed[0] != name:
            continue
        first, last = parsed[1].isoformat(), parsed[2].isoformat()
        d = json.loads(data) if data else {}
        rec = {"run_id": run_id, "status": status, "at": _when(ts), "first": first,
               "last": last, "error": None if status == "success" else d.get("message"),
               "said": d.get("message") if status == "success" else None,
               **({"external": d["external"]} if d.get("external") else {})}  # fmt: skip
        for day in wanted:
            if first <= day <= last:
                covering[day].append(rec)
    return _per_day(name, node_id, covering)


def _per_day(name: str, node_id: str, covering: dict[str, list[dict[str, Any]]]
             ) -> dict[str, Any] | None:  # fmt: skip
    """Per day, the failed runs since its last successful one (the latest run decides)."""
    if not any(covering.values()):
        return None
    failed_days, loaded, runs = [], [], []
    for day, recs in sorted(covering.items()):
        if not recs:
            continue
        if recs[-1]["status"] == "success":
            loaded.append(day)
            continue
        failed_days.append(day)
        tail = []
        for r in reversed(recs):
            if r["status"] == "success":
                break
            tail.append(r)
        for r in reversed(tail):
            if r not in runs:
                runs.append(r)
    return {"job": name, "node": node_id, "failed_days": failed_days, "loaded_days": loaded,
            "runs": sorted(runs, key=lambda r: str(r["at"])),
            "covering": {d: recs[-1] for d, recs in sorted(covering.items()) if recs}}  # fmt: skip


def orchestrator_failures(ws: Workspace, job: Any, days: list[str], limit: int = 30
                          ) -> dict[str, Any] | None:  # fmt: skip
    """The job's recent runs in the orchestrator that owns it, for ``days`` (a run's partition
    or logical date): failed days and runs as :func:`ingestion_runs` says them (None when the
    orchestrator cannot be read or ran none of the days)."""
    from splice.errors import OrchestratorError
    from splice.orchestrators import for_job

    orch = for_job(job, ws.root)
    if orch is None:
        return None
    try:
        recent = orch.recent_runs(limit)
    except OrchestratorError:
        return None
    covering: dict[str, list[dict[str, Any]]] = {d: [] for d in sorted(set(days))}
    for r in sorted((r for r in recent if r.finished), key=lambda r: r.started or 0.0):
        if r.partition not in covering:
            continue
        message = r.message
        if not r.ok and message is None:
            message = orch.failure_message(r.run_id)
        covering[r.partition].append({
            "run_id": r.run_id, "system": r.system, "status": "success" if r.ok else "failed",
            "at": _when(r.started), "first": r.partition, "last": r.partition,
            "error": None if r.ok else f"{r.status}" + (f": {message}" if message else ""),
            "url": r.url,
        })  # fmt: skip
    return _per_day(job.name, f"ingestion:{job.name}", covering)


def processed_at(conn: Any, target: str, node_id: str) -> list[tuple[float, list[list[int]]]]:
    """When Splice recorded each build of ``node_id`` and the intervals it then held."""
    rows = conn.execute(_BUILDS, (target, node_id)).fetchall()
    return [(float(t), json.loads(iv)) for t, iv in rows if iv]


def late_rows(
    rows_by_load: list[dict[str, Any]],
    builds: list[tuple[float, list[list[int]]]],
    node_id: str,
) -> list[dict[str, Any]]:
    """Rows loaded after the first build that held their interval (the interval was done).

    >>> ms = 1790553600000  # 2026-09-28 00:00 UTC
    >>> builds = [(1000.0, [[ms, ms + 86400000]])]
    >>> rows = [{"interval": "2026-09-28", "load_id": "a", "at": "1970-01-01T00:10:00", "rows": 6},
    ...         {"interval": "2026-09-28", "load_id": "b", "at": "1970-01-01T00:30:00", "rows": 4}]
    >>> [(r["load_id"], r["rows"]) for r in late_rows(rows, builds, "p:m")]
    [('b', 4)]
    """
    from datetime import UTC

    out = []
    for rec in rows_by_load:
        day = date.fromisoformat(rec["interval"])
        ms = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
        done = next(
            (t for t, ivs in builds if any(lo <= ms < hi for lo, hi in ivs)), None
        )  # fmt: skip
        at = parse_timestamp(rec["at"])
        if done is not None and at is not None and at > done:
            out.append(rec | {"processed_at": datetime.fromtimestamp(done, UTC).isoformat(
                timespec="seconds"), "node": node_id})  # fmt: skip
    return out


def parse_timestamp(v: Any) -> float | None:
    """Epoch seconds of a number or an ISO timestamp (UTC when naive); None when neither.

    >>> parse_timestamp("1970-01-02T00:00:00"), parse_timestamp(5), parse_timestamp("soon")
    (86400.0, 5.0, None)
    """
    from datetime import UTC

    if v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        dt = datetime.fromisoformat(str(v))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _source_runs(
    ws: Workspace, node: Any, anomalies: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The ingestion job's runs for the anomalies' days: Splice's journal, then (for days it
    has nothing failed on) the orchestrator that owns the job."""
    days = sorted({a["interval"].isoformat() if hasattr(a["interval"], "isoformat")
                   else str(a["interval"]) for a in anomalies})  # fmt: skip
    try:
        runs = ingestion_runs(ws.state.conn, ws.target, node.id, days)
    except Exception:  # noqa: BLE001 - no journal: nothing to say of the runs
        runs = None
    job = next((j for j in ws.config.ingestion if f"ingestion:{j.name}" == node.id), None)
    if job is not None and job.orchestrated and not (runs or {}).get("failed_days"):
        try:
            there = orchestrator_failures(ws, job, days)
        except Exception:  # noqa: BLE001 - the orchestrator is best effort here
            there = None
        if there is not None and there["failed_days"]:
            runs = there
    return runs


def gather(
    ws: Workspace, graph: Any, origin: str | None, anomalies: list[dict[str, Any]],
    source: dict[str, Any] | None,
) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of :func:`classify` read from Splice's state (points, checks,
    build evidence); adds ``late_rows`` to ``source`` when rows arrived after processing."""
    conn = ws.state.conn
    out: dict[str, Any] = {}
    if origin is None:
        return out
    try:
        out["history"] = series_history(conn, ws.target, anomalies)
    except Exception:  # noqa: BLE001 - no history: the values say nothing more
        out["history"] = {}
    nodes = {origin} | (graph.descendants(origin) if origin in graph.nodes else set())
    try:
        out["checks"] = failed_checks(conn, ws.target, nodes)
    except Exception:  # noqa: BLE001 - no journal: no failed checks to name
        out["checks"] = []
    stale = {(a.get("data") or {}).get("check"): (a.get("data") or {}).get("skipped")
             for a in anomalies if a["detector"] == "failing_check"}  # fmt: skip
    for c in out["checks"]:  # a test or an audit, as the graph says; what its runs skipped
        if c["check"] in graph.nodes:
            c["kind"] = graph.nodes[c["check"]].kind
        if stale.get(c["check"]):
            c["skipped"] = stale[c["check"]]
    src_node = graph.nodes.get(str((source or {}).get("node")))
    if source is not None and src_node is not None and src_node.kind == "ingestion":
        source["runs"] = _source_runs(ws, src_node, anomalies)
    from splice.watch.cause_domain import domain_evidence

    try:
        out["domain"] = domain_evidence(ws, graph, origin, anomalies)
    except Exception as e:  # noqa: BLE001 - the change is named without the join's side
        out["domain"] = {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    if source is not None and source.get("rows_by_load"):
        try:
            builds = processed_at(conn, ws.target, origin)
        except Exception:  # noqa: BLE001 - no build evidence: nothing to compare with
            builds = []
        late = late_rows(source["rows_by_load"], builds, origin)
        if late:
            source["late_rows"] = late
    return out
