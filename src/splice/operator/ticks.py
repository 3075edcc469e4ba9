"""When a schedule's cron expression fires, read in its time zone (croniter).

A tick is an instant (UTC). :func:`due` decides, from the last tick a schedule took and the
time now, which tick to run: only the latest one due, so a server that was down for three days
runs a daily schedule once when it starts, not three times, and says how many it skipped.

>>> from datetime import datetime, UTC
>>> t = latest_tick("0 6 * * *", "Europe/Amsterdam", datetime(2026, 9, 29, 7, 0, tzinfo=UTC))
>>> t.isoformat()
'2026-09-29T04:00:00+00:00'
>>> next_tick("0 6 * * *", "UTC", datetime(2026, 9, 29, 6, 0, tzinfo=UTC)).isoformat()
'2026-09-30T06:00:00+00:00'
>>> d = due("0 6 * * *", "UTC", last=datetime(2026, 9, 26, 6, 0, tzinfo=UTC),
...         now=datetime(2026, 9, 29, 7, 0, tzinfo=UTC))
>>> d.tick.isoformat(), d.skipped
('2026-09-29T06:00:00+00:00', 2)
>>> due("0 6 * * *", "UTC", last=datetime(2026, 9, 29, 6, 0, tzinfo=UTC),
...     now=datetime(2026, 9, 29, 7, 0, tzinfo=UTC)) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

#: Skipped ticks are counted up to this many (a minutely schedule down for a month).
COUNT_LIMIT = 10_000


def _iter(cron: str, zone: str, start: datetime) -> object:
    from croniter import croniter

    return croniter(cron, start.astimezone(ZoneInfo(zone)))


def next_tick(cron: str, zone: str, after: datetime) -> datetime:
    """The first tick strictly after ``after``."""
    it = _iter(cron, zone, after)
    return it.get_next(datetime).astimezone(UTC)  # type: ignore[attr-defined,no-any-return]


def latest_tick(cron: str, zone: str, now: datetime) -> datetime:
    """The last tick at or before ``now``."""
    probe = next_tick(cron, zone, now)
    it = _iter(cron, zone, probe)
    return it.get_prev(datetime).astimezone(UTC)  # type: ignore[attr-defined,no-any-return]


@dataclass(frozen=True)
class Due:
    """The tick to run now, and how many earlier ticks since the last one taken are skipped."""

    tick: datetime
    skipped: int


def due(cron: str, zone: str, *, last: datetime | None, now: datetime) -> Due | None:
    """The tick to run at ``now``, or None when the latest tick was taken already.

    ``last`` None (a schedule never seen) means nothing is due: the schedule starts with its
    next tick, it does not run for the time before it existed."""
    if last is None:
        return None
    latest = latest_tick(cron, zone, now)
    if latest <= last:
        return None
    skipped = 0
    t = next_tick(cron, zone, last)
    while t < latest and skipped < COUNT_LIMIT:
        skipped += 1
        t = next_tick(cron, zone, t)
    return Due(latest, skipped)
