"""Each daily series' recent history in one row: the window the next watch judges against.

A next-day watch of 10,000 series judges each new point against its series' last few months.
Read point by point, that is a million rows out of ``watch_points`` every day, and the read
grew with the workspace. ``watch_windows`` (migration 15) keeps, per series of a daily spec,
the values of its last ``late_days + max(HISTORY_DAYS, 2 * training_days)`` days as one
array (float64, one per day, NaN where there is no point): ten thousand rows instead.

The window is derived from ``watch_points`` and written beside them, in the same transaction,
by the only writer of points (:func:`splice.watch.service.watch`); forgetting a spec's points
forgets its windows (:func:`splice.watch.history.reset_spec`). A series whose window does not
reach back as far as a watch needs (a changed training window, a fault that lasts longer than
the window) is read from its points, as every series was before.

>>> import numpy as np
>>> from datetime import date
>>> layer = (np.array([3, 3]), np.array([19000, 19002]), np.array([1.0, 2.0]))
>>> first, blob = pack([layer], date(2022, 1, 8), date(2022, 1, 10))[0][1:]
>>> first, np.frombuffer(blob).tolist()
(19000, [1.0, nan, 2.0])
"""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np

from splice.state.sql import statement
from splice.watch.history import epoch_day

_DTYPE = np.dtype("<f8")

_STORE = statement(
    "INSERT OR REPLACE INTO watch_windows (series_id, first_day, vals, updated_at) "
    "VALUES (?, ?, ?, ?)"
)
_OF_SPEC = statement(
    "SELECT w.series_id, w.first_day, w.vals FROM watch_windows AS w "
    "JOIN watch_series AS s ON s.series_id = w.series_id WHERE s.target = ? AND s.spec = ?"
)


def read(
    conn: Any, target: str, spec: str, series_ids: list[int], since: date
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[int]]:
    """The points of ``series_ids`` from ``since`` on, as :func:`history.point_arrays` gives
    them (series id, day since 1970, value; NaN left out), read from their windows; and the
    series whose window is missing or starts after ``since`` (read those from their points)."""
    wanted = set(series_ids)
    sids: list[int] = []
    firsts: list[int] = []
    blobs: list[bytes] = []
    since_e = epoch_day(since)
    for sid, first, blob in conn.execute(_OF_SPEC, (target, spec)):
        if sid in wanted and first <= since_e:
            sids.append(int(sid))
            firsts.append(int(first))
            blobs.append(bytes(blob))
    covered = set(sids)
    uncovered = [s for s in series_ids if s not in covered]
    if not blobs:
        empty = np.zeros(0, np.int64)
        return (empty, empty.copy(), np.zeros(0)), uncovered
    vals = np.frombuffer(b"".join(blobs), dtype=_DTYPE)
    lengths = np.array([len(b) // _DTYPE.itemsize for b in blobs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    day = np.repeat(np.array(firsts, dtype=np.int64) - starts, lengths) + np.arange(vals.size)
    sid = np.repeat(np.array(sids, dtype=np.int64), lengths)
    keep = np.isfinite(vals) & (day >= since_e)
    return (sid[keep], day[keep], vals[keep].astype(float)), uncovered


def pack(
    layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]], first: date, last: date
) -> list[tuple[int, int, bytes]]:
    """(series id, first day, values) per series of ``layers``: its points (series id, day
    since 1970, value) from ``first`` to ``last`` laid on one array a day, NaN where it has
    none. A later layer's point replaces an earlier one's of the same series and day."""
    f, n = epoch_day(first), epoch_day(last) - epoch_day(first) + 1
    if n <= 0 or not layers:
        return []
    order = np.unique(np.concatenate([np.unique(sids) for sids, _d, _v in layers]))
    if not order.size:
        return []
    row_of = np.full(int(order[-1]) + 1, -1, np.int64)
    row_of[order] = np.arange(order.size)
    grid = np.full((order.size, n), np.nan)
    for sids, days, vals in layers:
        sel = (days >= f) & (days < f + n)
        grid[row_of[sids[sel]], days[sel] - f] = vals[sel]
    return [(int(s), f, grid[i].tobytes()) for i, s in enumerate(order.tolist())]


def store(conn: Any, rows: list[tuple[int, int, bytes]], now: float) -> None:
    """Write windows (:func:`pack`'s rows), replacing the series' earlier ones."""
    if rows:
        conn.executemany(_STORE, [(s, f, b, now) for s, f, b in rows])
