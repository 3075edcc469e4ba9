"""Slices: the rows of each value of a dimension per interval, judged value by value and as a set.

A slice measure (kind ``slice``, :mod:`splice.watch.graph_monitors`) stores the rows per value
of one dimension.  A value absent from an interval that has rows is a slice of 0 rows, not a
missing point (:func:`fill`): a booking channel that stops arriving is 0 on its first day.

- ``slice_drop``: a value's rows fall to at most half of what its own history expects (the
  median of the same weekday in the training window when it has :data:`SEASONAL_MIN_WEEKS` of
  them, else of every interval), below anything that history saw, with a Poisson chance under
  ``alpha / N`` (``N`` values judged): a slice of 85 rows that has 0 is found on its first
  day; a currency with 3 bookings a day that has none (chance 5%) is not.  Values expecting
  fewer than :data:`MIN_EXPECTED` rows are never judged alone.
- ``domain_change``: the set of values changed.  The values present on at least ``presence``
  (80%) of the same weekdays before vanish at once, which their own absence rates make
  improbable (a Poisson tail of the summed rates under ``alpha``), while values never seen in
  the window appear: a vendor sending ``eur`` for ``EUR`` changes all 30 currencies at once,
  and each is too sparse (one row a day) to be judged alone.  Many expected values vanishing
  with no new ones is a ``slice_drop`` of each.

A finding opens a fault on its value; while the value stays at most half of its level before
the fault, every interval is flagged again (the fault goes on), saying since when.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.panel import SEASONAL_MIN_WEEKS, WEEKDAYS, Finding, day_words, fmt
from splice.watch.robust import poisson_tail

#: A value expecting fewer rows than this is judged only with the others (domain_change).
MIN_EXPECTED = 5.0
#: A slice must lose at least this share of its expected rows.
MIN_DROP = 0.5
#: Values listed in a finding's data (the first ones, sorted).
MAX_LISTED = 40


def fill(values: np.ndarray, new: np.ndarray) -> None:
    """In place: a value absent from an interval where other values have rows has 0 rows, and
    every value is judged on an interval where any value is new."""
    has_rows = np.isfinite(values).any(axis=0)
    values[:, has_rows] = np.nan_to_num(values[:, has_rows], nan=0.0)
    new[:, new.any(axis=0)] = True


def lower_tail(k: float, lam: float) -> float:
    """P(X <= k) for X ~ Poisson(lam).

    >>> round(lower_tail(0, 3.0), 4), lower_tail(0, 85.0) < 1e-36
    (0.0498, True)
    """
    if lam <= 0:
        return 1.0
    k = int(math.floor(k))
    if k < 0:
        return 0.0
    return min(
        1.0, sum(math.exp(-lam + j * math.log(lam) - math.lgamma(j + 1)) for j in range(k + 1))
    )


def _value(label: str) -> str:
    return label.split("=", 1)[1] if "=" in label else label


@dataclass
class SliceWindow:
    """What both slice detectors read about ``col``'s values: each one's expected rows (the
    median of the same weekday before its fault, or of every interval), the least it had, how
    often it was absent, and whether it has the history to be judged (``ready``)."""

    x: np.ndarray  # the rows at t
    judged: np.ndarray  # a value with a point at t
    wd: int  # t's weekday (-1: none)
    lam: np.ndarray  # expected rows
    floor_seen: np.ndarray  # the least rows the same weekdays had
    weeks: np.ndarray  # same weekdays in the window
    absent: np.ndarray  # ... without rows
    since: np.ndarray  # where each value's window ends: t, or its open fault's start
    ready: np.ndarray
    in_fault: np.ndarray
    flagged: set[int] = field(default_factory=set)  # values the set judgement found


def slice_window(col: Column) -> SliceWindow | None:
    """The slice windows of ``col``'s values (None: no value has a point); a value with an
    accepted level is judged on its history from there only."""
    walk, rows, t = col.walk, col.rows, col.t
    values, bad, weekday, sens = walk.values, walk.bad, walk.weekday, col.panel.sensitivity
    fault_since, level_from = walk.faults.since, walk.level_from
    x = values[rows, t]
    judged = np.isfinite(x)
    if not judged.any():
        return None
    wd = int(weekday[t]) if weekday is not None else -1
    n = len(rows)
    lam = np.full(n, np.nan)  # expected rows
    floor_seen = np.full(n, np.nan)  # the least rows the same weekdays had
    weeks = np.zeros(n)
    absent = np.zeros(n)
    history = np.zeros(n)
    since = np.where(fault_since[rows] >= 0, fault_since[rows], t)
    for i, r in enumerate(rows):
        hi = int(since[i])
        lo = max(0, hi - sens.training, int(level_from[r]))
        win = values[r, lo:hi].copy()
        win[bad[r, lo:hi]] = np.nan
        ok = np.isfinite(win)
        history[i] = ok.sum()
        same = ok.copy()
        if weekday is not None:
            same &= weekday[lo:hi] == wd
        if same.sum() < SEASONAL_MIN_WEEKS:
            same = ok
        if same.any():
            lam[i] = float(np.median(win[same]))
            floor_seen[i] = float(np.min(win[same]))
            weeks[i] = same.sum()
            absent[i] = (win[same] <= 0).sum()
    ready = judged & (history >= sens.min_history)
    return SliceWindow(x, judged, wd, lam, floor_seen, weeks, absent, since, ready, since < t)


def domain_change(col: Column) -> list[Finding]:
    """``domain_change``: the set of values changed.  The values present on at least
    ``presence`` of the same weekdays before vanish at once, which their own absence rates make
    improbable (a Poisson tail of the summed rates under ``alpha``, at least
    ``min_joint_series`` of them), while values never seen in the window appear.  Many expected
    values vanishing with no new ones is a ``slice_drop`` of each, found here too.

    Reads the slice window of ``col`` (every value with a new point at ``col.t``).  Fires on
    each expected value that vanished in such a change, and on a value in an open fault that is
    still absent when values were replaced or it is too sparse (under :data:`MIN_EXPECTED`) to
    be judged alone.  Returns one finding per such value, ``domain_change`` (values replaced)
    or ``slice_drop`` (``data``: since, vanished, new, their counts, chance); the values it
    finds are not judged alone again (:func:`slice_drop`)."""
    sw = col.once(slice_window)
    if sw is None:
        return []
    panel, walk, rows, t = col.panel, col.walk, col.rows, col.t
    sens, values, labels = panel.sensitivity, walk.values, panel.labels
    x, weeks, absent, since, in_fault, wd = (
        sw.x, sw.weeks, sw.absent, sw.since, sw.in_fault, sw.wd
    )  # fmt: skip
    # the set of values: expected values vanishing at once, and values never seen appearing
    expected = sw.ready & (weeks >= 2) & (weeks - absent >= sens.presence * weeks)
    vanished = expected & (x <= 0)
    # new: no rows in the window before the values vanished (before their fault, if it goes on)
    ref = int(since[vanished].min()) if vanished.any() else t
    seen_before = np.zeros(len(rows), dtype=bool)
    for i, r in enumerate(rows):
        seen_before[i] = bool((values[r, max(0, ref - sens.training) : ref] > 0).any())
    new_vals = sw.judged & (x > 0) & ~seen_before
    rate = (absent + 0.5) / (weeks + 1.0)
    lam_v = float(rate[expected & ~in_fault].sum())
    fresh = vanished & ~in_fault
    chance = poisson_tail(int(fresh.sum()), lam_v) if fresh.any() else 1.0
    joint = fresh.sum() >= sens.min_joint_series and chance < sens.alpha
    lost = sorted(_value(labels[int(r)]) for r in rows[vanished])
    gained = sorted(_value(labels[int(r)]) for r in rows[new_vals])
    replaced = bool(gained)
    # a fault of the set goes on here: values replaced, or too sparse to be judged alone
    gone_on = vanished & in_fault & ((sw.lam < MIN_EXPECTED) | replaced)
    name = "domain_change" if replaced else "slice_drop"
    if name not in walk.active or not (joint or gone_on.any()):
        return []
    out: list[Finding] = []
    day = panel.days[t]
    what = f"{WEEKDAYS[wd]}s" if wd >= 0 else "intervals"
    for i in map(int, np.flatnonzero((vanished & joint) | gone_on)):
        r = int(rows[i])
        sw.flagged.add(i)
        start = panel.days[int(since[i])]
        still = (f"still absent since {day_words(start)} ({t - int(since[i]) + 1} intervals); "
                 if in_fault[i] else "")  # fmt: skip
        words = (
            f"{still}{labels[r]} has no rows on {day_words(day)}; it had rows on "
            f"{int(weeks[i] - absent[i])} of {int(weeks[i])} {what} before"
            + (
                f", and {len(lost)} of {int(expected.sum())} such values vanished at once "
                f"(chance {chance:.1g})"
                if joint
                else ""
            )
            + (
                f" while {len(gained)} values never seen before appeared "
                f"({', '.join(gained[:5])}{', ...' if len(gained) > 5 else ''})"
                if replaced
                else ""
            )
        )
        out.append(Finding(r, t, name, "down", float(x[i]), float(sw.lam[i]),
                           float(min(chance, 1.0)), words, {
                               "since": start.isoformat(),
                               "vanished": lost[:MAX_LISTED], "new": gained[:MAX_LISTED],
                               "n_vanished": len(lost), "n_new": len(gained),
                               "n_expected": int(expected.sum()), "chance": chance,
                           }))  # fmt: skip
    return out


def slice_drop(col: Column) -> list[Finding]:
    """``slice_drop``: a value's rows fall to at most half of what its own history expects,
    below anything that history saw, with a Poisson chance under ``alpha / N`` (``N`` values
    judged): a slice of 85 rows that has 0 is found on its first day; a currency with 3
    bookings a day that has none (chance 5%) is not.

    Reads the slice window of ``col``.  Fires on a value with the history to be judged,
    expecting at least :data:`MIN_EXPECTED` rows and not found by :func:`domain_change`, that
    has at most ``1 - MIN_DROP`` of them, and either is in an open fault (the fault goes on)
    or is below its least before with that chance.  Returns one ``slice_drop`` finding per
    such value (``data``: since, expected, least_before, chance)."""
    sw = col.once(slice_window)
    if sw is None:
        return []
    panel, rows, t, sens = col.panel, col.rows, col.t, col.panel.sensitivity
    x, lam, floor_seen, since, in_fault, wd = (
        sw.x, sw.lam, sw.floor_seen, sw.since, sw.in_fault, sw.wd
    )  # fmt: skip
    out: list[Finding] = []
    n_judged = max(int(sw.ready.sum()), 1)
    for i in map(int, np.flatnonzero(sw.ready & (lam >= MIN_EXPECTED))):
        if i in sw.flagged:
            continue
        low = x[i] <= (1.0 - MIN_DROP) * lam[i]
        p = lower_tail(float(x[i]), float(lam[i]))
        if not (low and (in_fault[i] or (x[i] < floor_seen[i] and p < sens.alpha / n_judged))):
            continue
        r = int(rows[i])
        start = panel.days[int(since[i])]
        still = (f"still down since {day_words(start)} ({t - int(since[i]) + 1} intervals); "
                 if in_fault[i] else "")  # fmt: skip
        words = (
            f"{still}{panel.labels[r]} has {fmt(float(x[i]))} rows on {day_words(panel.days[t])} "
            f"where {fmt(float(lam[i]))} were expected ({1 - x[i] / lam[i]:.0%} fewer; "
            f"at least {fmt(float(floor_seen[i]))} on every "
            + (f"{WEEKDAYS[wd]}" if wd >= 0 else "interval")
            + f" before; chance {p:.1g})"
        )
        out.append(Finding(r, t, "slice_drop", "down", float(x[i]), float(lam[i]), p, words,
                           {"since": start.isoformat(), "expected": float(lam[i]),
                            "least_before": float(floor_seen[i]), "chance": p}))  # fmt: skip
    return out
