"""The level baseline the level detectors share (jump, rate rise, spike, level shift): each
series' training window before the interval judged, its robust level (seasonal by weekday when
that explains it better), its scales, and how far the new point is from it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.panel import (
    RANDOM_WALK_RATIO,
    SEASONAL_MIN_WEEKS,
    WEEKDAYS,
    Panel,
    day_words,
)
from splice.watch.robust import last_finite, nanmad, nanmedian_rows, prev_valid

#: Kinds judged as a rate (count) that rises above anything its window saw: never a spike.
RATE_KINDS = ("null_rate", "duplicates", "coverage")


@dataclass
class LevelWindow:
    """One column's series against their training windows (arrays are per row of ``col.rows``,
    or ``[row, window column]``; values of a positive series are on a log scale: ``tf``)."""

    col: Column
    lo: int  # the window is columns lo..hi-1
    f_dir: np.ndarray  # the open fault's direction (0 outside one)
    run_len: int  # a level shift's run before the point judged
    raw: np.ndarray  # the window's points (NaN before an accepted level)
    good: np.ndarray  # ... without anomalies
    present_raw: np.ndarray
    win: np.ndarray  # ... and without the detection period: the training window
    ok: np.ndarray  # enough training points, and not a repeat judged with the last point
    x: np.ndarray  # the point judged
    pos: np.ndarray  # a positive series: judged on a log scale
    tx: np.ndarray  # the point, transformed
    med: np.ndarray  # the window's median
    scale_p: np.ndarray  # ... its robust sigma
    base: np.ndarray  # the expected level (the weekday's median when seasonal)
    scale: np.ndarray  # ... its robust sigma, with the baseline's own error
    seasonal: np.ndarray
    wd_t: int  # the point's weekday (-1: no weekdays)
    med_w: np.ndarray | None  # [row, weekday] medians (NaN: too few weeks)
    scale_7: np.ndarray  # robust sigma of week-over-week changes
    med_d: np.ndarray  # median interval-to-interval change
    scale_d: np.ndarray  # ... its robust sigma
    integrated: np.ndarray  # a random walk (judged by the jump detector only)
    floor: np.ndarray  # the least scale
    rmin: np.ndarray  # the window's least and greatest residuals
    rmax: np.ndarray
    rx: np.ndarray  # the point's residual
    z: np.ndarray  # ... in robust sigmas
    outside: np.ndarray  # ... outside every residual the window saw
    max_d: np.ndarray  # the largest interval-to-interval move the window saw
    ref1: np.ndarray  # the last good point (transformed) and its window column
    ref1_col: np.ndarray
    gap: np.ndarray  # intervals since it
    change: np.ndarray  # the move from the reference point, in sigmas of the series' moves

    @property
    def panel(self) -> Panel:
        return self.col.panel

    def tf(self, a: np.ndarray) -> np.ndarray:
        """``a`` on each row's scale (log for a positive series)."""
        p = self.pos.reshape((-1,) + (1,) * (a.ndim - 1))
        return np.where(p, np.log(np.where(a > 0, a, np.nan)), a)

    @cached_property
    def words(self) -> WindowWords:
        return WindowWords(self.panel, self.lo, self.col.hi, self.seasonal, self.wd_t)

    @cached_property
    def level_rows(self) -> np.ndarray:
        """The rows judged as a level (enough history, not a random walk)."""
        return self.ok & ~self.integrated

    @cached_property
    def moved(self) -> Moved:
        return _moved(self)

    def still(self, r: int) -> str:
        """The words that open a finding of series ``r`` in a fault that goes on."""
        col = self.col
        if not col.in_fault:
            return ""
        n = int(np.isfinite(col.walk.values[r, col.hi : col.t + 1]).sum())
        return (
            f"still at the level it moved to on {day_words(self.panel.days[col.hi])} ({n} "
            "intervals); not accepted as the new normal: "
        )


@dataclass
class Moved:
    """What the spike and level shift detectors share: the rows that moved enough to be judged
    (``rows``), the point in sigmas of the linear scale too (``z_lin``: a positive series' low
    tail looks longer on a log scale than it is), and the points beyond the spike thresholds."""

    rows: np.ndarray
    z_lin: np.ndarray
    spike: np.ndarray


def level_window(col: Column) -> LevelWindow | None:
    """The training windows of ``col``'s series against their robust level (None: no series
    has enough history): seasonal by weekday when that explains a series better than one
    median; a random walk's moves (``integrated``: only when ``jump`` is on); the point's move
    from the last good point in sigmas of the series' own moves (``change``)."""
    tr = _training(col)
    if tr is None:
        return None
    walk, rows, sens = col.walk, col.rows, col.panel.sensitivity
    pos, x = tr.pos, tr.x

    def tf(a: np.ndarray) -> np.ndarray:
        p = pos.reshape((-1,) + (1,) * (a.ndim - 1))
        return np.where(p, np.log(np.where(a > 0, a, np.nan)), a)

    tw, tg = tf(tr.win), tf(tr.good)
    tx = np.where(pos, np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf), x)
    med = nanmedian_rows(tw)
    scale_p = nanmad(tw, med)
    base, scale = med.copy(), scale_p.copy()
    resid = tw - med[:, None]
    # week-over-week changes: the noise of a weekly-seasonal series, without fitting it
    d7 = tg[:, 7:] - tg[:, :-7] if tg.shape[1] > 7 else np.full((len(rows), 1), np.nan)
    scale_7 = nanmad(d7, np.zeros(len(rows))) / math.sqrt(2)
    # the change from the reference point: the last good point (same weekday if seasonal)
    prev = prev_valid(tw)
    prev_vals = np.take_along_axis(tw, np.maximum(prev, 0), axis=1)
    d1 = np.where((prev >= 0) & np.isfinite(tw), tw - prev_vals, np.nan)
    # repeats (forward-filled weekends, holidays) are not moves: they would shrink the scale
    d1 = np.where(d1 == 0, np.nan, d1)
    med_d = nanmedian_rows(d1)
    scale_d = nanmad(d1, med_d)
    # a random walk's week-over-week changes are ~sqrt(5..7) times its day-to-day ones; white
    # noise has them equal, a weekly pattern makes them smaller
    integrated = np.zeros(len(rows), dtype=bool)
    if "jump" in walk.active:
        integrated = (
            (scale_d > 0)
            & (
                (scale_7 * math.sqrt(2) > RANDOM_WALK_RATIO * scale_d)
                | (scale_p > 2 * scale_d)  # the level wanders far more than it moves a day
            )
            & (np.isfinite(d1).sum(axis=1) >= sens.min_history - 1)
            & (np.isfinite(d7).sum(axis=1) >= 7)
        )
    wk = _Weekdays(np.zeros(len(rows), dtype=bool), -1, None, None)
    if walk.weekday is not None and col.panel.kind not in RATE_KINDS:
        wk = _weekdays(col, tr.lo, tw, d7, scale_7, scale_p, integrated)
        assert wk.med_w is not None and wk.cnt_w is not None
        wd_win = walk.weekday[tr.lo : col.hi]
        dof = np.sqrt(wk.cnt_w / np.maximum(wk.cnt_w - 1, 1))[:, wd_win]
        resid_s = (tw - wk.med_w[:, wd_win]) * dof
        base = np.where(wk.seasonal, wk.med_w[:, wk.wd_t], med)
        # two estimates of a seasonal series' noise, each from a few weeks: the week-over-week
        # changes and the residuals from the weekday medians; the larger, so that a thin series
        # (a currency's 40 bookings a day) is never judged on the lucky low one
        scale_s = np.maximum(scale_7, nanmad(resid_s, np.zeros(len(rows))))
        scale = np.where(wk.seasonal, scale_s, scale_p)
        resid = np.where(wk.seasonal[:, None], resid_s, resid)
    seasonal = wk.seasonal
    # the baseline is itself a median of n points: its error (pi/2 * sigma^2 / n) adds to the
    # point's own noise
    n_base = tr.n_train.astype(float)
    if wk.cnt_w is not None and wk.wd_t >= 0:
        n_base = np.where(seasonal, wk.cnt_w[:, wk.wd_t], n_base)
    scale = scale * np.sqrt(1.0 + (math.pi / 2) / np.maximum(n_base, 1.0))
    floor = np.maximum(1e-9 * np.abs(np.nan_to_num(base)), 1e-12)
    scale = np.maximum(np.nan_to_num(scale), floor)
    rmin = np.nanmin(resid, axis=1)
    rmax = np.nanmax(resid, axis=1)
    rx = tx - base
    ref1, ref1_col, gap, change = _reference(col, tr, tg, tx, wk, scale_7, med_d, scale_d, floor)
    return LevelWindow(
        col=col, lo=tr.lo, f_dir=tr.f_dir, run_len=tr.run_len, raw=tr.raw, good=tr.good,
        present_raw=tr.present_raw, win=tr.win, ok=tr.ok, x=x, pos=pos, tx=tx, med=med,
        scale_p=scale_p, base=base, scale=scale, seasonal=seasonal, wd_t=wk.wd_t, med_w=wk.med_w,
        scale_7=scale_7, med_d=med_d, scale_d=scale_d, integrated=integrated, floor=floor,
        rmin=rmin, rmax=rmax, rx=rx, z=rx / scale, outside=(rx > rmax) | (rx < rmin),
        max_d=np.nanmax(np.abs(d1 - med_d[:, None]), axis=1), ref1=ref1, ref1_col=ref1_col,
        gap=gap, change=change,
    )  # fmt: skip


@dataclass
class _Training:
    """The training windows before the detectors' scales: which points, and which series."""

    lo: int
    f_dir: np.ndarray
    run_len: int
    raw: np.ndarray
    good: np.ndarray
    present_raw: np.ndarray
    win: np.ndarray
    n_train: np.ndarray
    ok: np.ndarray
    x: np.ndarray
    pos: np.ndarray


def _training(col: Column) -> _Training | None:
    """Before an accepted level and the anomalies are left out; so is the detection period (the
    last ``shift_run - 1`` points) unless the series are in a fault, whose window ends before
    it.  A repeat of the previous point (a forward-filled weekend) was judged with it."""
    walk, panel, rows, t, hi = col.walk, col.panel, col.rows, col.t, col.hi
    values, bad = walk.values, walk.bad
    sens, kind = panel.sensitivity, panel.kind
    in_fault = col.in_fault
    f_dir = (
        np.zeros(len(rows), dtype=int) if col.fault_dir is None or not in_fault else col.fault_dir
    )
    lo = max(0, hi - sens.training)
    raw = values[rows, lo:hi].copy()  # [r, w]
    if raw.shape[1] == 0:
        return None
    raw[np.arange(lo, hi)[None, :] < walk.level_from[rows][:, None]] = np.nan
    good = raw.copy()
    good[bad[rows, lo:hi]] = np.nan  # anomalies never train
    present_raw = np.isfinite(raw)
    rank = np.cumsum(present_raw[:, ::-1], axis=1)[:, ::-1]  # 1 = the latest point before t
    run_len = sens.shift_run - 1
    win = good.copy()
    if not in_fault:  # a fault's window ends before it: nothing of it to keep out
        win[present_raw & (rank <= run_len + 1)] = np.nan
    n_train = np.isfinite(win).sum(axis=1)
    ok = n_train >= sens.min_history
    if not ok.any():
        return None
    x = values[rows, t]
    lo_t = max(0, t - sens.training)
    prev_raw, prev_col = last_finite(values[rows, lo_t:t])
    prev_good = (prev_col >= 0) & ~bad[rows, lo_t + np.maximum(prev_col, 0)]
    repeat = prev_good & (x == prev_raw) & (kind in ("value", "lag"))
    ok &= ~repeat
    if not ok.any():
        return None
    linear = kind in ("null_rate", "duplicates", "lag", "coverage")
    pos = (np.nanmin(win, axis=1) > 0) & (not linear)
    return _Training(lo, f_dir, run_len, raw, good, present_raw, win, n_train, ok, x, pos)


@dataclass
class _Weekdays:
    """The weekday baseline: which series are seasonal, the point's weekday, and per series
    and weekday the median and the count of training points (None without weekdays)."""

    seasonal: np.ndarray
    wd_t: int
    med_w: np.ndarray | None
    cnt_w: np.ndarray | None


def _weekdays(
    col: Column, lo: int, tw: np.ndarray, d7: np.ndarray, scale_7: np.ndarray,
    scale_p: np.ndarray, integrated: np.ndarray,
) -> _Weekdays:  # fmt: skip
    """Seasonal when weekday medians differ by more than the week-over-week noise, and they
    explain the series better than one median does."""
    assert col.walk.weekday is not None
    weekday, n = col.walk.weekday, len(col.rows)
    wd_win = weekday[lo : col.hi]
    wd_t = int(weekday[col.t])
    med_w = np.full((n, 7), np.nan)
    cnt_w = np.zeros((n, 7))
    for w in range(7):
        cols = np.flatnonzero(wd_win == w)
        if cols.size:
            part = tw[:, cols]
            med_w[:, w] = nanmedian_rows(part)
            cnt_w[:, w] = np.isfinite(part).sum(axis=1)
    med_w = np.where(cnt_w >= SEASONAL_MIN_WEEKS, med_w, np.nan)
    pairs = np.isfinite(d7).sum(axis=1)
    spread = np.nanmax(med_w, axis=1) - np.nanmin(med_w, axis=1)
    seasonal = (
        (pairs >= 2 * 7)
        & np.isfinite(med_w[:, wd_t])
        & ~integrated
        & (spread > 3 * scale_7)
        & ((scale_7 < 0.8 * scale_p) | (scale_7 == 0))
    )
    return _Weekdays(seasonal, wd_t, med_w, cnt_w)


def _reference(
    col: Column, tr: _Training, tg: np.ndarray, tx: np.ndarray, wk: _Weekdays,
    scale_7: np.ndarray, med_d: np.ndarray, scale_d: np.ndarray, floor: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(the last good point, its window column, the intervals since it, the point's move from
    it in sigmas of the series' moves: from the same weekday's when seasonal)."""
    weekday, lo, hi = col.walk.weekday, tr.lo, col.hi
    ref1, ref1_col = last_finite(tg)
    ref7, _ = last_finite(tg, (weekday[lo:hi] == wk.wd_t) if weekday is not None else None)
    skipped = (tr.present_raw & ~np.isfinite(tr.good))[:, :]
    gap = 1.0 + np.where(
        ref1_col >= 0,
        (skipped & (np.arange(tr.raw.shape[1])[None, :] > ref1_col[:, None])).sum(axis=1),
        0,
    )
    # the fault's own points since the window's end: the reference is that much older
    gap += np.isfinite(col.walk.values[col.rows, hi : col.t]).sum(axis=1) if col.in_fault else 0
    change = np.where(wk.seasonal, (tx - ref7) / np.maximum(scale_7 * math.sqrt(2), floor),
                      (tx - ref1 - med_d) / np.maximum(scale_d * np.sqrt(gap), floor))  # fmt: skip
    change = np.where(
        np.isfinite(change) | np.isinf(tx), change, np.inf
    )  # no reference: level only
    return ref1, ref1_col, gap, change


def _moved(w: LevelWindow) -> Moved:
    """A positive series is judged on a log scale, where a small count's low tail looks longer
    than it is: it must be extreme on the linear scale too; a value or a count must also move
    a least share of its level (``min_value_change``, ``min_count_change``)."""
    sens, kind = w.panel.sensitivity, w.panel.kind
    weekday, lo, hi = w.col.walk.weekday, w.lo, w.col.hi
    n = len(w.col.rows)
    col_base = np.where(
        w.seasonal[:, None],
        w.med_w[:, weekday[lo:hi]]
        if w.med_w is not None and weekday is not None
        else w.med[:, None],
        w.med[:, None],
    )
    lin_resid = w.win - np.exp(col_base)
    good = w.good
    d7_lin = good[:, 7:] - good[:, :-7] if good.shape[1] > 7 else np.full((n, 1), np.nan)
    resid_scale = nanmad(lin_resid, np.zeros(n))
    scale_lin = np.where(
        w.seasonal,
        np.maximum(nanmad(d7_lin, np.zeros(n)) / math.sqrt(2), resid_scale),
        resid_scale,
    )
    z_lin = np.where(
        w.pos,
        (w.x - np.exp(w.base)) / np.maximum(np.nan_to_num(scale_lin), w.floor),
        w.z,
    )
    rows = w.level_rows
    if kind in ("value", "volume", "distinct"):  # and must move this much, relatively
        rel_x = np.abs(np.where(w.pos, w.rx, w.rx / np.maximum(np.abs(w.base), w.floor)))
        least = sens.min_value_change if kind == "value" else sens.min_count_change
        rows = rows & (rel_x >= math.log1p(least))
    spike = (
        rows
        & w.outside
        & (np.abs(w.z) >= sens.z_spike)
        & (np.abs(w.change) >= sens.z_shift)
        & (np.abs(z_lin) >= sens.z_spike)
    )
    return Moved(rows, z_lin, spike)


def fault_median(a: np.ndarray) -> np.ndarray:
    """Per row, the median of a fault's points (NaN without one)."""
    return nanmedian_rows(np.where(np.isfinite(a), a, np.nan))


def directed(kind: str, up: bool, generic: str) -> str:
    """The name a finding of ``generic`` (spike, level_shift) takes for a measure's kind.

    >>> directed("volume", False, "spike"), directed("distinct", True, "level_shift")
    ('volume_drop', 'distinct_change')
    >>> directed("lag", True, "level_shift")
    'level_shift'
    """
    if kind == "volume":
        return "volume_jump" if up else "volume_drop"
    if kind == "distinct":
        return "distinct_change"
    return generic


class WindowWords:
    """How a point's training window is named in its reason ("Mons of 2026-08-03..2026-09-27")."""

    def __init__(self, panel: Panel, lo: int, t: int, seasonal: np.ndarray, wd_t: int) -> None:
        self.span = f"{panel.days[lo].isoformat()}..{panel.days[t - 1].isoformat()}"
        self.seasonal = seasonal
        self.wd_t = wd_t

    def __getitem__(self, i: Any) -> str:
        if self.seasonal[i] and self.wd_t >= 0:
            return f"{WEEKDAYS[self.wd_t]}s of {self.span}"
        return self.span
