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

import numpy as np

from splice.watch.panel import SEASONAL_MIN_WEEKS, WEEKDAYS, Finding, Panel, _day, fmt
from splice.watch.robust import poisson_tail

SLICE_DETECTORS = frozenset({"slice_drop", "domain_change"})
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


def judge(panel: Panel, values: np.ndarray, bad: np.ndarray, t: int, rows: np.ndarray,
          weekday: np.ndarray | None, fault_since: np.ndarray,
          level_from: np.ndarray) -> list[Finding]:  # fmt: skip
    """The slice findings of column ``t`` for the values ``rows`` (see the module doc); a value
    with an accepted level (``level_from``) is judged on its history from there only."""
    sens = panel.sensitivity
    dets = set(panel.detectors)
    x = values[rows, t]
    judged = np.isfinite(x)
    if not judged.any():
        return []
    wd = int(weekday[t]) if weekday is not None else -1
    n = len(rows)
    lam = np.full(n, np.nan)  # expected rows
    floor_seen = np.full(n, np.nan)  # the least rows the same weekdays had
    weeks = np.zeros(n)
    absent = np.zeros(n)
    history = np.zeros(n)
    seen_before = np.zeros(n, dtype=bool)
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
    in_fault = since < t
    out: list[Finding] = []
    flagged: set[int] = set()

    # the set of values: expected values vanishing at once, and values never seen appearing
    expected = ready & (weeks >= 2) & (weeks - absent >= sens.presence * weeks)
    vanished = expected & (x <= 0)
    # new: no rows in the window before the values vanished (before their fault, if it goes on)
    ref = int(since[vanished].min()) if vanished.any() else t
    for i, r in enumerate(rows):
        seen_before[i] = bool((values[r, max(0, ref - sens.training) : ref] > 0).any())
    new_vals = judged & (x > 0) & ~seen_before
    rate = (absent + 0.5) / (weeks + 1.0)
    lam_v = float(rate[expected & ~in_fault].sum())
    fresh = vanished & ~in_fault
    chance = poisson_tail(int(fresh.sum()), lam_v) if fresh.any() else 1.0
    joint = fresh.sum() >= sens.min_joint_series and chance < sens.alpha
    labels = panel.labels
    lost = sorted(_value(labels[int(r)]) for r in rows[vanished])
    gained = sorted(_value(labels[int(r)]) for r in rows[new_vals])
    replaced = bool(gained)
    # a fault of the set goes on here: values replaced, or too sparse to be judged alone
    gone_on = vanished & in_fault & ((lam < MIN_EXPECTED) | replaced)
    name = "domain_change" if replaced else "slice_drop"
    if name in dets and (joint or gone_on.any()):
        day = panel.days[t]
        what = f"{WEEKDAYS[wd]}s" if wd >= 0 else "intervals"
        for i in map(int, np.flatnonzero((vanished & joint) | gone_on)):
            r = int(rows[i])
            flagged.add(i)
            start = panel.days[int(since[i])]
            still = (f"still absent since {_day(start)} ({t - int(since[i]) + 1} intervals); "
                     if in_fault[i] else "")  # fmt: skip
            words = (
                f"{still}{labels[r]} has no rows on {_day(day)}; it had rows on "
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
            out.append(Finding(r, t, name, "down", float(x[i]), float(lam[i]),
                               float(min(chance, 1.0)), words, {
                                   "since": start.isoformat(),
                                   "vanished": lost[:MAX_LISTED], "new": gained[:MAX_LISTED],
                                   "n_vanished": len(lost), "n_new": len(gained),
                                   "n_expected": int(expected.sum()), "chance": chance,
                               }))  # fmt: skip

    # each value on its own: a slice that loses most of its rows
    if "slice_drop" not in dets:
        return out
    n_judged = max(int(ready.sum()), 1)
    for i in map(int, np.flatnonzero(ready & (lam >= MIN_EXPECTED))):
        if i in flagged:
            continue
        low = x[i] <= (1.0 - MIN_DROP) * lam[i]
        p = lower_tail(float(x[i]), float(lam[i]))
        if not (low and (in_fault[i] or (x[i] < floor_seen[i] and p < sens.alpha / n_judged))):
            continue
        r = int(rows[i])
        start = panel.days[int(since[i])]
        still = (f"still down since {_day(start)} ({t - int(since[i]) + 1} intervals); "
                 if in_fault[i] else "")  # fmt: skip
        words = (
            f"{still}{labels[r]} has {fmt(float(x[i]))} rows on {_day(panel.days[t])} where "
            f"{fmt(float(lam[i]))} were expected ({1 - x[i] / lam[i]:.0%} fewer; "
            f"at least {fmt(float(floor_seen[i]))} on every "
            + (f"{WEEKDAYS[wd]}" if wd >= 0 else "interval")
            + f" before; chance {p:.1g})"
        )
        out.append(Finding(r, t, "slice_drop", "down", float(x[i]), float(lam[i]), p, words,
                           {"since": start.isoformat(), "expected": float(lam[i]),
                            "least_before": float(floor_seen[i]), "chance": p}))  # fmt: skip
    return out
