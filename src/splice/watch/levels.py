"""Accepted levels: when a series' new level becomes its normal (state table ``watch_levels``).

A level that moves and stays is not the new normal by itself: the detectors keep judging the
series against its old level, so its incident stays open and every new interval at the shifted
level is part of it.  Only a decision moves the baseline:

- a person accepts the new level (``splice incident accept-level INC``, the MCP tool, the page):
  ``how = "accepted"``;
- a verified repair confirms the series is back (``how = "repair"``; nothing moves then, the
  rows only record that the incident's intervals were judged afresh).

From an accepted level's ``since`` on, a series is judged against itself: the points before
``since`` leave its training window and its anomalies from ``since`` on train again.

>>> import sqlite3
>>> from splice.state.migrations import MIGRATIONS
>>> con = sqlite3.connect(":memory:")
>>> _ = con.executescript(MIGRATIONS[8][1])
>>> record_levels(con, "prod", "INC-1", {7: date(2026, 9, 28)}, accepted_by="maria",
...               how="accepted", now=1.0)
1
>>> accepted_starts(con, [7, 8])
{7: datetime.date(2026, 9, 28)}
"""

from __future__ import annotations

import functools
import sqlite3
import time
from datetime import date
from typing import Any

from sqlglot import exp

from splice.state.sql import Statement, placeholders, statement

HOWS = ("accepted", "repair")

_RECORD = statement(
    "INSERT INTO watch_levels (target, series_id, since, incident_id, how, accepted_by, "
    "principal_kind, principal_auth, principal_credential, note, accepted_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INCIDENT_LEVELS = statement(
    "SELECT l.series_id, s.metric, s.dims, l.since, l.how, l.accepted_by, l.principal_kind, "
    "l.principal_auth, l.note, l.accepted_at FROM watch_levels l "
    "JOIN watch_series s ON s.series_id = l.series_id "
    "WHERE l.incident_id = ? ORDER BY l.accepted_at, l.series_id"
)


@functools.lru_cache(maxsize=16)
def _levels_query(n: int) -> Statement:
    """The latest accepted level of ``n`` series, built once per shape (every watch reads it
    for every spec, 500 series a statement)."""
    latest = (
        exp.select("series_id", "MAX(since) AS since").from_("watch_levels")
        .where("how = 'accepted'", exp.column("series_id").isin(*placeholders(n)))
        .group_by("series_id")
    )  # fmt: skip
    q = (
        exp.select("l.series_id", "l.since", "l.accepted_at").from_("watch_levels AS l")
        .join(latest.subquery("m"), on="l.series_id = m.series_id AND l.since = m.since")
        .where("l.how = 'accepted'")
        .order_by("l.level_id DESC")
    )  # fmt: skip
    return Statement(q)


def accepted_levels(
    conn: sqlite3.Connection, series_ids: list[int]
) -> dict[int, tuple[date, float]]:
    """series id -> (start, time accepted) of its latest accepted level (series without one
    left out)."""
    out: dict[int, tuple[date, float]] = {}
    for i in range(0, len(series_ids), 500):
        chunk = series_ids[i : i + 500]
        for sid, since, at in conn.execute(_levels_query(len(chunk)), chunk):
            if since:
                out[int(sid)] = (date.fromisoformat(since), float(at))
    return out


def accepted_starts(conn: sqlite3.Connection, series_ids: list[int]) -> dict[int, date]:
    """series id -> the start of its latest accepted level (series without one left out)."""
    return {sid: since for sid, (since, _) in accepted_levels(conn, series_ids).items()}


def record_levels(
    conn: sqlite3.Connection,
    target: str,
    incident_id: str | None,
    starts: dict[int, date],
    *,
    accepted_by: str,
    how: str = "accepted",
    principal: Any = None,
    note: str | None = None,
    now: float | None = None,
) -> int:
    """Write one accepted level per series (``starts``: series id -> first interval of the new
    level); returns how many were written.  The caller holds the transaction."""
    if how not in HOWS:
        raise ValueError(f"how must be one of {HOWS}, not {how!r}")
    now = time.time() if now is None else now
    rows = [
        (
            target,
            int(sid),
            since.isoformat(),
            incident_id,
            how,
            accepted_by,
            getattr(principal, "kind", None),
            getattr(principal, "auth", None),
            getattr(principal, "credential", None),
            note,
            now,
        )
        for sid, since in sorted(starts.items())
    ]
    conn.executemany(_RECORD, rows)
    return len(rows)


def incident_levels(conn: sqlite3.Connection, incident_id: str) -> list[dict[str, Any]]:
    """The levels recorded for an incident, oldest first."""
    rows = conn.execute(_INCIDENT_LEVELS, (incident_id,)).fetchall()
    keys = ("series_id", "metric", "dims", "since", "how", "accepted_by", "kind", "auth",
            "note", "accepted_at")  # fmt: skip
    return [dict(zip(keys, r, strict=True)) for r in rows]
