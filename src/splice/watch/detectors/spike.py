"""The ``spike`` detector (``volume_drop`` / ``volume_jump`` and ``distinct_change`` on counts):
a point far outside its series' robust, weekday-seasonal level; and, in an open fault, each
point still at the level the fault moved to."""

from __future__ import annotations

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.detectors.window import RATE_KINDS, directed, fault_median, level_window
from splice.watch.panel import Finding, day_words, fmt
from splice.watch.robust import back_transform, pct_change, sigmas


def spike(col: Column) -> list[Finding]:
    """``spike``: robust and seasonal by weekday.  The baseline is the median of the same
    weekday over the training window (``training_days``, default 8 weeks) when that explains the
    series better than the plain median; the scale is the MAD of the residuals (seasonal: the
    larger of the week-over-week changes' and the weekday residuals').  Positive series
    are judged on a log scale (a halving is the same size at 10 and at 10,000).

    Reads the level window of ``col``, for a measure not of a rate kind.  Fires on a series
    judged as a level (not a random walk) whose point moved at least ``min_value_change``
    (a value) or ``min_count_change`` (a count) relatively, is beyond ``z_spike`` robust sigmas
    (on the linear scale too) and outside every residual the window saw, and moved ``z_shift``
    sigmas from the last good point.  In an open fault it also fires on a point on the fault's
    side, ``z_fault`` sigmas from the old level and at least half way to the fault's median
    level: the fault goes on, a finding named ``level_shift`` (a level that moved and stays)
    when that detector is on.  Returns one finding per such series, named for the kind
    (:func:`~splice.watch.detectors.window.directed`: ``volume_drop``, ``volume_jump``,
    ``distinct_change``), left out when that name is switched off (``data``: sigmas, seasonal,
    since)."""
    panel, values, rows, t, hi = col.panel, col.walk.values, col.rows, col.t, col.hi
    kind, sens, dets, weekday = panel.kind, panel.sensitivity, col.walk.active, col.walk.weekday
    if kind in RATE_KINDS:
        return []
    w = col.once(level_window)
    if w is None or not w.level_rows.any():
        return []
    moved, z, rx = w.moved, w.z, w.rx
    # in a fault: a point still beyond z_shift on the fault's side is the fault going on
    goes_on = np.zeros(len(rows), dtype=bool)
    if col.in_fault:
        f_base = np.repeat(w.base[:, None], t - hi, axis=1)
        if w.med_w is not None and weekday is not None:
            f_base = np.where(w.seasonal[:, None], w.med_w[:, weekday[hi:t]], f_base)
        f_res = fault_median(w.tf(values[rows, hi:t]) - f_base)
        goes_on = (
            moved.rows
            & (w.f_dir != 0)
            & (np.sign(z) == w.f_dir)
            & (np.sign(moved.z_lin) == w.f_dir)
            & (np.abs(z) >= sens.z_fault)
            & (np.abs(rx) >= 0.5 * np.abs(np.nan_to_num(f_res, nan=np.inf)))
        )
    out: list[Finding] = []
    for i in np.flatnonzero(moved.spike | goes_on):
        name = directed(kind, z[i] > 0, "spike")
        if goes_on[i] and directed(kind, z[i] > 0, "level_shift") in dets:
            name = directed(kind, z[i] > 0, "level_shift")  # a level that moved and stays
        if name not in dets:
            continue
        x, pos = float(w.x[i]), w.pos[i]
        exp_v = back_transform(pos, w.base[i])
        words = w.words[i]
        out.append(
            Finding(
                int(rows[i]),
                t,
                name,
                "up" if z[i] > 0 else "down",
                x,
                exp_v,
                float(z[i]),
                w.still(int(rows[i]))
                + (
                    f"{fmt(x)} on {day_words(panel.days[t])}; it was {fmt(exp_v)} on every "
                    f"interval of {words}"
                    if w.scale[i] <= w.floor[i] * 1.000001 and w.rmax[i] == w.rmin[i]
                    else f"{fmt(x)} on {day_words(panel.days[t])} vs expected {fmt(exp_v)} "
                    f"({pct_change(pos, rx[i], x - (exp_v or 0.0))}), "
                    + (
                        f"{sigmas(z[i])} robust sigmas from {words}, on the fault's "
                        f"side and at least half way to its level (threshold {sens.z_fault:g})"
                        if goes_on[i]
                        else f"{sigmas(z[i])} robust sigmas, outside anything seen in "
                        f"{words} (threshold {sens.z_spike:g})"
                    )
                ),
                {
                    "sigmas": float(z[i]),
                    "seasonal": bool(w.seasonal[i]),
                    "since": panel.days[hi].isoformat(),
                },
            )
        )
    return out
