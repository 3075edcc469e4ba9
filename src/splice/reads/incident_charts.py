"""What the incident page draws for each anomalous metric: one series' history around the
incident, the band the detectors tolerate around their expected value, and the intervals the
incident found anomalous.

The band is computed the way :mod:`splice.watch.detectors.window` judges a point (same training window,
ending where the fault began for a point in a fault that goes on, anomalies kept out of it
unless a level was accepted, the detection period too, a weekday baseline when the series is
weekly-seasonal, a log scale for positive series, the residual range seen in training) with
the metric's own sensitivity. For a random walk (FX rates) it is the jump detector's: the
last good value plus its usual move, and ``z_jump`` times the spread of its interval-to-interval
moves (at least ``min_jump`` of the value). A ``stopped_moving`` point is inside the band: it is
anomalous because it did not move; the chart marks it all the same.

One series is drawn per metric: the evidence's example series (the one the diagnosis names),
or the one picked (``picks``: metric -> series label), with every series of the metric offered
to pick (the anomalous ones first); nothing is measured here. Each detector's own rule is
drawn with it: the band for the level and jump detectors, the repeated value for
``stopped_moving`` (``repeat``: the value, from the last interval it moved to the last one it
repeated), and, for a source re-serving old data, how far its payload's as-of date is behind
(:func:`lag_chart`).
"""

from __future__ import annotations

import json
import math
import warnings
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from splice.reads import state_conn
from splice.state.sql import statement
from splice.watch.grid import grid, intervals_back
from splice.watch.history import TRAINING_KEEPS, dims_label
from splice.watch.robust import last_finite, nanmad, nanmedian_rows, prev_valid

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Intervals drawn before the incident's first interval, and at most after its last.
BEFORE = 60
AFTER = 60
RANDOM_WALK_RATIO = 1.4
SEASONAL_MIN_WEEKS = 4

_SERIES_OF_METRIC = statement(
    "SELECT series_id, dims, node_id, kind FROM watch_series WHERE target = ? AND metric = ? "
    "ORDER BY dims"
)
_ANOMALOUS_SERIES = statement(
    "SELECT DISTINCT series_id FROM watch_anomalies WHERE incident_id = ?"
)
_SERIES_ANOMALIES = statement(
    "SELECT interval_start, detector, value, expected, reason, incident_id, "
    "json_extract(data, '$.since') FROM watch_anomalies WHERE series_id = ? "
    "ORDER BY interval_start, detector"
)
_ANOMALOUS_COUNT = statement(
    "SELECT COUNT(DISTINCT series_id) FROM watch_anomalies WHERE incident_id = ? AND metric = ?"
)

BAND_WORDS = {
    "level": "median of the training window +- the level detectors' tolerance",
    "weekday": "median of the same weekday +- the level detectors' tolerance",
    "random_walk": "the last good value +- the jump detector's tolerance (a random walk)",
    "rise": "up to the rise the detector tolerates above the training window",
}


def _measure_info(ws: Workspace) -> dict[str, tuple[Any, Any]]:
    """measure name -> (spec, measure), or {} when the specs cannot be read."""
    from splice.errors import SpliceError
    from splice.watch.metrics import watch_specs

    try:
        specs = watch_specs(ws)
    except SpliceError:
        return {}
    return {m.name: (s, m) for s in specs for m in s.measures}


def _bands(
    v: np.ndarray, bad: np.ndarray, ts: np.ndarray, level_from: np.ndarray,
    weekday: np.ndarray | None, sens: Any, kind: str, dets: set[str],
    his: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:  # fmt: skip
    """(expected, lower, upper, method) for the points at columns ``ts`` (NaN and None without
    a baseline: too little history), all rows at once as :func:`splice.watch.detectors.window.level_window`
    judges series.  ``his``: where each point's training window ends (before ``ts`` for a
    point in a fault: the band stays at the level before the fault)."""
    w = sens.training
    n = len(ts)
    his = ts if his is None else his
    pad = np.concatenate([np.full(w, np.nan), v])
    padb = np.concatenate([np.zeros(w, dtype=bool), bad])
    idx = his[:, None] + np.arange(w)[None, :]  # padded index of v[hi - w + j]
    raw = pad[idx]
    cols = idx - w  # the grid column of each cell (negative: before the first point)
    raw[cols < level_from[:, None]] = np.nan
    good = raw.copy()
    good[padb[idx]] = np.nan
    present = np.isfinite(raw)
    rank = np.cumsum(present[:, ::-1], axis=1)[:, ::-1]
    win = good.copy()
    win[present & (rank <= sens.shift_run) & (his == ts)[:, None]] = np.nan
    n_train = np.isfinite(win).sum(axis=1)
    ok = n_train >= sens.min_history
    linear = kind in ("null_rate", "duplicates", "lag")
    pos = (np.nanmin(np.where(np.isfinite(win), win, np.inf), axis=1) > 0) & (not linear)

    def tf(a: np.ndarray) -> np.ndarray:
        return np.where(pos[:, None], np.log(np.where(a > 0, a, np.nan)), a)

    def back(x: np.ndarray) -> np.ndarray:
        return np.where(pos, np.exp(x), x)

    tw, tg = tf(win), tf(good)
    med = nanmedian_rows(tw)
    scale_p = nanmad(tw, med)
    zero = np.zeros(n)
    d7 = tg[:, 7:] - tg[:, :-7]
    scale_7 = nanmad(d7, zero) / math.sqrt(2)
    prev = prev_valid(tw)
    prev_vals = np.take_along_axis(tw, np.maximum(prev, 0), axis=1)
    d1 = np.where((prev >= 0) & np.isfinite(tw), tw - prev_vals, np.nan)
    d1 = np.where(d1 == 0, np.nan, d1)
    med_d = nanmedian_rows(d1)
    scale_d = nanmad(d1, med_d)
    integrated = (
        ("jump" in dets)
        & (scale_d > 0)
        & ((scale_7 * math.sqrt(2) > RANDOM_WALK_RATIO * scale_d) | (scale_p > 2 * scale_d))
        & (np.isfinite(d1).sum(axis=1) >= sens.min_history - 1)
        & (np.isfinite(d7).sum(axis=1) >= 7)
    )
    # the jump detector's band, around the last good value
    ref1, ref1_col = last_finite(tg)
    skipped = present & ~np.isfinite(good)
    gap = 1.0 + (skipped & (np.arange(w)[None, :] > ref1_col[:, None])).sum(axis=1)
    present_v = np.concatenate([[0], np.cumsum(np.isfinite(v))])
    gap = gap + present_v[ts] - present_v[his]  # the fault's points since the window's end
    max_d = np.nanmax(np.abs(d1 - med_d[:, None]), axis=1)
    half_j = np.maximum(sens.z_jump * scale_d, max_d) * np.sqrt(gap)
    if kind == "value":
        half_j = np.maximum(
            half_j, np.where(pos, math.log1p(sens.min_jump), sens.min_jump * np.abs(ref1))
        )
    center_j = ref1 + med_d
    # the level detectors' band, around the median (of the same weekday when seasonal)
    base, scale, resid = med.copy(), scale_p.copy(), tw - med[:, None]
    n_base = n_train.astype(float)
    seasonal = np.zeros(n, dtype=bool)
    if weekday is not None and kind not in ("null_rate", "duplicates"):
        wd0 = int(weekday[0])
        wd = (wd0 + cols) % 7  # [n, w]
        wd_t = (wd0 + ts) % 7
        med_w = np.full((n, 7), np.nan)
        cnt_w = np.zeros((n, 7))
        for k in range(7):
            part = np.where(wd == k, tw, np.nan)
            med_w[:, k] = nanmedian_rows(part)
            cnt_w[:, k] = np.isfinite(part).sum(axis=1)
        med_w = np.where(cnt_w >= SEASONAL_MIN_WEEKS, med_w, np.nan)
        rows = np.arange(n)
        spread = np.nanmax(med_w, axis=1) - np.nanmin(med_w, axis=1)
        seasonal = (
            (np.isfinite(d7).sum(axis=1) >= 14)
            & np.isfinite(med_w[rows, wd_t])
            & ~integrated
            & (spread > 3 * scale_7)
            & ((scale_7 < 0.8 * scale_p) | (scale_7 == 0))
        )
        dof = np.sqrt(cnt_w / np.maximum(cnt_w - 1, 1))[rows[:, None], wd]
        resid_s = (tw - med_w[rows[:, None], wd]) * dof
        base = np.where(seasonal, med_w[rows, wd_t], med)
        scale = np.where(seasonal, scale_7, scale_p)
        resid = np.where(seasonal[:, None], resid_s, resid)
        n_base = np.where(seasonal, cnt_w[rows, wd_t], n_base)
    scale = scale * np.sqrt(1.0 + (math.pi / 2) / np.maximum(n_base, 1.0))
    floor = np.maximum(1e-9 * np.abs(np.nan_to_num(base)), 1e-12)
    scale = np.maximum(np.nan_to_num(scale), floor)
    rmin, rmax = np.nanmin(resid, axis=1), np.nanmax(resid, axis=1)
    up = np.maximum(rmax, sens.z_spike * scale)
    down = np.minimum(rmin, -sens.z_spike * scale)
    if kind == "value":
        rel = np.where(pos, math.log1p(sens.min_value_change),
                       sens.min_value_change * np.abs(base))  # fmt: skip
        up, down = np.maximum(up, rel), np.minimum(down, -rel)
    exp_v = np.where(integrated, back(center_j), back(base))
    lower = np.where(integrated, back(center_j - half_j), back(base + down))
    upper = np.where(integrated, back(center_j + half_j), back(base + up))
    method = np.where(integrated, "random_walk", np.where(seasonal, "weekday", "level"))
    if kind in ("null_rate", "duplicates"):
        delta = sens.min_null_delta if kind == "null_rate" else 0.0
        lower = np.zeros(n)
        upper = np.maximum(np.nanmax(win, axis=1) + delta, base + sens.z_spike * scale)
        method = np.full(n, "rise")
    fine = ok & np.isfinite(exp_v) & np.isfinite(lower) & np.isfinite(upper)
    nan = np.full(n, np.nan)
    methods = [str(m) if f else None for m, f in zip(method, fine, strict=True)]
    return (np.where(fine, exp_v, nan), np.where(fine, lower, nan), np.where(fine, upper, nan),
            methods)  # fmt: skip


def _num(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _series_for(
    conn: Any, target: str, metric: str, wanted: list[str | None]
) -> tuple[Any, list[Any]]:
    """(series row (id, dims, node, kind) drawn: the first of ``wanted`` that the metric has,
    else its first; every series row of the metric)."""
    rows = conn.execute(_SERIES_OF_METRIC, (target, metric)).fetchall()
    if not rows:
        return None, []
    labels = {dims_label(json.loads(r[1])): r for r in rows}
    for w in wanted:
        if w is not None and w in labels:
            return labels[w], rows
    return rows[0], rows


def _options(conn: Any, rows: list[Any], incident_id: str, drawn: int) -> list[dict[str, Any]]:
    """Every series of a metric to pick from: its label, whether the incident found it
    anomalous, whether it is the one drawn; the anomalous ones first."""
    hit = {int(r[0]) for r in conn.execute(_ANOMALOUS_SERIES, (incident_id,))}
    out = [{"label": dims_label(json.loads(r[1])), "anomalous": int(r[0]) in hit,
            "selected": int(r[0]) == drawn} for r in rows]  # fmt: skip
    out.sort(key=lambda o: (not o["anomalous"], o["label"]))
    return out


def repeat_rule(points: list[dict[str, Any]], anomalies: list[dict[str, Any]]) -> Any:
    """The ``stopped_moving`` detector's rule on the drawn series: the value it repeated, from
    the last interval it moved to (its first repeat's value, going back while the value is the
    same) to the last interval flagged; None without such an anomaly.

    >>> pts = [{"interval": f"2026-09-2{d}", "value": v} for d, v in
    ...        [(4, 1.0), (5, 1.2), (6, 1.2), (7, 1.2), (8, 1.2)]]
    >>> repeat_rule(pts, [{"interval": "2026-09-27", "detector": "stopped_moving"},
    ...                   {"interval": "2026-09-28", "detector": "stopped_moving"}])
    {'value': 1.2, 'from': '2026-09-25', 'to': '2026-09-28', 'intervals': 3}
    >>> repeat_rule(pts, [{"interval": "2026-09-28", "detector": "spike"}]) is None
    True
    """
    flagged = sorted(a["interval"] for a in anomalies if a["detector"] == "stopped_moving")
    at = {p["interval"]: i for i, p in enumerate(points)}
    flagged = [iv for iv in flagged if iv in at]
    if not flagged:
        return None
    first, last = at[flagged[0]], at[flagged[-1]]
    value = points[first]["value"]
    start = first
    while start > 0 and points[start - 1]["value"] == value:
        start -= 1
    return {"value": value, "from": points[start]["interval"], "to": points[last]["interval"],
            "intervals": last - start}  # fmt: skip


def _chart(
    ws: Workspace, conn: Any, info: dict[str, tuple[Any, Any]], incident_id: str,
    span: tuple[date, date], metric: str, items: list[dict[str, Any]], pick: str | None = None,
) -> dict[str, Any] | None:  # fmt: skip
    from splice.watch import history as hist
    from splice.watch.metrics import KIND_DETECTORS
    from splice.watch.panel import sensitivity

    example = next((e.get("example") for e in items if e.get("example")), None) or {}
    row, rows = _series_for(conn, ws.target, metric, [pick, example.get("series")])
    if row is None:
        return None
    total = len(rows)
    sid, dims, node, kind = int(row[0]), json.loads(row[1]), row[2], row[3]
    spec, measure = info.get(metric, (None, None))
    grain = spec.grain if spec is not None else "day"
    wcfg = ws.config.watch
    sens = sensitivity(spec.sensitivity if spec else wcfg.sensitivity, wcfg.training_days, grain)
    dets = set(measure.active_detectors if measure else KIND_DETECTORS.get(kind, ()))
    start = intervals_back(span[0], grain, BEFORE)
    end = intervals_back(span[1], grain, -AFTER) if grain != "month" else date.max
    pts = hist.points(conn, [sid], since=intervals_back(start, grain, sens.training + 7)).get(
        sid, []
    )
    if not pts:
        return None
    days = grid(pts[0][0], pts[-1][0], grain)
    col = {d: i for i, d in enumerate(days)}
    v = np.full(len(days), np.nan)
    for d, x in pts:
        if d in col:
            v[col[d]] = x
    found = conn.execute(_SERIES_ANOMALIES, (sid,)).fetchall()
    ls = hist.level_starts(conn, [sid]).get(sid)
    bad = np.zeros(len(days), dtype=bool)
    fault_hi = np.arange(len(days))  # a point in a fault: judged against the level before it
    for r in found:
        d = date.fromisoformat(r[0])
        if d in col and r[1] not in TRAINING_KEEPS and not (ls is not None and d >= ls):
            bad[col[d]] = True
            since = date.fromisoformat(r[6]) if r[6] else d
            if since in col and since < d:
                fault_hi[col[d]] = min(fault_hi[col[d]], col[since])
    weekday = np.array([d.weekday() for d in days]) if grain == "day" else None
    ts = np.array([t for t, d in enumerate(days) if start <= d <= end and np.isfinite(v[t])], int)
    lf = np.array([col.get(ls, -1) if ls is not None and ls <= days[t] else -1 for t in ts], int)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        exp_v, lower, upper, how = _bands(
            v, bad, ts, lf, weekday, sens, kind, dets, fault_hi[ts] if ts.size else ts
        )
    methods: dict[str, int] = {}
    points = []
    for i, t in enumerate(ts):
        if how[i]:
            methods[str(how[i])] = methods.get(str(how[i]), 0) + 1
        points.append({"interval": days[t].isoformat(), "value": float(v[t]),
                       "expected": _num(exp_v[i]), "lower": _num(lower[i]),
                       "upper": _num(upper[i])})  # fmt: skip
    shown = {p["interval"] for p in points}
    mine = [
        {"interval": r[0], "detector": r[1], "value": r[2], "expected": r[3], "reason": r[4]}
        for r in found
        if r[5] == incident_id and r[0] in shown
    ]
    intervals = sorted({a["interval"] for a in mine})
    # restated since (a repair): the evidence still says where it was, on the series it names
    # (a series picked instead, without anomalies of this incident, has nothing to mark)
    remeasured = not mine and (pick is None or dims_label(dims) == example.get("series"))
    if remeasured:
        intervals = sorted({iv for e in items for iv in e.get("intervals") or [] if iv in shown})
    others = sorted({r[0] for r in found if r[5] != incident_id and r[0] in shown})
    anomalous = conn.execute(_ANOMALOUS_COUNT, (incident_id, metric)).fetchone()[0]
    if not anomalous:  # measured again since (a repair): the evidence says how many were
        anomalous = max((int(e.get("series") or 0) for e in items), default=0)
    method = max(methods, key=lambda k: methods[k]) if methods else None
    return {
        "metric": metric,
        "node": node,
        "kind": kind,
        "measure": measure.label if measure else None,
        "grain": grain,
        "series": dims_label(dims),
        "series_total": total,
        "series_options": _options(conn, rows, incident_id, sid),
        "picked": pick is not None and dims_label(dims) == pick,
        "repeat": repeat_rule(points, mine),
        "series_anomalous": int(anomalous),
        "detectors": sorted({e["detector"] for e in items}),
        "evidence": items,
        "points": points,
        "anomalies": mine,
        "intervals": intervals,
        "remeasured": remeasured and bool(intervals),
        "other_intervals": others,
        "band": {
            "method": method,
            "words": BAND_WORDS.get(
                method or "", f"no baseline yet (fewer than {sens.min_history} points of history)"
            ),
            "sensitivity": sens.name,
            "z": sens.z_spike,
            "window": sens.training,
        },  # fmt: skip
    }


def incident_charts(
    ws: Workspace, incident_id: str, picks: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """One chart's data per anomalous metric of the incident (in the order of its evidence):
    ``metric``, ``node``, ``series`` (the series drawn: the evidence's example), ``series_total``
    and ``series_anomalous``, ``points`` (``interval``, ``value``, ``expected``, ``lower``,
    ``upper``; from :data:`BEFORE` intervals before the incident to the newest point, at most
    :data:`AFTER` intervals after it), ``series_options`` (every series of the metric:
    ``label``, ``anomalous``, ``selected``; ``picks`` maps a metric to the series to draw),
    ``repeat`` (the ``stopped_moving`` rule: :func:`repeat_rule`), the
    incident's ``anomalies`` on the drawn series and their ``intervals`` (``remeasured``: the
    stored anomalies are gone, the points measured again since, as after a repair; the
    intervals are then the evidence's), ``other_intervals``
    (anomalies of other incidents in the window), ``evidence`` (the diagnosis's items for the
    metric) and ``band`` (how the band was computed, in words)."""
    from splice.watch.incidents import get_incident

    conn = state_conn(ws)
    if conn is None:
        return []
    inc = get_incident(conn, incident_id)
    evidence = (inc.diagnosis or {}).get("evidence") or []
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for e in evidence:
        by_metric.setdefault(e["metric"], []).append(e)
    if not by_metric:
        return []
    info = _measure_info(ws)
    out = []
    for metric, items in by_metric.items():
        span = (inc.first_interval, inc.last_interval)
        c = _chart(ws, conn, info, inc.incident_id, span, metric, items,
                   (picks or {}).get(metric))  # fmt: skip
        if c is not None:
            out.append(c)
    return out
