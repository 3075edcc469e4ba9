"""The ``jump`` detector: a random walk's move since its last good point, judged against the
series' own moves."""

from __future__ import annotations

import math

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.detectors.window import fault_median, level_window
from splice.watch.panel import Finding, day_words, fmt
from splice.watch.robust import pct_change, sigmas


def jump(col: Column) -> list[Finding]:
    """``jump``: the series that behave like a random walk (FX rates: day-to-day changes much
    smaller than the spread of the level; ``LevelWindow.integrated``) are judged on the change
    since their last good point, against their own interval-to-interval changes (an inverted
    rate moves 60 sigmas in one day), instead of on their level.

    Reads the level window of ``col`` (:func:`~splice.watch.detectors.window.level_window`).
    Fires on a random walk whose move is at least ``z_jump`` sigmas of its moves (over the
    intervals since the last good point), larger than any move its window saw, and, for a value,
    at least ``min_jump`` relatively.  In an open fault, a move still ``z_fault`` sigmas on the
    fault's side and at least half way to the fault's level is the fault going on: flagged too.
    Returns one ``jump`` finding per such series (``data``: sigmas, since, last_good).  With
    ``jump`` switched off, no series is a random walk: the level detectors judge them all.
    """
    w = col.once(level_window)
    if w is None:
        return []
    panel, values, rows, t, hi = col.panel, col.walk.values, col.rows, col.t, col.hi
    sens, in_fault = panel.sensitivity, col.in_fault
    pos, tx, x, ref1, floor, change = w.pos, w.tx, w.x, w.ref1, w.floor, w.change
    delta = tx - ref1 - w.med_d
    rel = np.abs(np.where(pos, tx - ref1, (x - ref1) / np.maximum(np.abs(ref1), floor)))
    # in a fault, a move still beyond z_shift on the fault's side is the fault going on
    off = fault_median(w.tf(values[rows, hi:t]) - ref1[:, None]) if in_fault else ref1 * 0
    goes_on = (
        (w.f_dir != 0)
        & (np.sign(change) == w.f_dir)
        & (np.abs(change) >= sens.z_fault)
        & (np.abs(tx - ref1) >= 0.5 * np.abs(np.nan_to_num(off, nan=np.inf)))
    )
    found = (
        w.integrated
        & w.ok
        & np.isfinite(ref1)
        & ((np.abs(change) >= sens.z_jump) | goes_on)
        & (np.abs(delta) > w.max_d * np.sqrt(w.gap))
        & (rel >= math.log1p(sens.min_jump) if panel.kind == "value" else True)
    )
    out: list[Finding] = []
    for i in np.flatnonzero(found):
        r = int(rows[i])
        lv = float(math.exp(ref1[i]) if pos[i] else ref1[i])
        last_day = panel.days[w.lo + int(w.ref1_col[i])]
        typical = lv * math.expm1(w.scale_d[i]) if pos[i] else w.scale_d[i]
        threshold = sens.z_fault if goes_on[i] else sens.z_jump
        gap = w.gap[i]
        out.append(
            Finding(
                r,
                t,
                "jump",
                "up" if change[i] > 0 else "down",
                float(x[i]),
                lv,
                float(change[i]),
                w.still(r) + f"{fmt(float(x[i]))} on {day_words(panel.days[t])} after {fmt(lv)} on "
                f"{day_words(last_day)}: a move of {pct_change(pos[i], tx[i] - ref1[i], float(x[i]) - lv)}"
                f", {sigmas(change[i])} robust sigmas of its own interval-to-interval moves "
                + (f"over {int(gap)} intervals " if gap > 1 else "")
                + f"(typically {fmt(abs(typical))}; threshold {threshold:g})",
                {
                    "sigmas": float(change[i]),
                    "since": panel.days[hi if in_fault else t].isoformat(),
                    "last_good": last_day.isoformat(),
                },
            )
        )
    return out
