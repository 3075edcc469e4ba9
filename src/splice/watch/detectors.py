"""Detectors: each judges a new point against its own series' history, and says why.

The unit of work is a :class:`Panel`: every series of one measure (one row per dimension
value) on one grid of intervals (``values[S, T]``, NaN where a series has no point).  :func:`detect`
walks the grid forward; at each interval it judges the cells that are new (``new[S, T]``) with
numpy over all series at once, and a point found anomalous is kept out of every later training
window (as are anomalies stored by earlier watches, ``prior[S, T]``).

The detectors (which ones run depends on the measure's kind, see
:data:`splice.watch.metrics.KIND_DETECTORS`):

- ``stopped_moving``: the value equals the last good value, on a day the series normally
  changes.  "Normally" is learned from the series itself, per weekday (forward-filled rates
  repeat on weekends: normal), and the publishing calendar (``holidays``' ECB/TARGET calendar
  by default) makes a repeat on a holiday normal too.  The chance of the repeat is the
  series' own repeat rate on such days (``(repeats + 0.5) / (transitions + 1)``); a run of ``k``
  repeats has chance ``p**k``.  A series alone is flagged when that chance is below
  ``alpha / N`` (``N`` eligible series of the measure that interval); and when several series of
  the measure repeat on the same interval, the number that repeated is tested against the
  number expected (a Poisson tail of the summed chances): 29 currencies repeating Friday on a
  Monday is flagged on its first day, one currency's rare repeat is not.
- ``spike`` / ``level_shift`` (and ``volume_drop`` / ``volume_jump``, ``distinct_change``):
  robust and seasonal by weekday.  The baseline is the median of the same weekday over the
  training window (``training_days``, default 8 weeks) when that explains the series better
  than the plain median; the scale is the MAD of the residuals.  Positive series are judged on
  a log scale (a halving is the same size at 10 and at 10,000).  A spike is beyond
  ``z_spike`` robust sigmas *and* outside every residual the training window saw; a level
  shift is ``shift_run`` (3) points in a row beyond ``z_shift`` sigmas on the same side, and
  outside the training range, flagged once, on the point that completes the run.
- ``jump``: for series that behave like a random walk (FX rates: day-to-day changes are much
  smaller than the spread of the level), the change since the last good point is judged
  against the series' own changes instead (an inverted rate moves 60 sigmas in one day).
- ``null_rate_rise`` / ``duplicates``: the rate (count) rises above anything the training
  window saw, by ``z_spike`` sigmas.
- ``missing`` (freshness): an interval with no rows on a weekday that has had rows in at
  least 80% of the weeks of the training window (a business-day series is not expected on a
  calendar holiday).

The training window ends before the detection period (the last ``shift_run - 1`` points are
kept out of it too).  Sensitivity presets (``low``, ``medium``, ``high``) set the thresholds.
"""

from __future__ import annotations

from datetime import date

import numpy as np

from splice.watch.level import _directed, _level
from splice.watch.panel import (
    WEEKDAYS,
    Finding,
    Panel,
    Sensitivity,
    _day,
    _quiet,
    fmt,
    sensitivity,
)
from splice.watch.robust import (
    poisson_tail,
)

__all__ = ["Finding", "Panel", "Sensitivity", "detect", "fmt", "sensitivity"]


# -- the walk ---------------------------------------------------------------------------------
class _MovingState:
    """What stopped_moving needs about each series, updated point by point."""

    def __init__(self, s: int) -> None:
        self.last = np.full(s, np.nan)  # last good value
        self.last_col = np.full(s, -1)
        self.streak = np.zeros(s, dtype=int)  # points in a row equal to the last good value
        self.streak_col = np.full(s, -1)  # where the streak started
        self.skipped = np.zeros(s, dtype=int)  # bad points since the last good one
        self.n = np.zeros((s, 7), dtype=float)  # transitions landing on each weekday
        self.changed = np.zeros((s, 7), dtype=float)


def detect(panel: Panel) -> list[Finding]:
    """Judge every new cell of ``panel``; return the anomalous ones (in column order)."""
    s_count, t_count = panel.shape
    if s_count == 0 or t_count == 0:
        return []
    values = np.asarray(panel.values, dtype=float)
    new = np.asarray(panel.new, dtype=bool) & np.isfinite(values)
    prior = (
        np.zeros_like(new) if panel.prior is None else np.asarray(panel.prior, dtype=bool).copy()
    )
    bad = prior.copy()  # excluded from training: anomalies, earlier ones and found ones
    weekday = np.array([d.weekday() for d in panel.days]) if panel.grain == "day" else None
    holiday = ~panel.calendar.publishing_mask(panel.days) if panel.grain == "day" else None
    if holiday is not None and weekday is not None:
        holiday &= (
            weekday < 5
        )  # weekends are learned from the series; holidays come from the calendar
    dets = set(panel.detectors)
    findings: list[Finding] = []
    first_new = int(np.argmax(new.any(axis=0))) if new.any() else t_count
    judge_missing = "missing" in dets and panel.judge_missing_from is not None
    start = min(first_new, panel.judge_missing_from or t_count) if judge_missing else first_new
    moving = _MovingState(s_count) if "stopped_moving" in dets else None
    level_from = (
        np.full(s_count, -1) if panel.level_from is None else np.asarray(panel.level_from).copy()
    )
    with _quiet():
        for t in range(t_count):
            found_t: list[Finding] = []
            if t >= start:
                rows = np.flatnonzero(new[:, t])
                if moving is not None and rows.size:
                    found_t += _stopped_moving(panel, values, t, rows, moving, weekday, holiday)
                if rows.size and dets & _LEVEL_DETECTORS:
                    flagged = {f.row for f in found_t}
                    rest = np.array([r for r in rows if r not in flagged], dtype=int)
                    if rest.size:
                        found_t += _level(panel, values, bad, t, rest, weekday, level_from)
                if judge_missing and t >= (panel.judge_missing_from or 0):
                    found_t += _missing(panel, values, t, weekday, holiday)
            for f in found_t:
                if f.detector in _SPIKES and not f.data.get("shift"):
                    _persisting(panel, values, bad, f)
                if f.data.get("shift"):
                    level_from[f.row] = panel.days.index(date.fromisoformat(f.data["since"]))
                elif f.detector != "missing":
                    bad[f.row, t] = True
            if moving is not None:
                _update_moving(moving, values, bad, t, weekday, holiday)
            findings += found_t
    return findings


_SPIKES = ("spike", "jump", "volume_drop", "volume_jump", "distinct_change")


def _persisting(panel: Panel, values: np.ndarray, bad: np.ndarray, f: Finding) -> None:
    """A spike after ``shift_run - 1`` anomalous points in a row is a new level: report it as a
    level shift, and let the run into training so the next points are judged against it."""
    run_len = panel.sensitivity.shift_run - 1
    row = values[f.row, : f.col]
    cols = np.flatnonzero(np.isfinite(row))[-run_len:] if run_len > 0 else np.array([], int)
    if run_len < 1 or len(cols) < run_len or not bad[f.row, cols].all():
        return
    since = panel.days[int(cols[0])]
    f.detector = _directed(panel.kind, f.direction == "up", "level_shift")
    f.data.update({"since": since.isoformat(), "shift": True})
    f.reason = (
        f"{run_len + 1} intervals in a row since {_day(since)}, so a new level, judged from now "
        f"on against itself: {f.reason}"
    )
    bad[f.row, cols] = False


_LEVEL_DETECTORS = {
    "spike",
    "level_shift",
    "jump",
    "volume_drop",
    "volume_jump",
    "distinct_change",
    "null_rate_rise",
    "duplicates",
}


def _update_moving(
    st: _MovingState,
    values: np.ndarray,
    bad: np.ndarray,
    t: int,
    weekday: np.ndarray | None,
    holiday: np.ndarray | None,
) -> None:
    v = values[:, t]
    present = np.isfinite(v)
    good = present & ~bad[:, t]
    has_last = np.isfinite(st.last)
    wd = int(weekday[t]) if weekday is not None else 0
    is_holiday = bool(holiday[t]) if holiday is not None else False
    count = good & has_last & (not is_holiday)
    same = np.isclose(v, st.last, rtol=1e-12, atol=0.0)
    st.n[count, wd] += 1
    st.changed[count & ~same, wd] += 1
    # a run of repeats counts only days the series normally moves on (not a filled weekend)
    moves_today = (st.n[:, wd] >= 2) & (st.changed[:, wd] >= 0.5 * st.n[:, wd]) & (not is_holiday)
    repeat = present & same & has_last & moves_today
    st.streak_col[repeat & (st.streak == 0)] = t
    st.streak[repeat] += 1
    st.streak[good & ~same] = 0
    moved = good & ~(same & has_last)
    st.last[moved] = v[moved]
    st.last_col[moved] = t
    st.skipped[good] = 0
    st.skipped[present & bad[:, t]] += 1  # an anomalous point: the last good value stays


def _stopped_moving(
    panel: Panel,
    values: np.ndarray,
    t: int,
    rows: np.ndarray,
    st: _MovingState,
    weekday: np.ndarray | None,
    holiday: np.ndarray | None,
) -> list[Finding]:
    sens = panel.sensitivity
    if holiday is not None and holiday[t]:
        return []  # a calendar holiday: nothing is expected to move
    wd = int(weekday[t]) if weekday is not None else 0
    v = values[rows, t]
    last = st.last[rows]
    n_w = st.n[rows, wd]
    rate_w = np.where(n_w > 0, st.changed[rows, wd] / np.maximum(n_w, 1), 0.0)
    moving_w = (st.n[rows] >= 2) & (st.changed[rows] >= 0.5 * st.n[rows])  # [r, 7]
    tot_n = (st.n[rows] * moving_w).sum(axis=1)
    tot_rep = ((st.n[rows] - st.changed[rows]) * moving_w).sum(axis=1)
    eligible = (
        np.isfinite(last)
        & (n_w >= 2)
        & (rate_w >= 0.5)
        & (tot_n >= max(10, sens.min_history // 2 + 3))
    )
    if not eligible.any():
        return []
    same = np.isclose(v, last, rtol=1e-12, atol=0.0) & eligible
    if not same.any():
        return []
    p = (tot_rep + 0.5) / (tot_n + 1.0)
    k = st.streak[rows] + 1
    n_elig = int(eligible.sum())
    single = same & (p**k < sens.alpha / n_elig)
    k_same = int(same.sum())
    lam = float(p[eligible].sum())
    # series that repeat together are not independent (a currency pegged to the euro repeats
    # with the euro): the joint test needs a few of them
    joint = poisson_tail(k_same, lam) if k_same >= sens.min_joint_series else 1.0
    flag = single | (same & (joint < sens.alpha))
    out: list[Finding] = []
    day = panel.days[t]
    for i in np.flatnonzero(flag):
        r = int(rows[i])
        last_day = panel.days[int(st.last_col[r])]
        since = panel.days[int(st.streak_col[r])] if k[i] > 1 else day
        chance = float(p[i] ** k[i])
        words = (
            f"{fmt(float(v[i]))} on {_day(day)} is the same as on {_day(last_day)}"
            + (f" ({int(k[i])} intervals in a row)" if k[i] > 1 else "")
            + f"; it changed on {int(tot_n[i] - tot_rep[i])} of {int(tot_n[i])} comparable days before"
            + (
                f" ({WEEKDAYS[wd]}s: {int(st.changed[r, wd])} of {int(n_w[i])})"
                if weekday is not None
                else ""
            )
        )
        if k_same >= 2:
            words += (
                f", and {k_same} of {n_elig} series of {panel.name} did not move on this "
                f"interval where {lam:.2g} would by chance (chance {min(joint, chance):.1g})"
            )
        else:
            words += f" (chance {chance:.1g})"
        out.append(
            Finding(
                r,
                t,
                "stopped_moving",
                "flat",
                float(v[i]),
                float(last[i]),
                min(joint, chance),
                words,
                {
                    "same_as": last_day.isoformat(),
                    "since": since.isoformat(),
                    "run": int(k[i]),
                    "repeat_rate": float(p[i]),
                    "series_repeating": k_same,
                    "series_eligible": n_elig,
                },
            )
        )
    return out


def _missing(
    panel: Panel,
    values: np.ndarray,
    t: int,
    weekday: np.ndarray | None,
    holiday: np.ndarray | None,
) -> list[Finding]:
    sens = panel.sensitivity
    col = values[:, t]
    missing = ~np.isfinite(col)
    if not missing.any():
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
        business_only = np.zeros(len(col), dtype=bool)
    history = seen.sum(axis=1) >= sens.min_history
    min_weeks = 2 if weekday is not None else sens.min_history
    expected = history & (weeks >= min_weeks) & (present >= sens.presence * weeks)
    if holiday is not None and holiday[t]:
        expected &= ~business_only
    out = []
    day = panel.days[t]
    for r in np.flatnonzero(missing & expected):
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
                f"no rows for {_day(day)}; {what} had rows in {int(present[r])} of "
                f"{int(weeks[r])} intervals of {panel.days[lo].isoformat()}.."
                f"{panel.days[t - 1].isoformat()}",
                {},
            )
        )
    return out
