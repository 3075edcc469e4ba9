"""The intervals of a metric's grain: the grid every series is laid on, and value coercion."""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from splice.errors import ConfigError
from splice.watch.specs import MetricSpec


# -- the grid ---------------------------------------------------------------------------------
def as_date(v: Any) -> date:
    """A date, datetime or ISO text as the date it names.

    >>> as_date("2026-09-28T10:00:00"), as_date(datetime(2026, 9, 28, 10))
    (datetime.date(2026, 9, 28), datetime.date(2026, 9, 28))
    """
    if isinstance(v, datetime):
        return v.date()
    if isinstance(v, date):
        return v
    return date.fromisoformat(str(v)[:10])


#: Months per interval of the grains counted in months.
MONTHS = {"month": 1, "quarter": 3, "year": 12}


def next_interval(d: date, grain: str) -> date:
    """The next interval's start.

    >>> next_interval(date(2026, 11, 1), "quarter"), next_interval(date(2026, 1, 1), "year")
    (datetime.date(2027, 2, 1), datetime.date(2027, 1, 1))
    """
    if grain == "day":
        return d + timedelta(days=1)
    if grain == "week":
        return d + timedelta(days=7)
    y, m = divmod(d.year * 12 + d.month - 1 + MONTHS.get(grain, 1), 12)
    return date(y, m + 1, 1)


def intervals_back(d: date, grain: str, n: int) -> date:
    if grain == "day":
        return d - timedelta(days=n)
    if grain == "week":
        return d - timedelta(days=7 * n)
    y, m = d.year, d.month - n * MONTHS.get(grain, 1)
    while m < 1:
        y, m = y - 1, m + 12
    return date(y, m, 1)


def grid(first: date, last: date, grain: str) -> list[date]:
    """Every interval start from ``first`` to ``last`` (both included).

    >>> [d.isoformat() for d in grid(date(2026, 11, 1), date(2027, 1, 1), "month")]
    ['2026-11-01', '2026-12-01', '2027-01-01']
    """
    out = []
    d = first
    while d <= last:
        out.append(d)
        d = next_interval(d, grain)
    return out


def measured_float(v: Any, spec: MetricSpec, measure: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float | Decimal):
        f = float(v)
        return f if math.isfinite(f) else None
    raise ConfigError(
        f"metric {measure!r} on {spec.node_id}: its value is not a number "
        f"(the warehouse returned {type(v).__name__} {v!r}).",
        fix="make the value a numeric aggregate, e.g. sum(x), count(*), avg(x)",
    )
