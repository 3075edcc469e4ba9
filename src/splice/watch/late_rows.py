"""Rows that arrived after their interval was processed: noticed at every ``splice watch``.

A model that reads an ingested relation incrementally (SQLMesh ``INCREMENTAL_BY_TIME_RANGE``)
processes each interval once; rows of that interval loaded afterwards are never read unless
the interval is restated.  For every such (relation, model) pair whose relation says when its
rows were loaded (dlt's ``_dlt_load_id`` with ``_dlt_loads.inserted_at``, or a ``_load_id`` /
``_loaded_at`` column), Splice compares, over the last :data:`LOOKBACK_DAYS` intervals, when
each load wrote each interval's rows with when the model last processed that interval:

- first: the build evidence (``evidence_versions``) of the first build that held the interval;
- again: a repair that restated the interval for that model (the proposal's restate step,
  applied in the run that recorded a later build).

Rows loaded later are an anomaly ``late_rows`` on the model's row-count monitor for that
interval (value: the late rows; expected: 0), so the incident, its diagnosis (fault class
``late_rows``) and the proposal (the restatement of those intervals) follow as for any other
anomaly.  A restatement records a new build, so a repaired interval is not flagged again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph
from splice.state.sql import statement
from splice.watch.results import Anomaly, store_anomaly

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

DETECTOR = "late_rows"
#: How many days back from a model's latest processed interval late rows are looked for.
LOOKBACK_DAYS = 31
_APPLY = re.compile(r"splice apply (\S+)")

_BUILDS = statement(
    "SELECT v.recorded_at, v.intervals, r.command FROM evidence_versions v "
    "LEFT JOIN runs r ON r.run_id = v.run_id WHERE v.target = ? AND v.node_id = ? "
    "AND v.intervals IS NOT NULL ORDER BY v.seq"
)
_PROPOSAL = statement("SELECT payload FROM repair_proposals WHERE proposal_id = ?")
_SERIES_ID = statement(
    "SELECT series_id FROM watch_series WHERE target = ? AND metric = ? AND dims = ?"
)


def _day_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def processed_times(conn: Any, target: str, node_id: str) -> dict[str, Any]:
    """When ``node_id`` first processed its intervals and when repairs restated them:
    ``{"builds": [(recorded_at, intervals)], "restated": [(recorded_at, start, end)]}``."""
    rows = conn.execute(_BUILDS, (target, node_id)).fetchall()
    builds: list[tuple[float, list[list[int]]]] = []
    restated: list[tuple[float, str, str]] = []
    for at, intervals, command in rows:
        builds.append((float(at), json.loads(intervals)))
        m = _APPLY.search(command or "")
        if not m:
            continue
        got = conn.execute(_PROPOSAL, (m.group(1),)).fetchone()
        for step in (json.loads(got[0]).get("steps") or []) if got else []:
            restates = step.get("kind") == "restate" and node_id in (step.get("nodes") or [])
            if restates and step.get("start") and step.get("end"):
                restated.append((float(at), str(step["start"]), str(step["end"])))
    return {"builds": builds, "restated": restated}


def last_processed(times: dict[str, Any], day: date) -> float | None:
    """When ``day`` was last processed (None: never).

    >>> ms = _day_ms(date(2026, 9, 28))
    >>> t = {"builds": [(100.0, [[ms, ms + 86400000]]), (200.0, [[ms, ms + 86400000]])],
    ...      "restated": [(300.0, "2026-09-28", "2026-09-28")]}
    >>> last_processed(t, date(2026, 9, 28)), last_processed(t, date(2026, 9, 29))
    (300.0, None)
    """
    ms = _day_ms(day)
    first = next(
        (at for at, ivs in times["builds"] if any(lo <= ms < hi for lo, hi in ivs)), None
    )  # fmt: skip
    if first is None:
        return None
    again = [at for at, a, b in times["restated"] if a <= day.isoformat() <= b and at > first]
    return max([first, *again])


def _readers(graph: Graph, node_id: str) -> set[str]:
    """The models reading ``node_id``'s relation: its children, through the project's own
    declaration of that relation (a SQLMesh external model, a dbt source)."""
    out: set[str] = set()
    for child in graph.descendants(node_id, depth=1):
        n = graph.nodes.get(child)
        if n is None:
            continue
        if n.kind == "model":
            out.add(child)
        elif n.kind in ("source", "external"):
            out |= {c for c in graph.descendants(child, depth=1)
                    if (m := graph.nodes.get(c)) is not None and m.kind == "model"}  # fmt: skip
    return out


def _pairs(ws: Workspace, graph: Graph) -> list[tuple[Any, Any, Any, dict[str, str], str]]:
    """(source node, relation, model, relation columns, relation time column) to check."""
    from splice.lineage.service import warehouse_columns
    from splice.watch.diagnosis import time_column_of
    from splice.watch.source_evidence import LOAD_ID_COLUMNS, LOADED_AT_COLUMNS

    sources = [
        n for n in graph.nodes.values() if n.kind in ("ingestion", "source") and n.all_writes
    ]
    if not sources:
        return []
    cols_by_rel = warehouse_columns(ws)
    out = []
    for src in sources:
        for rel in src.all_writes:
            cols = cols_by_rel.get(rel)
            if not cols or not any(c in cols for c in LOAD_ID_COLUMNS):
                continue
            if "_dlt_load_id" not in cols and not any(c in cols for c in LOADED_AT_COLUMNS):
                continue
            for mid in sorted(_readers(graph, src.id)):
                model = graph.nodes[mid]
                if not model.time_column:
                    continue
                tc = time_column_of(ws, graph, model.id, src.id)
                if tc and tc in cols:
                    out.append((src, rel, model, cols, tc))
    return out


def find_late_rows(
    ws: Workspace, graph: Graph, say: Callable[[str], None] | None = None
) -> list[Anomaly]:
    """The late rows of every checked (relation, model) pair, as anomalies (not stored).

    A failure here never fails the watch: it is said (``say``) and nothing is found."""
    try:
        return _find(ws, graph)
    except Exception as e:  # noqa: BLE001 - the metrics' watch stands without this check
        if say is not None:
            say(f"Late rows were not checked: {str(e).splitlines()[0]}")
        return []


def _find(ws: Workspace, graph: Graph) -> list[Anomaly]:
    from splice.warehouse.connect import connect
    from splice.watch.cause_evidence import parse_timestamp
    from splice.watch.source_evidence import load_rows

    conn = ws.state.conn
    found: list[Anomaly] = []
    pairs = _pairs(ws, graph)
    if not pairs:
        return found
    with connect(ws, "late rows") as con:
        for src, rel, model, cols, tc in pairs:
            times = processed_times(conn, ws.target, model.id)
            if not times["builds"]:
                continue
            ends = [hi for _, ivs in times["builds"] for _, hi in ivs]
            last = datetime.fromtimestamp(max(ends) / 1000, UTC).date() - timedelta(days=1)
            ev: dict[str, Any] = {"loads": []}
            load_rows(con, ev, rel, cols, tc, last - timedelta(days=LOOKBACK_DAYS), last,
                       ws.dialect)  # fmt: skip
            late: dict[str, list[dict[str, Any]]] = {}
            done_at: dict[str, float] = {}
            for rec in ev.get("rows_by_load") or []:
                day = date.fromisoformat(rec["interval"])
                done = last_processed(times, day)
                at = parse_timestamp(rec["at"])
                if done is not None and at is not None and at > done:
                    late.setdefault(rec["interval"], []).append(rec)
                    done_at[rec["interval"]] = done
            for day_iso, recs in sorted(late.items()):
                n = sum(r["rows"] for r in recs)
                when = datetime.fromtimestamp(done_at[day_iso], UTC).isoformat(timespec="seconds")
                loads = ", ".join(f"{r['load_id']} at {str(r['at'])[:19]}" for r in recs[:3])
                found.append(
                    Anomaly(
                        metric=f"{model.id}/row_count",
                        node_id=model.id,
                        dims={},
                        interval=date.fromisoformat(day_iso),
                        detector=DETECTOR,
                        direction="up",
                        value=float(n),
                        expected=0.0,
                        score=0.0,
                        reason=(
                            f"{n:,} rows of {rel.key} for {day_iso} were loaded ({loads}) after "
                            f"{model.name} processed {day_iso} at {when[:19]}: they are not in "
                            "it until the interval is restated"
                        ),
                        data={
                            "relation": rel.key,
                            "source": src.id,
                            "rows": n,
                            "loads": recs,
                            "processed_at": when,
                        },  # fmt: skip
                        owner=model.owner,
                    )
                )
    return found


def record_late_rows(
    conn: Any, target: str, watch_id: str, now: float, found: list[Anomaly]
) -> list[Anomaly]:
    """Store the late rows found (:func:`find_late_rows`) as anomalies on each model's
    row-count monitor (inside the watch's transaction); returns those not stored before."""
    from splice.watch.history import dims_key

    out = []
    for a in found:
        row = conn.execute(_SERIES_ID, (target, a.metric, dims_key({}))).fetchone()
        if row is None:  # no row-count monitor on the model: nothing to attach it to
            continue
        if store_anomaly(conn, int(row[0]), target, a, watch_id, now):
            out.append(a)
    return out
