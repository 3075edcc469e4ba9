"""The ``missing`` detector (freshness): an interval with no rows where the series' own
history expects some."""

from __future__ import annotations

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.panel import WEEKDAYS, Finding, day_words


def missing(col: Column) -> list[Finding]:
    """``missing``: an interval with no rows on a weekday that has had rows in at least
    ``presence`` (80%) of the weeks of the training window (a business-day series is not
    expected on a calendar holiday).

    Reads every series of the panel at ``col.t``, from ``Panel.judge_missing_from`` on (None:
    never; 0: from the panel's first new point).  Fires on a series without a point there that has ``min_history`` intervals since
    its first point and had rows on the same weekday (any interval, without weekdays) in
    ``presence`` of at least 2 weeks (``min_history`` intervals).  Returns one ``missing``
    finding per such series, ``value`` and ``expected`` None, ``score`` its presence rate."""
    panel, walk, t = col.panel, col.walk, col.t
    if panel.judge_missing_from is None or t < (panel.judge_missing_from or walk.first_new):
        return []
    values, weekday, holiday = walk.values, walk.weekday, walk.holiday
    sens = panel.sensitivity
    absent = ~np.isfinite(values[:, t])
    if not absent.any():
        return []
    lo = max(0, t - sens.training)
    win = np.isfinite(values[:, lo:t])
    seen = np.cumsum(win, axis=1) > 0  # columns after each series' first point
    if weekday is not None:
        wd_win = weekday[lo:t]
        same = wd_win == weekday[t]
        weeks = (seen & same[None, :]).sum(axis=1)
        present = (win & same[None, :]).sum(axis=1)
        weekend = wd_win >= 5
        weekend_rate = (win & weekend[None, :]).sum(axis=1) / np.maximum(
            (seen & weekend[None, :]).sum(axis=1), 1
        )
        business_only = weekend_rate < 0.2
    else:
        weeks = seen.sum(axis=1)
        present = win.sum(axis=1)
        business_only = np.zeros(len(absent), dtype=bool)
    history = seen.sum(axis=1) >= sens.min_history
    min_weeks = 2 if weekday is not None else sens.min_history
    expected = history & (weeks >= min_weeks) & (present >= sens.presence * weeks)
    if holiday is not None and holiday[t]:
        expected &= ~business_only
    out = []
    day = panel.days[t]
    for r in np.flatnonzero(absent & expected):
        what = f"{WEEKDAYS[day.weekday()]}s" if weekday is not None else "intervals"
        out.append(
            Finding(
                int(r),
                t,
                "missing",
                "missing",
                None,
                None,
                float(present[r]) / max(float(weeks[r]), 1.0),
                f"no rows for {day_words(day)}; {what} had rows in {int(present[r])} of "
                f"{int(weeks[r])} intervals of {panel.days[lo].isoformat()}.."
                f"{panel.days[t - 1].isoformat()}",
                {},
            )
        )
    return out
