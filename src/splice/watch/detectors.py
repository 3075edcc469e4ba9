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

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np

from splice.watch.calendars import Calendar, publishing_calendar

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MAD_TO_SIGMA = 1.4826
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
    min_jump: float = 0.10
    min_joint_series: int = 3  # stopped_moving across series: at least this many at once
    presence: float = 0.8


SENSITIVITY: dict[str, Sensitivity] = {
    "low": Sensitivity("low", z_spike=8.0, z_shift=5.0, z_jump=24.0, alpha=1e-4),
    "medium": Sensitivity("medium", z_spike=6.0, z_shift=4.0, z_jump=16.0, alpha=1e-3),
    "high": Sensitivity("high", z_spike=4.5, z_shift=3.0, z_jump=10.0, alpha=1e-2),
}


def sensitivity(name: str, training_days: int = 56, grain: str = "day") -> Sensitivity:
    """The preset ``name`` with the training window in intervals of ``grain``."""
    base = SENSITIVITY[name]
    per = {"day": 1, "week": 7, "month": 30}[grain]
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
    # per series, the column its current level started at (a level shift found earlier):
    # training never reaches back before it
    level_from: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        s, t = self.values.shape
        return int(s), int(t)


@contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def fmt(v: float | None) -> str:
    """A number for a reason: short, exact enough.

    >>> fmt(1.14030001), fmt(12345.678), fmt(0.0), fmt(None)
    ('1.1403', '12,345.7', '0', '-')
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.1f}"
    if a >= 1:
        return f"{v:.6g}"
    return f"{v:.4g}"


def _day(d: date) -> str:
    return f"{WEEKDAYS[d.weekday()]} {d.isoformat()}"


def poisson_tail(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam): the chance of k or more rare events expected lam times.

    >>> round(poisson_tail(1, 0.1), 4), poisson_tail(0, 3.0)
    (0.0952, 1.0)
    >>> poisson_tail(29, 0.3) < 1e-40
    True
    """
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    if k <= lam + 1:
        cdf = sum(math.exp(-lam + j * math.log(lam) - math.lgamma(j + 1)) for j in range(k))
        return max(0.0, 1.0 - cdf)
    terms = [math.exp(-lam + j * math.log(lam) - math.lgamma(j + 1)) for j in range(k, k + 60)]
    return min(1.0, sum(terms))


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


def _prev_valid(a: np.ndarray) -> np.ndarray:
    """Per row, the index of the last finite column strictly before each column (-1: none)."""
    s, w = a.shape
    idx = np.where(np.isfinite(a), np.arange(w)[None, :], -1)
    acc = np.maximum.accumulate(idx, axis=1)
    out = np.full((s, w), -1)
    out[:, 1:] = acc[:, :-1]
    return out


def nanmedian_rows(a: np.ndarray) -> np.ndarray:
    """The median of each row ignoring NaN (NaN for an empty row), over the last axis.

    numpy's nanmedian goes through masked arrays and costs ~0.5 ms a call; sorting puts the
    NaNs last, and the median is then picked by each row's count of values.

    >>> nanmedian_rows(np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, 1.0, np.nan, np.nan]]))
    array([2. , nan, 2.5])
    """
    if a.shape[-1] == 0:
        return np.full(a.shape[:-1], np.nan)
    srt = np.sort(a, axis=-1)
    n = np.isfinite(a).sum(axis=-1)
    lo = np.maximum((n - 1) // 2, 0)
    hi = np.maximum(n // 2, 0)
    v_lo = np.take_along_axis(srt, lo[..., None], axis=-1)[..., 0]
    v_hi = np.take_along_axis(srt, hi[..., None], axis=-1)[..., 0]
    return np.where(n > 0, (v_lo + v_hi) / 2.0, np.nan)


def _nanmad(a: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """Per row: 1.4826 * the median absolute deviation (from ``center``, default the median)."""
    c = nanmedian_rows(a) if center is None else center
    return MAD_TO_SIGMA * nanmedian_rows(np.abs(a - c[:, None]))


def _last_finite(a: np.ndarray, cols: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the value and column of the last finite cell (restricted to ``cols``)."""
    mask = np.isfinite(a)
    if cols is not None:
        mask &= cols[None, :]
    idx = np.where(mask, np.arange(a.shape[1])[None, :], -1).max(axis=1)
    vals = np.take_along_axis(a, np.maximum(idx, 0)[:, None], axis=1)[:, 0]
    return np.where(idx >= 0, vals, np.nan), idx


def _level(
    panel: Panel,
    values: np.ndarray,
    bad: np.ndarray,
    t: int,
    rows: np.ndarray,
    weekday: np.ndarray | None,
    level_from: np.ndarray,
) -> list[Finding]:
    sens = panel.sensitivity
    kind = panel.kind
    dets = set(panel.detectors)
    lo = max(0, t - sens.training)
    raw = values[rows, lo:t].copy()  # [r, w]
    if raw.shape[1] == 0:
        return []
    raw[np.arange(lo, t)[None, :] < level_from[rows][:, None]] = np.nan  # before a level shift
    good = raw.copy()
    good[bad[rows, lo:t]] = np.nan  # anomalies never train
    # the detection period (the last shift_run - 1 points) stays out of the training window
    present_raw = np.isfinite(raw)
    rank = np.cumsum(present_raw[:, ::-1], axis=1)[:, ::-1]  # 1 = the latest point before t
    run_len = sens.shift_run - 1
    win = good.copy()
    win[present_raw & (rank <= run_len)] = np.nan
    n_train = np.isfinite(win).sum(axis=1)
    ok = n_train >= sens.min_history
    if not ok.any():
        return []
    x = values[rows, t]
    # a repeat of the previous point (a forward-filled weekend) was judged with it
    prev_raw, prev_col = _last_finite(values[rows, lo:t])
    prev_good = (prev_col >= 0) & ~bad[rows, lo + np.maximum(prev_col, 0)]
    repeat = prev_good & (x == prev_raw) & (kind in ("value", "lag"))
    ok &= ~repeat
    if not ok.any():
        return []
    linear = kind in ("null_rate", "duplicates", "lag")
    pos = (np.nanmin(win, axis=1) > 0) & (not linear)

    def tf(a: np.ndarray) -> np.ndarray:
        p = pos.reshape((-1,) + (1,) * (a.ndim - 1))
        return np.where(p, np.log(np.where(a > 0, a, np.nan)), a)

    tw, tg = tf(win), tf(good)
    tx = np.where(pos, np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf), x)
    med = nanmedian_rows(tw)
    scale_p = _nanmad(tw, med)
    base, scale = med.copy(), scale_p.copy()
    resid = tw - med[:, None]
    seasonal = np.zeros(len(rows), dtype=bool)
    wd_t = -1
    med_w: np.ndarray | None = None
    # week-over-week changes: the noise of a weekly-seasonal series, without fitting it
    d7 = tg[:, 7:] - tg[:, :-7] if tg.shape[1] > 7 else np.full((len(rows), 1), np.nan)
    scale_7 = _nanmad(d7, np.zeros(len(rows))) / math.sqrt(2)
    # the change from the reference point: the last good point (same weekday if seasonal)
    prev = _prev_valid(tw)
    prev_vals = np.take_along_axis(tw, np.maximum(prev, 0), axis=1)
    d1 = np.where((prev >= 0) & np.isfinite(tw), tw - prev_vals, np.nan)
    # repeats (forward-filled weekends, holidays) are not moves: they would shrink the scale
    d1 = np.where(d1 == 0, np.nan, d1)
    med_d = nanmedian_rows(d1)
    scale_d = _nanmad(d1, med_d)
    # a random walk's week-over-week changes are ~sqrt(5..7) times its day-to-day ones; white
    # noise has them equal, a weekly pattern makes them smaller
    integrated = np.zeros(len(rows), dtype=bool)
    if "jump" in dets:
        integrated = (
            (scale_d > 0)
            & (
                (scale_7 * math.sqrt(2) > RANDOM_WALK_RATIO * scale_d)
                | (scale_p > 2 * scale_d)  # the level wanders far more than it moves a day
            )
            & (np.isfinite(d1).sum(axis=1) >= sens.min_history - 1)
            & (np.isfinite(d7).sum(axis=1) >= 7)
        )
    if weekday is not None and kind not in ("null_rate", "duplicates"):
        wd_win = weekday[lo:t]
        wd_t = int(weekday[t])
        med_w = np.full((len(rows), 7), np.nan)
        cnt_w = np.zeros((len(rows), 7))
        for w in range(7):
            cols = np.flatnonzero(wd_win == w)
            if cols.size:
                part = tw[:, cols]
                med_w[:, w] = nanmedian_rows(part)
                cnt_w[:, w] = np.isfinite(part).sum(axis=1)
        med_w = np.where(cnt_w >= SEASONAL_MIN_WEEKS, med_w, np.nan)
        pairs = np.isfinite(d7).sum(axis=1)
        # seasonal when weekday medians differ by more than the week-over-week noise, and
        # they explain the series better than one median does
        spread = np.nanmax(med_w, axis=1) - np.nanmin(med_w, axis=1)
        seasonal = (
            (pairs >= 2 * 7)
            & np.isfinite(med_w[:, wd_t])
            & ~integrated
            & (spread > 3 * scale_7)
            & ((scale_7 < 0.8 * scale_p) | (scale_7 == 0))
        )
        dof = np.sqrt(cnt_w / np.maximum(cnt_w - 1, 1))[:, wd_win]
        resid_s = (tw - med_w[:, wd_win]) * dof
        base = np.where(seasonal, med_w[:, wd_t], med)
        scale = np.where(seasonal, scale_7, scale_p)
        resid = np.where(seasonal[:, None], resid_s, resid)
    # the baseline is itself a median of n points: its error (pi/2 * sigma^2 / n) adds to the
    # point's own noise
    n_base = n_train.astype(float)
    if med_w is not None and wd_t >= 0:
        n_base = np.where(seasonal, cnt_w[:, wd_t], n_base)
    scale = scale * np.sqrt(1.0 + (math.pi / 2) / np.maximum(n_base, 1.0))
    floor = np.maximum(1e-9 * np.abs(np.nan_to_num(base)), 1e-12)
    scale = np.maximum(np.nan_to_num(scale), floor)
    rmin = np.nanmin(resid, axis=1)
    rmax = np.nanmax(resid, axis=1)
    rx = tx - base
    z = rx / scale
    outside = (rx > rmax) | (rx < rmin)

    max_d = np.nanmax(np.abs(d1 - med_d[:, None]), axis=1)
    ref1, ref1_col = _last_finite(tg)
    ref7, _ = _last_finite(tg, (weekday[lo:t] == wd_t) if weekday is not None else None)
    skipped = (present_raw & ~np.isfinite(good))[:, :]
    gap = 1.0 + np.where(
        ref1_col >= 0,
        (skipped & (np.arange(raw.shape[1])[None, :] > ref1_col[:, None])).sum(axis=1),
        0,
    )
    change = np.where(seasonal, (tx - ref7) / np.maximum(scale_7 * math.sqrt(2), floor),
                      (tx - ref1 - med_d) / np.maximum(scale_d * np.sqrt(gap), floor))  # fmt: skip
    change = np.where(
        np.isfinite(change) | np.isinf(tx), change, np.inf
    )  # no reference: level only
    out: list[Finding] = []

    # random-walk series (day-to-day changes far smaller than the level's spread): judge the
    # change since the last good point against the series' own changes
    if "jump" in dets:
        delta = tx - ref1 - med_d
        rel = np.abs(np.where(pos, tx - ref1, (x - ref1) / np.maximum(np.abs(ref1), floor)))
        jump = (
            integrated
            & ok
            & np.isfinite(ref1)
            & (np.abs(change) >= sens.z_jump)
            & (np.abs(delta) > max_d * np.sqrt(gap))
            & (rel >= math.log1p(sens.min_jump) if kind == "value" else True)
        )
        for i in np.flatnonzero(jump):
            r = int(rows[i])
            lv = float(math.exp(ref1[i]) if pos[i] else ref1[i])
            last_day = panel.days[lo + int(ref1_col[i])]
            typical = lv * math.expm1(scale_d[i]) if pos[i] else scale_d[i]
            out.append(
                Finding(
                    r,
                    t,
                    "jump",
                    "up" if change[i] > 0 else "down",
                    float(x[i]),
                    lv,
                    float(change[i]),
                    f"{fmt(float(x[i]))} on {_day(panel.days[t])} after {fmt(lv)} on "
                    f"{_day(last_day)}: a move of {_pct(pos[i], tx[i] - ref1[i], float(x[i]) - lv)}"
                    f", {_sig(change[i])} robust sigmas of its own interval-to-interval moves "
                    f"(typically {fmt(abs(typical))}; threshold {sens.z_jump:g})",
                    {"sigmas": float(change[i]), "since": last_day.isoformat()},
                )
            )

    level_rows = ok & ~integrated
    if not level_rows.any():
        return out
    window_words = _WindowWords(panel, lo, t, seasonal, wd_t)
    if kind in ("null_rate", "duplicates"):
        det = "null_rate_rise" if kind == "null_rate" else "duplicates"
        if det in dets:
            tmax = np.nanmax(win, axis=1)
            delta_min = sens.min_null_delta if kind == "null_rate" else 0.0
            rise = level_rows & (x > tmax + delta_min) & (z >= sens.z_spike)
            for i in np.flatnonzero(rise):
                what = (
                    f"null rate {x[i]:.2%} vs at most {tmax[i]:.2%}"
                    if kind == "null_rate"
                    else f"{fmt(float(x[i]))} duplicate rows vs at most {fmt(float(tmax[i]))}"
                )
                out.append(
                    Finding(
                        int(rows[i]),
                        t,
                        det,
                        "up",
                        float(x[i]),
                        float(base[i]),
                        float(z[i]),
                        f"{what} on any interval of {window_words[i]}",
                        {"max_before": float(tmax[i])},
                    )
                )
        return out

    # a positive series is judged on a log scale, where a small count's low tail looks longer
    # than it is: it must be extreme on the linear scale too
    col_base = np.where(
        seasonal[:, None],
        med_w[:, weekday[lo:t]] if med_w is not None and weekday is not None else med[:, None],
        med[:, None],
    )
    lin_resid = win - np.exp(col_base)
    d7_lin = good[:, 7:] - good[:, :-7] if good.shape[1] > 7 else np.full((len(rows), 1), np.nan)
    scale_lin = np.where(
        seasonal,
        _nanmad(d7_lin, np.zeros(len(rows))) / math.sqrt(2),
        _nanmad(lin_resid, np.zeros(len(rows))),
    )
    z_lin = np.where(
        pos,
        (x - np.exp(base)) / np.maximum(np.nan_to_num(scale_lin), floor),
        z,
    )
    if kind == "value":  # a value must also move by min_value_change, relatively
        rel_x = np.abs(np.where(pos, rx, rx / np.maximum(np.abs(base), floor)))
        level_rows &= rel_x >= math.log1p(sens.min_value_change)
    spike = (
        level_rows
        & outside
        & (np.abs(z) >= sens.z_spike)
        & (np.abs(change) >= sens.z_shift)
        & (np.abs(z_lin) >= sens.z_spike)
    )
    for i in np.flatnonzero(spike):
        name = _directed(kind, z[i] > 0, "spike")
        if name not in dets:
            continue
        exp_v = _back(pos[i], base[i])
        out.append(
            Finding(
                int(rows[i]),
                t,
                name,
                "up" if z[i] > 0 else "down",
                float(x[i]),
                exp_v,
                float(z[i]),
                (
                    f"{fmt(float(x[i]))} on {_day(panel.days[t])}; it was {fmt(exp_v)} on every "
                    f"interval of {window_words[i]}"
                    if scale[i] <= floor[i] * 1.000001 and rmax[i] == rmin[i]
                    else f"{fmt(float(x[i]))} on {_day(panel.days[t])} vs expected {fmt(exp_v)} "
                    f"({_pct(pos[i], rx[i], float(x[i]) - (exp_v or 0.0))}), "
                    f"{_sig(z[i])} robust sigmas, outside anything seen in {window_words[i]} "
                    f"(threshold {sens.z_spike:g})"
                ),
                {"sigmas": float(z[i]), "seasonal": bool(seasonal[i])},
            )
        )
    # level shift: the last shift_run points all beyond z_shift on one side, flagged once
    shift_names = {_directed(kind, True, "level_shift"), _directed(kind, False, "level_shift")}
    if run_len < 1 or not (shift_names & dets):
        return out
    shift_rows = level_rows & ~spike & outside
    shift_rows &= (np.abs(z) >= sens.z_shift) & (np.abs(z_lin) >= sens.z_shift)
    for i in np.flatnonzero(shift_rows):
        r = int(rows[i])
        cols_before = np.flatnonzero(present_raw[i])
        if cols_before.size < run_len + 1:
            continue
        run_cols = cols_before[-run_len:] + lo
        before_col = int(cols_before[-run_len - 1] + lo)
        sign = np.sign(z[i])

        def z_at(c: int, i: int = int(i), r: int = r) -> tuple[float, float, float]:
            v = values[r, c]
            tv = (math.log(v) if v > 0 else -math.inf) if pos[i] else v
            b = base[i]
            if seasonal[i] and med_w is not None and weekday is not None:
                b = med_w[i, int(weekday[c])]
            return tv, tv - b, (tv - b) / scale[i]

        run_values = [values[r, int(c)] for c in run_cols] + [values[r, t]]
        if scale_p[i] > 0 and any(a == b for a, b in zip(run_values, run_values[1:], strict=False)):
            continue  # a repeated value (a forward-filled weekend) is one observation, not a run
        run = [z_at(int(c)) for c in run_cols]
        if not all(
            np.isfinite(zz) and np.sign(zz) == sign and abs(zz) >= sens.z_shift
            and (rr > rmax[i] or rr < rmin[i])
            for _, rr, zz in run
        ):  # fmt: skip
            continue
        tb, _, zb = z_at(before_col)
        if np.isfinite(zb) and np.sign(zb) == sign and abs(zb) >= sens.z_shift:
            continue  # the run started earlier: already flagged
        if not seasonal[i]:  # a shift starts with a step, a random walk drifts
            step = (run[0][0] - tb - med_d[i]) / max(scale_d[i], floor[i])
            if not (np.isfinite(step) and abs(step) >= sens.z_shift) and np.isfinite(tb):
                continue
        name = _directed(kind, sign > 0, "level_shift")
        if name not in dets:
            continue
        exp_v = _back(pos[i], base[i])
        since = panel.days[int(run_cols[0])]
        out.append(
            Finding(
                r,
                t,
                name,
                "up" if sign > 0 else "down",
                float(x[i]),
                exp_v,
                float(z[i]),
                f"{sens.shift_run} intervals in a row since {_day(since)} beyond "
                f"{sens.z_shift:g} robust sigmas on the same side: {fmt(float(x[i]))} on "
                f"{_day(panel.days[t])} vs expected {fmt(exp_v)} "
                f"({_pct(pos[i], rx[i], float(x[i]) - (exp_v or 0.0))}), from {window_words[i]}",
                {"since": since.isoformat(), "sigmas": float(z[i]), "shift": True},
            )
        )
    return out


def _names(kind: str) -> tuple[str, str]:
    if kind == "volume":
        return "volume_jump", "volume_drop"
    if kind == "distinct":
        return "distinct_change", "distinct_change"
    return "spike", "spike"


def _directed(kind: str, up: bool, generic: str) -> str:
    if kind == "volume":
        return "volume_jump" if up else "volume_drop"
    if kind == "distinct":
        return "distinct_change"
    return generic


def _back(pos: bool, t_value: float) -> float | None:
    if not np.isfinite(t_value):
        return None
    return float(math.exp(t_value)) if pos else float(t_value)


def _pct(pos: bool, log_delta: float, abs_delta: float) -> str:
    if pos and np.isfinite(log_delta):
        return f"{math.expm1(log_delta):+.1%}"
    return f"{abs_delta:+.4g}"


def _sig(z: float) -> str:
    return "over 1000" if not np.isfinite(z) or abs(z) > 1000 else f"{abs(z):.1f}"


class _WindowWords:
    """How a point's training window is named in its reason ("Mons of 2026-08-03..2026-09-27")."""

    def __init__(self, panel: Panel, lo: int, t: int, seasonal: np.ndarray, wd_t: int) -> None:
        self.span = f"{panel.days[lo].isoformat()}..{panel.days[t - 1].isoformat()}"
        self.seasonal = seasonal
        self.wd_t = wd_t

    def __getitem__(self, i: Any) -> str:
        if self.seasonal[i] and self.wd_t >= 0:
            return f"{WEEKDAYS[self.wd_t]}s of {self.span}"
        return self.span


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
