"""The rate detectors ``null_rate_rise``, ``duplicates`` and ``coverage_drop``: a rate (count)
beyond anything its training window saw."""

from __future__ import annotations

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.detectors.window import RATE_KINDS, level_window
from splice.watch.panel import Finding, fmt

#: The finding each rate kind gives.
RATE_DETECTORS = {"null_rate": "null_rate_rise", "duplicates": "duplicates",
                  "coverage": "coverage_drop"}  # fmt: skip


def rate_rise(col: Column) -> list[Finding]:
    """``null_rate_rise`` / ``duplicates``: the rate (count) rises above anything the training
    window saw; ``coverage_drop``: the share of a join's rows that find a partner falls below
    anything it saw (mirrored).

    Reads the level window of ``col``, for a measure of a rate kind (:data:`RATE_KINDS`; other
    kinds: nothing).  Fires on a series judged as a level whose point is beyond the window's
    extreme by more than ``min_null_delta`` (a null rate, a coverage) and ``z_spike`` robust
    sigmas from its baseline, on the rate's bad side.  Returns one finding per such series,
    named for the kind (``data``: max_before, since)."""
    kind = col.panel.kind
    name = RATE_DETECTORS.get(kind)
    if kind not in RATE_KINDS or name not in col.walk.active:
        return []
    w = col.once(level_window)
    if w is None or not w.level_rows.any():
        return []
    panel, sens, rows, t, x = col.panel, col.panel.sensitivity, col.rows, col.t, w.x
    # coverage is judged mirrored: a share that falls below anything seen
    sign = -1.0 if kind == "coverage" else 1.0
    tmax = sign * np.nanmax(sign * w.win, axis=1)
    delta_min = sens.min_null_delta if kind != "duplicates" else 0.0
    rise = w.level_rows & (sign * x > sign * tmax + delta_min) & (sign * w.z >= sens.z_spike)
    out: list[Finding] = []
    for i in np.flatnonzero(rise):
        what = (
            f"null rate {x[i]:.2%} vs at most {tmax[i]:.2%}"
            if kind == "null_rate"
            else f"{x[i]:.2%} of rows find a join partner vs at least {tmax[i]:.2%}"
            if kind == "coverage"
            else f"{fmt(float(x[i]))} duplicate rows vs at most {fmt(float(tmax[i]))}"
        )
        out.append(
            Finding(
                int(rows[i]),
                t,
                name,
                "down" if kind == "coverage" else "up",
                float(x[i]),
                float(w.base[i]),
                float(w.z[i]),
                w.still(int(rows[i])) + f"{what} on any interval of {w.words[i]}",
                {"max_before": float(tmax[i]), "since": panel.days[col.hi].isoformat()},
            )
        )
    return out
