"""What the detectors judge and what they find: a metric's series as a panel (one row per
series, one column per interval), the sensitivity thresholds, and a finding with its reason."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np

from splice.watch.calendars import Calendar, publishing_calendar

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
RANDOM_WALK_RATIO = 1.4
SEASONAL_MIN_WEEKS = 4  # points per weekday before a weekday baseline is trusted


@dataclass(frozen=True)
class Sensitivity:
    """Thresholds of the detectors.

    >>> SENSITIVITY["medium"].z_spike, SENSITIVITY["high"].alpha
    (6.0, 0.01)
    """

    name: str
    z_spike: float
    z_shift: float
    z_jump: float
    alpha: float
    shift_run: int = 3
    min_history: int = 28  # points before level detectors judge (4 weeks of a daily series)
    training: int = 56  # intervals
    min_null_delta: float = 0.001
    # a value series (not a count) must also move this much, relatively, to be a spike or a
    # level shift, and a random walk this much to be a jump: a pegged currency's 0.4% is
    # hundreds of its own sigmas, and a market's real 3.5% day is not a data error
    min_value_change: float = 0.02
    # a count (rows, distinct values) must move this much, relatively: a table of 30 currencies
    # with one currency's day empty (29 rows) is Poisson noise of a small market, not a fault
    min_count_change: float = 0.05
    min_jump: float = 0.10
    # a point of a series in an open fault goes on with the fault when it is on the fault's side,
    # at least half way from the old level to the fault's (median) level, and this many sigmas
    # from the old level
    z_fault: float = 2.0
    min_joint_series: int = 3  # stopped_moving across series: at least this many at once
    # a series whose precision makes an honest repeat this likely (EUR/USD to 4 decimals: ~1%)
    # explains the cross rates derived from it repeating with it: such a joint repeat is
    # flagged only when it is broad (at least half of the eligible series)
    joint_anchor: float = 0.002
    presence: float = 0.8


SENSITIVITY: dict[str, Sensitivity] = {
    "low": Sensitivity("low", z_spike=8.0, z_shift=5.0, z_jump=24.0, alpha=1e-4),
    "medium": Sensitivity("medium", z_spike=6.0, z_shift=4.0, z_jump=16.0, alpha=1e-3),
    "high": Sensitivity("high", z_spike=4.5, z_shift=3.0, z_jump=10.0, alpha=1e-2),
}


def sensitivity(name: str, training_days: int = 56, grain: str = "day") -> Sensitivity:
    """The preset ``name`` with the training window in intervals of ``grain``."""
    base = SENSITIVITY[name]
    per = {"day": 1, "week": 7, "month": 30, "quarter": 91, "year": 365}[grain]
    return replace(
        base,
        training=max(8, training_days // per),
        min_history=base.min_history if grain == "day" else 8,
    )


@dataclass
class Finding:
    """One anomalous cell of a panel."""

    row: int
    col: int
    detector: str
    direction: str  # up, down, flat, missing
    value: float | None
    expected: float | None
    score: float  # robust sigmas, or the chance of the observation (stopped_moving)
    reason: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Panel:
    """Every series of one measure on one grid of intervals."""

    name: str
    kind: str
    days: list[date]  # the grid: consecutive intervals of ``grain``
    values: np.ndarray  # [S, T] float, NaN = no point
    new: np.ndarray  # [S, T] bool: points to judge
    prior: np.ndarray | None = None  # [S, T] bool: anomalies found by earlier watches
    labels: list[str] = field(default_factory=list)  # one per series, e.g. "currency=EUR"
    detectors: tuple[str, ...] = ()
    sensitivity: Sensitivity = SENSITIVITY["medium"]
    calendar: Calendar = field(default_factory=lambda: publishing_calendar(None))
    grain: str = "day"
    judge_missing_from: int | None = None  # first column whose missing cells are judged
    # per series, the column its accepted level starts at (splice.watch.levels, -1: none):
    # training never reaches back before it
    level_from: np.ndarray | None = None
    # per series, the column of the first interval of a fault an earlier watch found and that
    # was still open at its last point (-1: none), and its direction (+1 up, -1 down, 0 flat)
    fault_since: np.ndarray | None = None
    fault_direction: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        s, t = self.values.shape
        return int(s), int(t)


@contextmanager
def quiet() -> Iterator[None]:
    """numpy's warnings off (an all-NaN window's median is NaN, and is meant to be)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def fmt(v: float | None) -> str:
    """A number for a reason: short, exact enough (:func:`splice.support.numbers.value`).

    >>> fmt(1.14030001), fmt(12345.678), fmt(0.0), fmt(None)
    ('1.1403', '12,345.7', '0', '-')
    """
    from splice.support.numbers import value

    return value(v)


def day_words(d: date) -> str:
    """A day in a reason, with its weekday.

    >>> day_words(date(2026, 9, 28))
    'Mon 2026-09-28'
    """
    return f"{WEEKDAYS[d.weekday()]} {d.isoformat()}"
