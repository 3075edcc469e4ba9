"""The ``level_shift`` detector (``volume_drop`` / ``volume_jump`` and ``distinct_change`` on
counts): a run of points beyond the threshold on one side, a level that moved."""

from __future__ import annotations

import math

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.detectors.window import RATE_KINDS, LevelWindow, directed, level_window
from splice.watch.panel import Finding, day_words, fmt
from splice.watch.robust import back_transform, pct_change


def level_shift(col: Column) -> list[Finding]:
    """``level_shift``: ``shift_run`` (3) points in a row beyond ``z_shift`` robust sigmas on the
    same side and outside the training range (or ``shift_run + 1`` points on the same side beyond
    ``z_shift / 2`` with ``shift_run`` of them beyond ``z_shift``), flagged on the point that
    completes the run; from then on the series is in a fault, and each interval still at the
    shifted level is flagged by :func:`~splice.watch.detectors.spike.spike` until the new level
    is accepted.

    Reads the level window of ``col`` (series not yet in a fault), for a measure not of a rate
    kind.  Fires on a series judged as a level, not a spike, whose point (and the run before
    it) is beyond ``z_shift`` sigmas, when the point before the run is not (the run started
    there); a series that is not seasonal must also step into the run (``z_shift`` sigmas of
    its interval-to-interval moves: a random walk drifts), and a repeated value (a
    forward-filled weekend) is not a run.  Returns one finding per such series, named for the
    kind (``data``: since, the run's first interval; sigmas)."""
    panel, kind, sens = col.panel, col.panel.kind, col.panel.sensitivity
    names = {directed(kind, True, "level_shift"), directed(kind, False, "level_shift")}
    if kind in RATE_KINDS or col.in_fault or not (names & col.walk.active):
        return []
    w = col.once(level_window)
    if w is None or not w.level_rows.any() or w.run_len < 1:
        return []
    moved, z, rx, t = w.moved, w.z, w.rx, col.t
    shift_rows = moved.rows & ~moved.spike & w.outside
    shift_rows &= (np.abs(z) >= sens.z_shift) & (np.abs(moved.z_lin) >= sens.z_shift)
    out: list[Finding] = []
    for i in map(int, np.flatnonzero(shift_rows)):
        run_cols = _run(w, i)
        name = directed(kind, z[i] > 0, "level_shift")
        if run_cols is None or name not in col.walk.active:
            continue
        x, pos = float(w.x[i]), w.pos[i]
        exp_v = back_transform(pos, w.base[i])
        since = panel.days[int(run_cols[0])]
        out.append(
            Finding(
                int(col.rows[i]),
                t,
                name,
                "up" if z[i] > 0 else "down",
                x,
                exp_v,
                float(z[i]),
                f"{len(run_cols) + 1} intervals in a row since {day_words(since)} beyond "
                f"{sens.z_shift:g} robust sigmas on the same side, a level that moved (not the "
                f"new normal until accepted): {fmt(x)} on "
                f"{day_words(panel.days[t])} vs expected {fmt(exp_v)} "
                f"({pct_change(pos, rx[i], x - (exp_v or 0.0))}), from {w.words[i]}",
                {"since": since.isoformat(), "sigmas": float(z[i])},
            )
        )
    return out


def _run(w: LevelWindow, i: int) -> np.ndarray | None:
    """The columns of the run that row ``i``'s point completes (None: no run starts there)."""
    sens, values, weekday = w.panel.sensitivity, w.col.walk.values, w.col.walk.weekday
    run_len, lo, r = w.run_len, w.lo, int(w.col.rows[i])
    cols_before = np.flatnonzero(w.present_raw[i])
    if cols_before.size < run_len + 1:
        return None
    sign = np.sign(w.z[i])

    def z_at(c: int) -> tuple[float, float, float]:
        v = values[r, c]
        tv = (math.log(v) if v > 0 else -math.inf) if w.pos[i] else v
        b = w.base[i]
        if w.seasonal[i] and w.med_w is not None and weekday is not None:
            b = w.med_w[i, int(weekday[c])]
        return tv, tv - b, (tv - b) / w.scale[i]

    def strong(p: tuple[float, float, float]) -> bool:
        _, rr, zz = p
        return bool(np.isfinite(zz) and np.sign(zz) == sign and abs(zz) >= sens.z_shift
                    and (rr > w.rmax[i] or rr < w.rmin[i]))  # fmt: skip

    # the run: the last shift_run - 1 points before this one beyond z_shift on its side; or,
    # one point longer, all on its side beyond z_shift / 2 and shift_run of them beyond z_shift
    # (one noisy day does not hide a level that moved)
    run_cols = cols_before[-run_len:] + lo
    run = [z_at(int(c)) for c in run_cols]
    if not all(strong(p) for p in run):
        if cols_before.size < run_len + 2:
            return None
        run_cols = cols_before[-run_len - 1 :] + lo
        run = [z_at(int(c)) for c in run_cols]
        weak = all(
            np.isfinite(zz) and np.sign(zz) == sign and abs(zz) >= sens.z_shift / 2
            for _, _, zz in run
        )
        if not (weak and strong(run[0]) and sum(strong(p) for p in run) >= run_len):
            return None
    run_values = [values[r, int(c)] for c in run_cols] + [values[r, w.col.t]]
    if w.scale_p[i] > 0 and any(a == b for a, b in zip(run_values, run_values[1:], strict=False)):
        return None  # a repeated value (a forward-filled weekend) is one observation, not a run
    k_before = cols_before.size - len(run_cols) - 1
    if k_before < 0:
        return None
    tb, _, zb = z_at(int(cols_before[k_before] + lo))
    if np.isfinite(zb) and np.sign(zb) == sign and abs(zb) >= sens.z_shift:
        return None  # the run started earlier: already flagged
    if not w.seasonal[i]:  # a shift starts with a step, a random walk drifts
        step = (run[0][0] - tb - w.med_d[i]) / max(w.scale_d[i], w.floor[i])
        if not (np.isfinite(step) and abs(step) >= sens.z_shift) and np.isfinite(tb):
            return None
    return run_cols
