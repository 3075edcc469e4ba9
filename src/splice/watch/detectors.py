"""Detectors: each judges a new point against its own series' history, and says why.

The unit of work is a :class:`Panel`: every series of one measure (one row per dimension
value) on one grid of intervals (``values[S, T]``, NaN where a series has no point).  :func:`detect`
walks the grid forward; at each interval it judges the cells that are new (``new[S, T]``) with
numpy over all series at once, and a point found anomalous is kept out of every later training
window (as are anomalies stored by earlier watches, ``prior[S, T]``).

A fault that lasts is not the new normal.  A finding opens a fault on its series at the
fault's first interval (``data["since"]``: a level shift's run start, a stopped series' first
repeat, else the flagged interval); while it is open, the series is judged against the
training window that ends where the fault began (however long ago: a fault that outlasts the
window is still judged against the last good points before it), and every interval still at
the shifted level is flagged again, saying "still at the level it moved to on DAY (N
intervals); not accepted as the new normal" (spike, jump, level shift, volume, distinct and
lag alike; ``stopped_moving`` flags every repeat of a flagged run).  A point "still at the
shifted level" is on the fault's side, at least half way from the old level to the fault's
median level, and ``z_fault`` (2) robust sigmas from the old level.  The fault closes at the
first good point.  Only an accepted level (``splice incident accept-level``,
:mod:`splice.watch.levels`, given as ``Panel.level_from``) moves the baseline: from its start
on the series is judged against itself.  Faults left open by an earlier watch come in as
``Panel.fault_since`` / ``fault_direction`` (see :func:`splice.watch.history.open_faults`).

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
  Monday is flagged on its first day.

  A series is flagged on its *first* repeat when its own history says repeats are
  rare: it changed on at least 95% of at least 20 comparable days, no *anchor* repeats with it
  (a series whose precision makes honest repeats likely, below), and its precision makes an
  honest repeat rarer
  than ``alpha / N``: the chance is ``q / (sqrt(2 pi) s)``, a move of its usual size ``s``
  rounding to nothing at its quantum ``q`` (the decimals its values are given to; a full-
  precision float has none).  The rule comes from the real ECB rates (USD per unit, 2023-2025,
  766 business days): EUR/USD, published to 4 decimals, repeats on 1% of days (7 times; the
  quantum predicts 0.9%), so its first repeat is not enough; every other currency is a full-
  precision cross rate that repeated only on a day EUR/USD repeated too (CNY, DKK, INR, MYR,
  ISK: 1-2 times each, always with EUR), so a cross rate repeating without EUR is a frozen
  feed.  So a repeat that includes an anchor (an honest-repeat chance of at least
  ``joint_anchor``, 0.2%: EUR/USD) is explained by it when it is narrow (fewer than half of the
  series): on US Labor Day 2026 EUR, CHF and ISK all repeated, honestly.  Once a run is
  flagged, each further repeat of it is flagged too; the run's own repeats never count as the
  series' history (an unflagged first repeat would make the second look ordinary).
- ``spike`` / ``level_shift`` (and ``volume_drop`` / ``volume_jump``, ``distinct_change``):
  robust and seasonal by weekday.  The baseline is the median of the same weekday over the
  training window (``training_days``, default 8 weeks) when that explains the series better
  than the plain median; the scale is the MAD of the residuals.  Positive series are judged on
  a log scale (a halving is the same size at 10 and at 10,000).  A spike is beyond
  ``z_spike`` robust sigmas *and* outside every residual the training window saw; a level
  shift is ``shift_run`` (3) points in a row beyond ``z_shift`` sigmas on the same side, and
  outside the training range (or ``shift_run + 1`` points on the same side beyond
  ``z_shift / 2`` with ``shift_run`` of them beyond ``z_shift``), flagged on the point that
  completes the run; from then on it is a fault (below).
- ``jump``: for series that behave like a random walk (FX rates: day-to-day changes are much
  smaller than the spread of the level), the change since the last good point is judged
  against the series' own changes instead (an inverted rate moves 60 sigmas in one day).
- ``null_rate_rise`` / ``duplicates``: the rate (count) rises above anything the training
  window saw, by ``z_spike`` sigmas.
- ``slice_drop`` / ``domain_change`` (rows per value of a dimension): see
  :mod:`splice.watch.slices`; ``coverage_drop``: the share of a join's rows that find a partner
  falls below anything the training window saw (as ``null_rate_rise``, mirrored).
- ``missing`` (freshness): an interval with no rows on a weekday that has had rows in at
  least 80% of the weeks of the training window (a business-day series is not expected on a
  calendar holiday).

The training window ends before the detection period (the last ``shift_run`` points are kept
out of it too: a level shift's run may be one point longer when one day of it is noisy).  Sensitivity presets (``low``, ``medium``, ``high``) set the thresholds.
"""

from __future__ import annotations

import math
from datetime import date

import numpy as np

from splice.watch.level import _level
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
from splice.watch.slices import SLICE_DETECTORS
from splice.watch.slices import judge as judge_slices

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
    fault = _open_faults(panel, values, new, bad, level_from)
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
                    # a series in an open fault is judged against its level before the fault
                    hi = np.where(fault.since[rest] >= 0, fault.since[rest], t)
                    for h in np.unique(hi):
                        part = rest[hi == h]
                        found_t += _level(
                            panel, values, bad, t, part, weekday, level_from,
                            hi=int(h), fault_dir=fault.direction[part],
                        )  # fmt: skip
                if rows.size and dets & SLICE_DETECTORS:
                    found_t += judge_slices(
                        panel, values, bad, t, rows, weekday, fault.since, level_from
                    )
                if judge_missing and t >= (panel.judge_missing_from or 0):
                    found_t += _missing(panel, values, t, weekday, holiday)
            for f in found_t:
                if f.detector != "missing":
                    fault.open(f, values, bad, panel)
            fault.close_good(values, bad, t)
            if moving is not None:
                _update_moving(moving, values, bad, t, weekday, holiday)
            findings += found_t
    return findings


class _Faults:
    """Per series, the open fault: the column its first bad interval is at (-1: none) and its
    direction (+1 up, -1 down, 0 flat or unknown).  A fault stays open until a good point."""

    def __init__(self, s: int) -> None:
        self.since = np.full(s, -1)
        self.direction = np.zeros(s, dtype=int)

    def open(self, f: Finding, values: np.ndarray, bad: np.ndarray, panel: Panel) -> None:
        r, t = f.row, f.col
        if self.since[r] < 0:
            since = f.data.get("since")
            col = panel.days.index(date.fromisoformat(since)) if since else t
            self.since[r] = min(col, t)
            self.direction[r] = {"up": 1, "down": -1}.get(f.direction, 0)
        s = int(self.since[r])
        seg = np.isfinite(values[r, s : t + 1])
        bad[r, s : t + 1] |= seg  # the whole fault stays out of training, not only flagged cells
        f.data["since"] = panel.days[s].isoformat()
        f.data["intervals"] = int(seg.sum())

    def close_good(self, values: np.ndarray, bad: np.ndarray, t: int) -> None:
        rows = np.flatnonzero(self.since >= 0)
        if not rows.size:
            return
        good = np.zeros(len(self.since), dtype=bool)
        good[rows] = np.isfinite(values[rows, t]) & ~bad[rows, t] & (self.since[rows] <= t)
        self.since[good] = -1
        self.direction[good] = 0


def _open_faults(
    panel: Panel, values: np.ndarray, new: np.ndarray, bad: np.ndarray, level_from: np.ndarray
) -> _Faults:
    """The faults earlier watches left open: a series whose latest point before its new ones
    was anomalous, with the fault's first interval (``panel.fault_since``) after any accepted
    level.  The fault's points between are kept out of training."""
    s_count, t_count = values.shape
    out = _Faults(s_count)
    if panel.fault_since is None:
        return out
    fs = np.asarray(panel.fault_since)
    fd = (
        np.zeros(s_count, dtype=int)
        if panel.fault_direction is None
        else np.asarray(panel.fault_direction)
    )
    present = np.isfinite(values)
    for r in np.flatnonzero((fs >= 0) & (fs > level_from)):
        first = int(np.argmax(new[r])) if new[r].any() else t_count
        cols = np.flatnonzero(present[r, :first])
        if not cols.size or not bad[r, cols[-1]] or cols[-1] < fs[r]:
            continue  # the last judged point was good: the fault ended
        out.since[r] = int(fs[r])
        out.direction[r] = int(fd[r])
        bad[r, int(fs[r]) : first] |= present[r, int(fs[r]) : first]
    return out


_LEVEL_DETECTORS = {
    "spike",
    "level_shift",
    "jump",
    "volume_drop",
    "volume_jump",
    "distinct_change",
    "null_rate_rise",
    "duplicates",
    "coverage_drop",
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
    k = st.streak[rows] + 1
    # the repeats of the run being judged are not history: an unflagged first repeat must not
    # make the second look ordinary
    tot_rep = np.maximum(tot_rep - st.streak[rows], 0)
    tot_n = np.maximum(tot_n - st.streak[rows], 0)
    p = (tot_rep + 0.5) / (tot_n + 1.0)
    n_elig = int(eligible.sum())
    k_same = int(same.sum())
    # the chance of an honest repeat that each repeating series' precision allows (see the
    # module docstring): a coarse one (a rate given to 4 decimals) repeats now and then, and the
    # cross rates derived from it can repeat with it: it "anchors" their repeats
    p_quant = np.ones(len(rows))
    for i in np.flatnonzero(same):
        p_quant[i] = _repeat_chance(values[int(rows[i]), max(0, t - sens.training) : t])
    anchored = bool((p_quant[same] >= sens.joint_anchor).any())
    # a series that changed on FIRST_REPEAT_CHANGED of its comparable days, repeating alone or
    # with others but no anchor: judged by what its precision allows
    rare = (
        same
        & ((k_same == 1) | (not anchored))
        & (tot_n >= FIRST_REPEAT_MIN)
        & (tot_n - tot_rep >= FIRST_REPEAT_CHANGED * tot_n)
    )
    p_eff = np.where(rare, np.minimum(p, p_quant), p)
    # a repeat that goes on repeating a flagged one is the same fault: flagged again
    goes_on = (st.streak[rows] > 0) & (st.skipped[rows] > 0)
    single = same & ((p_eff**k < sens.alpha / n_elig) | goes_on)
    lam = float(p[eligible].sum())
    # series that repeat together are not independent (a currency pegged to the euro repeats
    # with the euro): the joint test needs a few of them, and a narrow joint repeat with an
    # anchor among them is explained by it (a broad one, or one without an anchor, is not)
    joint = poisson_tail(k_same, lam) if k_same >= sens.min_joint_series else 1.0
    if anchored and 2 * k_same < n_elig:
        joint = 1.0
    flag = single | (same & (joint < sens.alpha))
    out: list[Finding] = []
    day = panel.days[t]
    for i in np.flatnonzero(flag):
        r = int(rows[i])
        last_day = panel.days[int(st.last_col[r])]
        since = panel.days[int(st.streak_col[r])] if k[i] > 1 else day
        chance = float(p_eff[i] ** k[i])
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
        elif p_eff[i] < p[i]:
            words += (
                f"; it repeated alone, and at its precision against its usual move a repeat "
                f"has chance {p_quant[i]:.1g} (a repeat run {chance:.1g})"
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


#: A series alone is judged on its first repeat when it changed on at least this share of at
#: least FIRST_REPEAT_MIN comparable days (see the module docstring).
FIRST_REPEAT_CHANGED = 0.95
FIRST_REPEAT_MIN = 20


def _repeat_chance(win: np.ndarray) -> float:
    """The chance that a series repeats its value honestly: its values' precision (the
    quantum ``q``: 0.0001 for a rate given to 4 decimals, 1 for a count, 0 for a full-precision
    float) against its usual move ``s`` (robust sigma of its interval-to-interval changes):
    ``q / (sqrt(2 pi) s)``, the chance a move of that size rounds to nothing.

    >>> eur = 1.10 + 0.0045 * np.cumsum(np.tile([1.0, -0.6, 0.3, -0.8], 10))
    >>> round(_repeat_chance(np.round(eur, 4)), 3)  # EUR/USD to 4 decimals: about 1 in 100
    0.01
    >>> _repeat_chance(eur / 7.46)  # a cross rate at full precision: never by chance
    0.0
    """
    v = win[np.isfinite(win)]
    if v.size < 3:
        return 1.0
    d = np.abs(np.diff(v))
    sigma = 1.4826 * float(np.median(d))
    if sigma <= 0:
        return 1.0
    top = float(np.max(np.abs(v)))
    q = 0.0
    for k in range(16):
        if top * 10.0**k > 1e12:
            break
        scaled = v * 10.0**k
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-3):
            q = 10.0**-k
            break
    return min(1.0, q / (math.sqrt(2 * math.pi) * sigma))


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
