"""What ``splice watch`` measures and what it found, as data: the metrics and monitors, one
metric's history with its baseline, the anomalies, and the monitors derived from the graph.

The specs come from :func:`splice.watch.metrics.watch_specs` (the same ones watch measures);
the history from Splice's state (:mod:`splice.watch.history`). Nothing is measured here.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlglot import exp

from splice.errors import InputError, NodeNotFoundError
from splice.reads import iso_time, state_conn
from splice.state.sql import Statement, parse, placeholders, statement
from splice.watch.history import TRAINING_KEEPS, dims_key, dims_label
from splice.watch.robust import MAD_TO_SIGMA

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: How many series' last values are listed by name in a metric's summary.
LAST_VALUES_SHOWN = 5


def _specs(ws: Workspace, *, monitors: bool = True) -> list[Any]:
    from splice.watch.metrics import watch_specs

    specs = watch_specs(ws)
    return specs if monitors else [s for s in specs if s.declared]


def _measure_kind(spec: Any, measure: Any) -> str:
    return "declared" if spec.declared else measure.kind


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


# -- anomalies ------------------------------------------------------------------------------------
#: The anomalies of a target (a query each call narrows: see :func:`_anomalies_where`).
_ANOMALIES = parse(
    "SELECT a.anomaly_id, a.metric, a.node_id, a.dims, a.interval_start, a.detector, a.direction, "
    "a.value, a.expected, a.score, a.reason, a.data, a.watch_id, a.detected_at, a.incident_id, "
    "COALESCE(i.status, a.status) FROM watch_anomalies a "
    "LEFT JOIN incidents i ON i.incident_id = a.incident_id WHERE a.target = ?"
)
_SERIES_COUNTS = statement(
    "SELECT metric, COUNT(*) FROM watch_series WHERE target = ? GROUP BY metric"
)
_LAST_POINTS = statement(
    "WITH last AS (SELECT s.metric AS metric, MAX(p.interval_start) AS at "
    "FROM watch_points p JOIN watch_series s ON s.series_id = p.series_id "
    "WHERE s.target = ? GROUP BY s.metric) "
    "SELECT s.metric, s.dims, p.interval_start, p.value FROM watch_points p "
    "JOIN watch_series s ON s.series_id = p.series_id "
    "JOIN last ON last.metric = s.metric AND p.interval_start = last.at "
    "WHERE s.target = ? ORDER BY s.metric, s.dims"
)
_OPEN_COUNTS = statement(
    "SELECT a.metric, SUM(COALESCE(i.status, a.status) = 'open'), COUNT(*) "
    "FROM watch_anomalies a LEFT JOIN incidents i ON i.incident_id = a.incident_id "
    "WHERE a.target = ? GROUP BY a.metric"
)
_METRICS = statement("SELECT DISTINCT metric FROM watch_series WHERE target = ?")
_SERIES_OF_METRIC = statement(
    "SELECT series_id, dims, node_id FROM watch_series WHERE target = ? AND metric = ? "
    "ORDER BY dims"
)


def _anomalies_where(*conditions: exp.Expr, first: exp.Expr | None = None) -> exp.Select:
    """The anomalies of a target, with ``conditions`` too (each with its ``?``), ``first``
    before the anomaly's columns."""
    q = _ANOMALIES.copy()
    assert isinstance(q, exp.Select)
    if first is not None:
        q.set("expressions", [first, *q.expressions])
    return q.where(*conditions) if conditions else q


def _col(name: str) -> exp.Column:
    return exp.column(name, table="a")


def _anomaly(r: tuple[Any, ...]) -> dict[str, Any]:
    dims = json.loads(r[3])
    return {
        "anomaly_id": int(r[0]),
        "metric": r[1],
        "node": r[2],
        "series": dims_label(dims),
        "dims": dims,
        "interval": r[4],
        "detector": r[5],
        "direction": r[6],
        "value": _num(r[7]),
        "expected": _num(r[8]),
        "score": _num(r[9]),
        "reason": r[10],
        "data": json.loads(r[11]) if r[11] else {},
        "watch_id": r[12],
        "detected_at": iso_time(r[13]),
        "incident": r[14],
        "status": r[15],
    }


def _since(since: date | str | None) -> str | None:
    if since is None or isinstance(since, date):
        return since.isoformat() if since else None
    try:
        return date.fromisoformat(str(since).strip()[:10]).isoformat()
    except ValueError:
        raise InputError(
            f"since {since!r} is not a date.", fix="write it as YYYY-MM-DD, e.g. 2026-09-28"
        ) from None


def anomalies(
    ws: Workspace,
    *,
    status: str | None = None,
    metric: str | None = None,
    since: date | str | None = None,
) -> list[dict[str, Any]]:
    """The anomalies watch stored for the target, newest interval first.

    ``status``: an anomaly's status is its incident's (``open``, ``resolved``, ``merged``), or
    ``open`` while it is in none; None lists every status. ``metric``: one metric (a measure
    name, a declared metric, or a node id for all of its monitors). ``since``: intervals from
    this date on (a date or ``YYYY-MM-DD``).
    """
    start = _since(since)
    conn = state_conn(ws)
    if conn is None:
        return []
    conds: list[exp.Expr] = []
    args: list[Any] = [ws.target]
    if status:
        status_of = exp.func("COALESCE", exp.column("status", "i"), _col("status"))
        conds.append(status_of.eq(exp.Placeholder()))
        args.append(status.strip().lower())
    if metric:
        conds.append(exp.or_(_col("metric").eq(exp.Placeholder()),
                             _col("node_id").eq(exp.Placeholder())))  # fmt: skip
        args += [metric, metric]
    if start:
        conds.append(_col("interval_start") >= exp.Placeholder())
        args.append(start)
    q = _anomalies_where(*conds).order_by(
        _col("interval_start").desc(), _col("metric"), _col("dims"), _col("detector")
    )
    return [_anomaly(r) for r in conn.execute(Statement(q), args)]


# -- metrics --------------------------------------------------------------------------------------
def _series_counts(conn: sqlite3.Connection, target: str) -> dict[str, int]:
    return dict(conn.execute(_SERIES_COUNTS, (target,)).fetchall())


def _last_points(conn: sqlite3.Connection, target: str) -> dict[str, list[tuple[str, str, Any]]]:
    """metric -> [(dims, interval, value)] at its newest measured interval."""
    rows = conn.execute(_LAST_POINTS, (target, target)).fetchall()
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for metric, dims, at, value in rows:
        out.setdefault(metric, []).append((dims, at, value))
    return out


def _open_counts(conn: sqlite3.Connection, target: str) -> dict[str, tuple[int, int]]:
    """metric -> (open anomalies, all anomalies)."""
    rows = conn.execute(_OPEN_COUNTS, (target,)).fetchall()
    return {r[0]: (int(r[1] or 0), int(r[2])) for r in rows}


def _summary(points: list[tuple[str, str, Any]]) -> dict[str, Any] | None:
    """The newest interval's values: each series by name when few, else their range."""
    if not points:
        return None
    values = {dims_label(json.loads(d)): _num(v) for d, _, v in points}
    nums = [v for v in values.values() if v is not None]
    out: dict[str, Any] = {"interval": points[0][1], "series": len(values)}
    if len(values) == 1:
        out["value"] = next(iter(values.values()))
    elif len(values) <= LAST_VALUES_SHOWN:
        out["values"] = values
    if nums and len(values) > 1:
        out.update(min=min(nums), median=float(np.median(nums)), max=max(nums))
    return out


def metrics(ws: Workspace, *, monitors: bool = True) -> list[dict[str, Any]]:
    """Every metric and default monitor ``splice watch`` measures for the target, one record
    per measured number (a declared metric, or one measure of a monitor): its node, kind
    (``declared``, or the monitor's: volume, null_rate, distinct, duplicates, value, lag),
    grain, dimensions, how many series, how far it is measured, the newest values and its
    open anomalies. ``monitors=False`` lists only the declared ``[[metrics]]``.
    """
    specs = _specs(ws, monitors=monitors)
    conn = state_conn(ws)
    measured: dict[str, Any] = {}
    counts: dict[str, int] = {}
    last: dict[str, list[tuple[str, str, Any]]] = {}
    found: dict[str, tuple[int, int]] = {}
    if conn is not None:
        from splice.watch.history import metric_rows

        measured = metric_rows(conn, ws.target)
        counts = _series_counts(conn, ws.target)
        last = _last_points(conn, ws.target)
        found = _open_counts(conn, ws.target)
    out = []
    for spec in specs:
        row = measured.get(spec.name)
        for m in spec.measures:
            open_n, all_n = found.get(m.name, (0, 0))
            out.append(
                {
                    "name": m.name,
                    "spec": spec.name,
                    "node": spec.node_id,
                    "kind": _measure_kind(spec, m),
                    "declared": spec.declared,
                    "measure": m.label,
                    "column": m.column,
                    "time_column": spec.time,
                    "grain": spec.grain,
                    "dimensions": list(spec.dimensions),
                    "detectors": list(m.active_detectors),
                    "owner": spec.owner,
                    "domain": spec.domain,
                    "description": spec.description,
                    "series": counts.get(m.name, 0),
                    "measured_through": (
                        row.measured_through.isoformat() if row and row.measured_through else None
                    ),
                    "last": _summary(last.get(m.name, [])),
                    "open_anomalies": open_n,
                    "anomalies": all_n,
                }
            )
    return out


# -- one metric's history -------------------------------------------------------------------------
def _resolve(
    ws: Workspace, name: str, known_state: list[str]
) -> tuple[Any | None, Any | None, str]:
    """(spec, measure, metric name) for a measure name, a declared metric or a one-measure spec."""
    specs = _specs(ws)
    for s in specs:
        for m in s.measures:
            if m.name == name:
                return s, m, m.name
    for s in specs:
        if s.name == name and len(s.measures) == 1:
            return s, s.measures[0], s.measures[0].name
    if name in known_state:  # measured once, no longer declared: history without its spec
        return None, None, name
    names = sorted({m.name for s in specs for m in s.measures} | set(known_state))
    spec_hit = next((s for s in specs if s.name == name), None)
    if spec_hit is not None:
        raise NodeNotFoundError(
            f"{name!r} is a monitor of {len(spec_hit.measures)} measures; name one of them.",
            fix="use one of: " + ", ".join(m.name for m in spec_hit.measures),
        )
    from splice.graph.suggest import closest

    near = closest(name, names) or [n for n in names if name.lower() in n.lower()][:3]
    raise NodeNotFoundError(
        f"no metric {name!r}." + (f" Closest: {', '.join(near)}." if near else ""),
        fix="`splice metrics` lists every metric and monitor by name",
    )


def _pick_series(
    series: list[tuple[int, dict[str, Any]]], wanted: str | None, metric: str
) -> list[tuple[int, dict[str, Any]]]:
    if wanted is None:
        return series
    w = wanted.strip().lower()
    hits = [
        (sid, dims)
        for sid, dims in series
        if w in (dims_label(dims).lower(), dims_key(dims).lower())
        or (len(dims) >= 1 and w in {str(v).lower() for v in dims.values()})
    ]
    if hits:
        return hits
    import difflib

    labels = [dims_label(d) for _, d in series]
    near = difflib.get_close_matches(wanted, labels, n=3, cutoff=0.4)
    raise NodeNotFoundError(
        f"metric {metric!r} has no series {wanted!r}."
        + (f" Closest: {', '.join(near)}." if near else ""),
        fix="name a series as `splice metrics show` prints it (e.g. currency=EUR, or EUR); "
        + f"it has {len(labels)}: {', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''}",
    )


def _baselines(
    days: list[date], values: list[float], excluded: set[date], *, window: int, grain: str,
    z: float, min_points: int, level_start: date | None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Per point: the median and MAD of the good points in the window before it, the band
    ``median +- z * scale``, and the last good value before it."""
    from splice.watch.grid import intervals_back

    out = []
    good = [(d, v) for d, v in zip(days, values, strict=True) if d not in excluded]
    g_days = [d for d, _ in good]
    g_vals = np.array([v for _, v in good], dtype=float)
    g_np = np.array(g_days, dtype="datetime64[D]")
    for d in days:
        lo = intervals_back(d, grain, window)
        if level_start is not None and level_start <= d:
            lo = max(lo, level_start)
        i0 = int(np.searchsorted(g_np, np.datetime64(lo)))
        i1 = int(np.searchsorted(g_np, np.datetime64(d)))
        win = g_vals[i0:i1]
        rec: dict[str, Any] = {
            "training_points": int(win.size),
            "last_good": float(g_vals[i1 - 1]) if i1 > 0 else None,
            "last_good_interval": g_days[i1 - 1].isoformat() if i1 > 0 else None,
            "baseline": None,
            "scale": None,
            "band": None,
        }
        if win.size >= min_points:
            med = float(np.median(win))
            scale = float(MAD_TO_SIGMA * np.median(np.abs(win - med)))
            rec.update(baseline=med, scale=scale, band=[med - z * scale, med + z * scale])
        out.append(rec)
    return out


def metric_history(
    ws: Workspace, name: str, *, series: str | None = None, last: int | None = None
) -> dict[str, Any]:
    """One metric's points per series, with a baseline for each point and the anomalies.

    ``name`` is a metric as ``splice metrics`` lists it (a declared metric, or a monitor's
    measure such as ``pricing:fx.daily_rates/row_count``); ``series`` one series (``EUR`` or
    ``currency=EUR``); ``last`` the newest N points of each series.

    The baseline is a **rolling median and MAD**: for each point, the median of the series'
    points in the ``[watch].training_days`` before it (anomalous points left out, as the
    detectors leave them out of training, and nothing before a level shift the series has
    settled into), its scale (1.4826 x MAD), and the band ``median +- z_spike x scale`` of the
    metric's sensitivity, once the window holds ``min_history`` points. It is what the
    level detectors compare a point against, without their refinements (a weekday baseline
    for a weekly-seasonal series, a log scale for positive series, interval-to-interval moves
    for random walks), so an anomaly's own ``expected`` value is the detector's exact one.
    ``last_good`` is the last good value before each point: what ``stopped_moving`` and
    ``jump`` compare against.
    """
    from splice.watch import history as hist
    from splice.watch.panel import sensitivity

    if last is not None and last < 1:
        raise InputError(f"last must be 1 or more, not {last}.", fix="pass --last N with N >= 1")
    conn = state_conn(ws)
    known = (
        [r[0] for r in conn.execute(_METRICS, (ws.target,))]  # fmt: skip
        if conn is not None
        else []
    )
    spec, measure, metric = _resolve(ws, name, known)
    wcfg = ws.config.watch
    grain = spec.grain if spec is not None else "day"
    sens = sensitivity(spec.sensitivity if spec else wcfg.sensitivity, wcfg.training_days, grain)
    rows = (
        conn.execute(_SERIES_OF_METRIC, (ws.target, metric)).fetchall() if conn is not None else []
    )
    all_series = [(int(r[0]), json.loads(r[1])) for r in rows]
    chosen = _pick_series(all_series, series, metric) if all_series else []
    ids = [sid for sid, _ in chosen]
    pts = hist.points(conn, ids) if conn is not None and ids else {}
    starts = hist.level_starts(conn, ids) if conn is not None and ids else {}
    found: dict[int, list[dict[str, Any]]] = {}
    if conn is not None and ids:
        q = _anomalies_where(_col("series_id").isin(*placeholders(len(ids))),
                             first=_col("series_id"))  # fmt: skip
        q = q.order_by(_col("interval_start"), _col("detector"))
        for r in conn.execute(Statement(q), [ws.target, *ids]):
            found.setdefault(int(r[0]), []).append(_anomaly(r[1:]))
    out_series = []
    for sid, dims in chosen:
        p = pts.get(sid, [])
        anoms = found.get(sid, [])
        excluded = {
            date.fromisoformat(a["interval"]) for a in anoms if a["detector"] not in TRAINING_KEEPS
        }
        base = _baselines(
            [d for d, _ in p], [v for _, v in p], excluded, window=sens.training, grain=grain,
            z=sens.z_spike, min_points=sens.min_history, level_start=starts.get(sid),
        )  # fmt: skip
        by_day: dict[str, list[str]] = {}
        for a in anoms:
            by_day.setdefault(a["interval"], []).append(a["detector"])
        points = [
            {"interval": d.isoformat(), "value": v, **b, "anomalies": by_day.get(d.isoformat(), [])}
            for (d, v), b in zip(p, base, strict=True)
        ]
        if last is not None:
            points = points[-last:]
            shown = {pt["interval"] for pt in points}
            anoms = [a for a in anoms if a["interval"] in shown]
        out_series.append(
            {"series": dims_label(dims), "dims": dims, "points": points, "anomalies": anoms}
        )
    return {
        "metric": metric,
        "spec": spec.name if spec else None,
        "node": spec.node_id if spec else (rows[0][2] if rows else None),
        "kind": _measure_kind(spec, measure) if spec else None,
        "declared": spec.declared if spec else None,
        "measure": measure.label if measure else None,
        "grain": grain,
        "dimensions": list(spec.dimensions) if spec else [],
        "detectors": list(measure.active_detectors) if measure else [],
        "baseline_method": {
            "name": "rolling_median_mad",
            "window": sens.training,
            "window_unit": grain,
            "z": sens.z_spike,
            "min_points": sens.min_history,
            "sensitivity": sens.name,
            "excludes": "anomalous points (but level shifts and missing intervals); points "
            "before the level shift a series settled into",
            "note": "an approximation of the level detectors' baseline; each anomaly's "
            "`expected` is the detector's own",
        },
        "series": out_series,
        "series_total": len(all_series),
        "anomalies": sum(len(s["anomalies"]) for s in out_series),
    }


# -- default monitors -----------------------------------------------------------------------------
def _why(spec: Any, m: Any, keys: Any) -> str:
    t = spec.time
    grain = ", ".join(keys.grain)
    per = ("of the whole table (it has no time column), as of each watch's newest interval"
           if spec.per_table else f"per {spec.grain} of the time column {t}")  # fmt: skip
    if m.kind == "volume":
        return f"row count {per}"
    if m.kind == "checksum":
        return (f"a checksum of {m.column}'s values {per}: never judged as a number; measured "
                "again when this node's or an upstream node's code changes, to see which "
                "published values the change rewrote")  # fmt: skip
    if m.kind == "value" and not spec.dimensions:
        return f"{m.label}, the numeric column {m.column} summed {per}"
    if m.kind == "null_rate":
        c = m.column
        src = (
            f"in the grain ({grain}) of audit unique_combination_of_columns"
            if c in keys.grain
            else "audited unique_values"
            if c in keys.unique
            else "audited not_null"
            if c in keys.not_null
            else "a column of a node with no key audits (the first 20 are watched)"
        )
        return f"null rate per {spec.grain} of {c}: {src}"
    if m.kind == "distinct":
        return f"distinct values of {m.column}, a text dimension of the grain ({grain})"
    if m.kind == "duplicates":
        if m.column:
            return f"duplicate {m.column} per {spec.grain}: audited unique_values"
        return f"duplicate rows of the grain ({grain}): audit unique_combination_of_columns"
    if m.kind == "lag":
        return f"days the date column {m.column} trails {t} (stale or late data shows as a rise)"
    if m.kind == "slice":
        return (f"rows per {spec.grain} per value of {m.column}, a dimension the graph knows (a "
                "metric's, the grain's, or one its readers group or join by); a value absent "
                "from an interval has 0 rows")  # fmt: skip
    j = getattr(spec, "join", None)
    if m.kind == "coverage" and j is not None:
        partner = "latest interval" if j.right_time else "rows"
        return (f"share of {j.left.key}'s rows per {spec.grain} whose {j.left_key} finds a "
                f"partner among {j.right.key}.{j.right_key} ({partner}): a join of {spec.node_id}")  # fmt: skip
    dims = ", ".join(spec.dimensions)
    return (
        f"the numeric column {m.column} per {dims}: the grain is ({grain}), one row per "
        f"{t} and {dims}"
    )


def default_monitors(ws: Workspace) -> list[dict[str, Any]]:
    """The monitors derived from the graph (``[watch] default_monitors``): for every model,
    seed or source with a time column, each measure with its node, kind, column and why it
    is watched (its audits: the grain, unique and not-null columns)."""
    from splice.watch.metrics import node_keys

    g = ws.graph()
    out = []
    for spec in _specs(ws):
        if spec.declared:
            continue
        keys = node_keys(g, g.nodes[spec.node_id])
        for m in spec.measures:
            out.append(
                {
                    "node": spec.node_id,
                    "monitor": m.name,
                    "spec": spec.name,
                    "kind": m.kind,
                    "measure": m.label,
                    "column": m.column,
                    "time_column": spec.time,
                    "dimensions": list(spec.dimensions),
                    "detectors": list(m.active_detectors),
                    "why": _why(spec, m, keys),
                }
            )
    return out
