"""The history ``splice watch`` keeps in Splice's state (tables of migration 4).

- ``watch_metrics``: one row per (target, spec): its fingerprint (a changed definition is
  measured anew), its SQL, and how far it has been measured and judged;
- ``watch_series``: one row per (target, metric, dimension values);
- ``watch_points``: one value per series and interval start (ISO date);
- ``watch_anomalies``: what the detectors found, one row per (series, interval, detector),
  with the reason; ``status`` and ``incident_id`` are for grouping into incidents;
- ``watch_runs``: one row per watch call.

Reads are plain queries; every write of one watch call happens inside one transaction (see
:func:`splice.watch.service.watch`), so a failed watch leaves no partial history.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
from sqlglot import exp

from splice.state.sql import Statement, placeholders, statement, where_equal

#: Anomalies that do not keep their point out of later training windows: a missing interval
#: has no point.  (A level that moved and stays is not the new normal until it is accepted,
#: see :mod:`splice.watch.levels`: from an accepted level's start on, anomalies train again.)
TRAINING_KEEPS = ("missing",)

_METRICS = statement(
    "SELECT name, fingerprint, measured_through, judged_through FROM watch_metrics WHERE target = ?"
)
_SERIES_OF_SPEC = statement(
    "SELECT series_id, metric, kind, dims FROM watch_series WHERE target = ? AND spec = ? "
    "ORDER BY series_id"
)
_SERIES_ID = statement(
    "SELECT series_id FROM watch_series WHERE target = ? AND metric = ? AND dims = ?"
)
_UPDATE_SERIES = statement(
    "UPDATE watch_series SET spec = ?, node_id = ?, kind = ? WHERE series_id = ?"
)
_NEW_SERIES = statement(
    "INSERT INTO watch_series (target, metric, spec, node_id, kind, dims, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SERIES_OF_TARGET = statement("SELECT series_id, metric, dims FROM watch_series WHERE target = ?")
_SPEC_SERIES_IDS = statement("SELECT series_id FROM watch_series WHERE target = ? AND spec = ?")


@dataclass
class MetricRow:
    name: str
    fingerprint: str
    measured_through: date | None
    judged_through: date | None


@dataclass
class SeriesRow:
    series_id: int
    metric: str
    kind: str
    dims: dict[str, str | None]
    #: the dims as stored (:func:`dims_key`'s text), when read from the state
    stored_dims: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.metric, self.stored_dims or dims_key(self.dims)


_DIMS = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dims_key(dims: dict[str, Any]) -> str:
    """The stored form of a series' dimension values.

    >>> dims_key({"currency": "EUR"}), dims_key({})
    ('{"currency":"EUR"}', '{}')
    """
    return _DIMS.encode({k: None if v is None else str(v) for k, v in dims.items()})


def dims_label(dims: dict[str, Any]) -> str:
    """How a series is named to people.

    >>> dims_label({"currency": "EUR"}), dims_label({})
    ('currency=EUR', '(all)')
    """
    return ", ".join(f"{k}={v}" for k, v in dims.items()) or "(all)"


def _day(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None


def _of_series(chunk: list[int], since: date | None) -> tuple[exp.Expr, list[Any]]:
    """The condition (and its arguments) keeping the rows of the series ``chunk`` from
    ``since`` on (all when None)."""
    cond: exp.Expr = exp.column("series_id").isin(*placeholders(len(chunk)))
    args: list[Any] = list(chunk)
    if since is not None:
        cond = exp.and_(cond, exp.column("interval_start") >= exp.Placeholder())
        args.append(since.isoformat())
    return cond, args


def metric_rows(conn: sqlite3.Connection, target: str) -> dict[str, MetricRow]:
    rows = conn.execute(_METRICS, (target,)).fetchall()
    return {r[0]: MetricRow(r[0], r[1], _day(r[2]), _day(r[3])) for r in rows}


def series_rows(conn: sqlite3.Connection, target: str, spec: str) -> list[SeriesRow]:
    rows = conn.execute(_SERIES_OF_SPEC, (target, spec)).fetchall()
    return [SeriesRow(int(r[0]), r[1], r[2], json.loads(r[3]), r[3]) for r in rows]


def points(
    conn: sqlite3.Connection, series_ids: list[int], since: date | None = None
) -> dict[int, list[tuple[date, float]]]:
    """series id -> [(interval start, value)] (oldest first), from ``since`` on."""
    out: dict[int, list[tuple[date, float]]] = defaultdict(list)
    for i in range(0, len(series_ids), 500):
        chunk = series_ids[i : i + 500]
        cond, args = _of_series(chunk, since)
        q = exp.select("series_id", "interval_start", "value").from_("watch_points").where(cond)
        q = q.order_by("series_id", "interval_start")
        for sid, start, value in conn.execute(Statement(q), args):
            if value is not None:
                out[int(sid)].append((date.fromisoformat(start), float(value)))
    return out


EPOCH = date(1970, 1, 1)


def epoch_day(d: date) -> int:
    """Days since 1970-01-01: how the watch's arrays hold an interval.

    >>> epoch_day(date(2022, 1, 8))
    19000
    """
    return (d - EPOCH).days


#: Series read per statement (each chunk's statement is built once per size: see below).
CHUNK = 500


@functools.lru_cache(maxsize=16)
def _points_query(n: int, since: bool) -> Statement:
    """The stored points of ``n`` series as (series id, day number, value), from a date on
    when ``since``: built once per shape (a next-day watch of 10,000 series reads 20 chunks,
    and building each anew cost more than reading it)."""
    cond, _args = _of_series(list(range(n)), date(1970, 1, 1) if since else None)
    day = "CAST(julianday(interval_start) - 2440587.5 AS INTEGER)"
    q = exp.select("series_id", day, "value", dialect="sqlite").from_("watch_points")
    return Statement(q.where(cond, exp.column("value").is_(exp.null()).not_()))


@functools.lru_cache(maxsize=16)
def _cells_query(n: int, since: bool) -> Statement:
    """The anomalies of ``n`` series that stay out of training windows (see
    :func:`anomaly_cells`), built once per shape."""
    cond, _args = _of_series(list(range(n)), date(1970, 1, 1) if since else None)
    kept = exp.column("detector").isin(*placeholders(len(TRAINING_KEEPS))).not_()
    q = exp.select("series_id", "interval_start", "detected_at").from_("watch_anomalies")
    return Statement(q.where(cond, kept))


@functools.lru_cache(maxsize=16)
def _faults_query(n: int) -> Statement:
    """Each of ``n`` series' latest anomaly (see :func:`open_faults`), built once per shape."""
    # the row holding each series' latest anomaly (the first written wins a tie, as SQLite's
    # bare columns beside MAX() read it: rows come newest first, so the oldest is kept)
    latest = (
        exp.select("series_id", "MAX(interval_start) AS last").from_("watch_anomalies")
        .where(exp.column("series_id").isin(*placeholders(n)), "detector != 'missing'")
        .group_by("series_id")
    )  # fmt: skip
    q = (
        exp.select("a.series_id", "a.interval_start", "json_extract(a.data, '$.since')",
                   "a.direction", dialect="sqlite")
        .from_("watch_anomalies AS a")
        .join(latest.subquery("m"), on="a.series_id = m.series_id AND a.interval_start = m.last")
        .where("a.detector != 'missing'")
        .order_by("a.anomaly_id DESC")
    )  # fmt: skip
    return Statement(q)


def point_arrays(
    conn: sqlite3.Connection, series_ids: list[int], since: date | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored points of ``series_ids`` as arrays: series id, day (days since 1970-01-01)
    and value, from ``since`` on (NaN values left out).  The day is computed by SQLite, so no
    Python object is made per point but the row tuple."""
    parts: list[np.ndarray] = []
    for i in range(0, len(series_ids), CHUNK):
        chunk = series_ids[i : i + CHUNK]
        args = [*chunk, since.isoformat()] if since is not None else list(chunk)
        rows = conn.execute(_points_query(len(chunk), since is not None), args).fetchall()
        if rows:
            parts.append(np.array(rows, dtype=float))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    arr = np.concatenate(parts)
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2]


def anomaly_cells(
    conn: sqlite3.Connection,
    series_ids: list[int],
    since: date | None = None,
    accepted: dict[int, tuple[date, float]] | None = None,
) -> set[tuple[int, date]]:
    """(series id, interval) of stored anomalies that stay out of training windows: not those
    of a series from its accepted level's start on that were found before the acceptance
    (they are its new normal; anomalies found after it are new faults).  ``accepted``: the
    series' accepted levels when the caller has read them (:func:`levels.accepted_levels`)."""
    from splice.watch.levels import accepted_levels

    if accepted is None:
        accepted = accepted_levels(conn, series_ids)
    out: set[tuple[int, date]] = set()
    for i in range(0, len(series_ids), CHUNK):
        chunk = series_ids[i : i + CHUNK]
        args = [*chunk, since.isoformat()] if since is not None else list(chunk)
        q = _cells_query(len(chunk), since is not None)
        for sid, start, found_at in conn.execute(q, [*args, *TRAINING_KEEPS]):
            day = date.fromisoformat(start)
            acc = accepted.get(int(sid))
            if acc is None or day < acc[0] or found_at > acc[1]:
                out.add((int(sid), day))
    return out


def level_starts(conn: sqlite3.Connection, series_ids: list[int]) -> dict[int, date]:
    """series id -> where its current level starts: the latest level a person accepted
    (``splice incident accept-level``, :func:`splice.watch.levels.accepted_starts`).  A level
    that moved and was not accepted is a fault, never a start."""
    from splice.watch.levels import accepted_starts

    return accepted_starts(conn, series_ids)


@dataclass
class OpenFault:
    """A series' latest anomaly and the fault it belongs to (see :func:`open_faults`)."""

    since: date  # the fault's first interval
    last: date  # the latest anomalous interval
    direction: str


def open_faults(
    conn: sqlite3.Connection,
    series_ids: list[int],
    accepted: dict[int, date] | None = None,
) -> dict[int, OpenFault]:
    """series id -> its latest anomaly's fault (``data.since``, else its own interval), for
    series whose fault was not accepted as a new level (the detectors decide whether it is
    still open: the series' latest judged point was anomalous).  ``accepted``: the series'
    level starts when the caller has read them (:func:`level_starts`)."""
    if accepted is None:
        accepted = level_starts(conn, series_ids)
    out: dict[int, OpenFault] = {}
    for i in range(0, len(series_ids), CHUNK):
        chunk = series_ids[i : i + CHUNK]
        for sid, last, since, direction in conn.execute(_faults_query(len(chunk)), chunk):
            last_d = date.fromisoformat(last)
            since_d = min(date.fromisoformat(since), last_d) if since else last_d
            acc = accepted.get(int(sid))
            if acc is not None and acc >= since_d:
                continue  # accepted: the new normal
            out[int(sid)] = OpenFault(since_d, last_d, direction)
    return out


_ANOMALY_COLUMNS = (
    "anomaly_id", "metric", "node_id", "dims", "interval_start", "detector", "direction",
    "value", "expected", "score", "reason", "data", "watch_id", "detected_at", "status",
    "incident_id",
)  # fmt: skip


def anomalies(
    conn: sqlite3.Connection, target: str, *, status: str | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Stored anomalies of ``target``, newest interval first (for incidents and listings)."""
    cond, args = where_equal(target=target, status=status or None)
    q = exp.select(*_ANOMALY_COLUMNS).from_("watch_anomalies").where(cond)
    q = q.order_by("interval_start DESC", "metric", "dims", "detector")
    if limit:
        q = q.limit(int(limit))
    cols = ["interval" if c == "interval_start" else c for c in _ANOMALY_COLUMNS]
    out = []
    for r in conn.execute(Statement(q), args):
        rec = dict(zip(cols, r, strict=True))
        rec["dims"] = json.loads(rec["dims"])
        rec["data"] = json.loads(rec["data"]) if rec["data"] else {}
        out.append(rec)
    return out


def ensure_series(
    conn: sqlite3.Connection,
    target: str,
    spec: str,
    node_id: str,
    metric: str,
    kind: str,
    dims: dict[str, Any],
    now: float,
) -> int:
    key = dims_key(dims)
    row = conn.execute(_SERIES_ID, (target, metric, key)).fetchone()
    if row:
        conn.execute(_UPDATE_SERIES, (spec, node_id, kind, row[0]))
        return int(row[0])
    cur = conn.execute(_NEW_SERIES, (target, metric, spec, node_id, kind, key, now))
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def ensure_many(
    conn: sqlite3.Connection,
    target: str,
    spec: str,
    node_id: str,
    wanted: list[tuple[str, str, dict[str, Any]]],
    now: float,
) -> list[int]:
    """:func:`ensure_series` for many series at once (``wanted``: (metric, kind, dims) each),
    in three statements whatever their number: a first watch of 10,000 series made 20,000
    round trips to a PostgreSQL state. Returns their ids, in ``wanted``'s order."""
    if not wanted:
        return []
    keys = [(metric, dims_key(dims)) for metric, _kind, dims in wanted]

    def known() -> dict[tuple[str, str], int]:
        return {(m, d): int(sid) for sid, m, d in conn.execute(_SERIES_OF_TARGET, (target,))}

    have = known()
    update = [(spec, node_id, kind, have[k])
              for k, (_m, kind, _d) in zip(keys, wanted, strict=True) if k in have]  # fmt: skip
    new = [(target, m, spec, node_id, kind, k[1])
           for k, (m, kind, _d) in zip(keys, wanted, strict=True) if k not in have]  # fmt: skip
    if update:
        conn.executemany(_UPDATE_SERIES, update)
    if new:
        seen: set[tuple[str, str]] = set()
        rows = []
        for t, m, s, n, kind, dk in new:
            if (m, dk) not in seen:
                seen.add((m, dk))
                rows.append((t, m, s, n, kind, dk, now))
        conn.executemany(_NEW_SERIES, rows)
        have = known()
    return [have[k] for k in keys]


def reset_spec(conn: sqlite3.Connection, target: str, spec: str) -> None:
    """Forget the points, windows and anomalies of ``spec`` (a backfill or a changed
    definition)."""
    ids = [r[0] for r in conn.execute(_SPEC_SERIES_IDS, (target, spec))]
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        of_chunk = exp.column("series_id").isin(*placeholders(len(chunk)))
        for table in ("watch_points", "watch_anomalies", "watch_windows"):
            conn.execute(Statement(exp.delete(table, where=of_chunk)), chunk)
