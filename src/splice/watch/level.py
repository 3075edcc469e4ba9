"""The level detectors: spike, level shift, jump (random-walk series), volume drop / jump and
distinct change, each judged robustly against the series' own history (see
:mod:`splice.watch.detectors`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from splice.watch.panel import (
    RANDOM_WALK_RATIO,
    SEASONAL_MIN_WEEKS,
    WEEKDAYS,
    Finding,
    Panel,
    _day,
    fmt,
)
from splice.watch.robust import (
    back_transform,
    last_finite,
    nanmad,
    nanmedian_rows,
    pct_change,
    prev_valid,
    sigmas,
)


def _level(
    panel: Panel,
    values: np.ndarray,
    bad: np.ndarray,
    t: int,
    rows: np.ndarray,
    weekday: np.ndarray | None,
    level_from: np.ndarray,
    *,
    hi: int | None = None,
    fault_dir: np.ndarray | None = None,
) -> list[Finding]:
    """Judge column ``t`` of ``rows``.  ``hi`` < ``t``: the rows are in a fault that started at
    column ``hi`` and has not been accepted as the new normal; they are judged against the
    training window before it (``fault_dir``: the fault's direction per row), and a point
    still beyond ``z_shift`` on the fault's side is flagged (the fault goes on)."""
    sens = panel.sensitivity
    kind = panel.kind
    dets = set(panel.detectors)
    hi = t if hi is None else hi
    in_fault = hi < t
    f_dir = np.zeros(len(rows), dtype=int) if fault_dir is None or not in_fault else fault_dir
    lo = max(0, hi - sens.training)
    raw = values[rows, lo:hi].copy()  # [r, w]
    if raw.shape[1] == 0:
        return []
    raw[np.arange(lo, hi)[None, :] < level_from[rows][:, None]] = np.nan  # before a new level
    good = raw.copy()
    good[bad[rows, lo:hi]] = np.nan  # anomalies never train
    # the detection period (the last shift_run - 1 points) stays out of the training window
    present_raw = np.isfinite(raw)
    rank = np.cumsum(present_raw[:, ::-1], axis=1)[:, ::-1]  # 1 = the latest point before t
    run_len = sens.shift_run - 1
    win = good.copy()
    if not in_fault:  # a fault's window ends before it: nothing of it to keep out
        win[present_raw & (rank <= run_len + 1)] = np.nan
    n_train = np.isfinite(win).sum(axis=1)
    ok = n_train >= sens.min_history
    if not ok.any():
        return []
    x = values[rows, t]
    # a repeat of the previous point (a forward-filled weekend) was judged with it
    lo_t = max(0, t - sens.training)
    prev_raw, prev_col = last_finite(values[rows, lo_t:t])
    prev_good = (prev_col >= 0) & ~bad[rows, lo_t + np.maximum(prev_col, 0)]
    repeat = prev_good & (x == prev_raw) & (kind in ("value", "lag"))
    ok &= ~repeat
    if not ok.any():
        return []
    linear = kind in ("null_rate", "duplicates", "lag", "coverage")
    pos = (np.nanmin(win, axis=1) > 0) & (not linear)

    def tf(a: np.ndarray) -> np.ndarray:
        p = pos.reshape((-1,) + (1,) * (a.ndim - 1))
        return np.where(p, np.log(np.where(a > 0, a, np.nan)), a)

    tw, tg = tf(win), tf(good)
    tx = np.where(pos, np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf), x)
    med = nanmedian_rows(tw)
    scale_p = nanmad(tw, med)
    base, scale = med.copy(), scale_p.copy()
    resid = tw - med[:, None]
    seasonal = np.zeros(len(rows), dtype=bool)
    wd_t = -1
    med_w: np.ndarray | None = None
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
    if weekday is not None and kind not in ("null_rate", "duplicates", "coverage"):
        wd_win = weekday[lo:hi]
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
    ref1, ref1_col = last_finite(tg)
    ref7, _ = last_finite(tg, (weekday[lo:hi] == wd_t) if weekday is not None else None)
    skipped = (present_raw & ~np.isfinite(good))[:, :]
    gap = 1.0 + np.where(
        ref1_col >= 0,
        (skipped & (np.arange(raw.shape[1])[None, :] > ref1_col[:, None])).sum(axis=1),
        0,
    )
    # the fault's own points since the window's end: the reference is that much older
    gap += np.isfinite(values[rows, hi:t]).sum(axis=1) if in_fault else 0
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
        # in a fault, a move still beyond z_shift on the fault's side is the fault going on
        off = _fault_median(tf(values[rows, hi:t]) - ref1[:, None]) if in_fault else ref1 * 0
        goes_on = (
            (f_dir != 0)
            & (np.sign(change) == f_dir)
            & (np.abs(change) >= sens.z_fault)
            & (np.abs(tx - ref1) >= 0.5 * np.abs(np.nan_to_num(off, nan=np.inf)))
        )
        jump = (
            integrated
            & ok
            & np.isfinite(ref1)
            & ((np.abs(change) >= sens.z_jump) | goes_on)
            & (np.abs(delta) > max_d * np.sqrt(gap))
            & (rel >= math.log1p(sens.min_jump) if kind == "value" else True)
        )
        for i in np.flatnonzero(jump):
            r = int(rows[i])
            lv = float(math.exp(ref1[i]) if pos[i] else ref1[i])
            last_day = panel.days[lo + int(ref1_col[i])]
            typical = lv * math.expm1(scale_d[i]) if pos[i] else scale_d[i]
            threshold = sens.z_fault if goes_on[i] else sens.z_jump
            out.append(
                Finding(
                    r,
                    t,
                    "jump",
                    "up" if change[i] > 0 else "down",
                    float(x[i]),
                    lv,
                    float(change[i]),
                    _still(panel, values, r, hi, t, in_fault)
                    + f"{fmt(float(x[i]))} on {_day(panel.days[t])} after {fmt(lv)} on "
                    f"{_day(last_day)}: a move of {pct_change(pos[i], tx[i] - ref1[i], float(x[i]) - lv)}"
                    f", {sigmas(change[i])} robust sigmas of its own interval-to-interval moves "
                    + (f"over {int(gap[i])} intervals " if gap[i] > 1 else "")
                    + f"(typically {fmt(abs(typical))}; threshold {threshold:g})",
                    {
                        "sigmas": float(change[i]),
                        "since": panel.days[hi if in_fault else t].isoformat(),
                        "last_good": last_day.isoformat(),
                    },
                )
            )

    level_rows = ok & ~integrated
    if not level_rows.any():
        return out
    window_words = _WindowWords(panel, lo, hi, seasonal, wd_t)
    if kind in ("null_rate", "duplicates", "coverage"):
        det = {"null_rate": "null_rate_rise", "coverage": "coverage_drop"}.get(kind, "duplicates")
        if det in dets:
            # coverage is judged mirrored: a share that falls below anything seen
            sign = -1.0 if kind == "coverage" else 1.0
            tmax = sign * np.nanmax(sign * win, axis=1)
            delta_min = sens.min_null_delta if kind != "duplicates" else 0.0
            rise = level_rows & (sign * x > sign * tmax + delta_min) & (sign * z >= sens.z_spike)
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
                        det,
                        "down" if kind == "coverage" else "up",
                        float(x[i]),
                        float(base[i]),
                        float(z[i]),
                        _still(panel, values, int(rows[i]), hi, t, in_fault)
                        + f"{what} on any interval of {window_words[i]}",
                        {"max_before": float(tmax[i]), "since": panel.days[hi].isoformat()},
                    )
                )
        return out

    # a positive series is judged on a log scale, where a small count's low tail looks longer
    # than it is: it must be extreme on the linear scale too
    col_base = np.where(
        seasonal[:, None],
        med_w[:, weekday[lo:hi]] if med_w is not None and weekday is not None else med[:, None],
        med[:, None],
    )
    lin_resid = win - np.exp(col_base)
    d7_lin = good[:, 7:] - good[:, :-7] if good.shape[1] > 7 else np.full((len(rows), 1), np.nan)
    scale_lin = np.where(
        seasonal,
        nanmad(d7_lin, np.zeros(len(rows))) / math.sqrt(2),
        nanmad(lin_resid, np.zeros(len(rows))),
    )
    z_lin = np.where(
        pos,
        (x - np.exp(base)) / np.maximum(np.nan_to_num(scale_lin), floor),
        z,
    )
    if kind in ("value", "volume", "distinct"):  # and must move this much, relatively
        rel_x = np.abs(np.where(pos, rx, rx / np.maximum(np.abs(base), floor)))
        least = sens.min_value_change if kind == "value" else sens.min_count_change
        level_rows &= rel_x >= math.log1p(least)
    spike = (
        level_rows
        & outside
        & (np.abs(z) >= sens.z_spike)
        & (np.abs(change) >= sens.z_shift)
        & (np.abs(z_lin) >= sens.z_spike)
    )
    # in a fault: a point still beyond z_shift on the fault's side is the fault going on
    goes_on = np.zeros(len(rows), dtype=bool)
    if in_fault:
        f_base = np.repeat(base[:, None], t - hi, axis=1)
        if med_w is not None and weekday is not None:
            f_base = np.where(seasonal[:, None], med_w[:, weekday[hi:t]], f_base)
        f_res = _fault_median(tf(values[rows, hi:t]) - f_base)
        goes_on = (
            level_rows
            & (f_dir != 0)
            & (np.sign(z) == f_dir)
            & (np.sign(z_lin) == f_dir)
            & (np.abs(z) >= sens.z_fault)
            & (np.abs(rx) >= 0.5 * np.abs(np.nan_to_num(f_res, nan=np.inf)))
        )
    for i in np.flatnonzero(spike | goes_on):
        name = _directed(kind, z[i] > 0, "spike")
        if goes_on[i] and _directed(kind, z[i] > 0, "level_shift") in dets:
            name = _directed(kind, z[i] > 0, "level_shift")  # a level that moved and stays
        if name not in dets:
            continue
        exp_v = back_transform(pos[i], base[i])
        out.append(
            Finding(
                int(rows[i]),
                t,
                name,
                "up" if z[i] > 0 else "down",
                float(x[i]),
                exp_v,
                float(z[i]),
                _still(panel, values, int(rows[i]), hi, t, in_fault)
                + (
                    f"{fmt(float(x[i]))} on {_day(panel.days[t])}; it was {fmt(exp_v)} on every "
                    f"interval of {window_words[i]}"
                    if scale[i] <= floor[i] * 1.000001 and rmax[i] == rmin[i]
                    else f"{fmt(float(x[i]))} on {_day(panel.days[t])} vs expected {fmt(exp_v)} "
                    f"({pct_change(pos[i], rx[i], float(x[i]) - (exp_v or 0.0))}), "
                    + (
                        f"{sigmas(z[i])} robust sigmas from {window_words[i]}, on the fault's "
                        f"side and at least half way to its level (threshold {sens.z_fault:g})"
                        if goes_on[i]
                        else f"{sigmas(z[i])} robust sigmas, outside anything seen in "
                        f"{window_words[i]} (threshold {sens.z_spike:g})"
                    )
                ),
                {
                    "sigmas": float(z[i]),
                    "seasonal": bool(seasonal[i]),
                    "since": panel.days[hi].isoformat(),
                },
            )
        )
    # level shift: the last shift_run points all beyond z_shift on one side; from then on the
    # series is in a fault, flagged on every interval at the shifted level (above) until the
    # new level is accepted
    shift_names = {_directed(kind, True, "level_shift"), _directed(kind, False, "level_shift")}
    if run_len < 1 or in_fault or not (shift_names & dets):
        return out
    shift_rows = level_rows & ~spike & outside
    shift_rows &= (np.abs(z) >= sens.z_shift) & (np.abs(z_lin) >= sens.z_shift)
    for i in np.flatnonzero(shift_rows):
        r = int(rows[i])
        cols_before = np.flatnonzero(present_raw[i])
        if cols_before.size < run_len + 1:
            continue
        sign = np.sign(z[i])

        def z_at(c: int, i: int = int(i), r: int = r) -> tuple[float, float, float]:
            v = values[r, c]
            tv = (math.log(v) if v > 0 else -math.inf) if pos[i] else v
            b = base[i]
            if seasonal[i] and med_w is not None and weekday is not None:
                b = med_w[i, int(weekday[c])]
            return tv, tv - b, (tv - b) / scale[i]

        def strong(p: tuple[float, float, float], i: int = int(i), sgn: float = sign) -> bool:
            _, rr, zz = p
            return bool(np.isfinite(zz) and np.sign(zz) == sgn and abs(zz) >= sens.z_shift
                        and (rr > rmax[i] or rr < rmin[i]))  # fmt: skip

        # the run: the last shift_run - 1 points before this one beyond z_shift on its side;
        # or, one point longer, all on its side beyond z_shift / 2 and shift_run of them beyond
        # z_shift (one noisy day does not hide a level that moved)
        run_cols = cols_before[-run_len:] + lo
        run = [z_at(int(c)) for c in run_cols]
        if not all(strong(p) for p in run):
            if cols_before.size < run_len + 2:
                continue
            run_cols = cols_before[-run_len - 1 :] + lo
            run = [z_at(int(c)) for c in run_cols]
            weak = all(
                np.isfinite(zz) and np.sign(zz) == sign and abs(zz) >= sens.z_shift / 2
                for _, _, zz in run
            )
            if not (weak and strong(run[0]) and sum(strong(p) for p in run) >= run_len):
                continue
        run_values = [values[r, int(c)] for c in run_cols] + [values[r, t]]
        if scale_p[i] > 0 and any(a == b for a, b in zip(run_values, run_values[1:], strict=False)):
            continue  # a repeated value (a forward-filled weekend) is one observation, not a run
        k_before = cols_before.size - len(run_cols) - 1
        if k_before < 0:
            continue
        before_col = int(cols_before[k_before] + lo)
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
        exp_v = back_transform(pos[i], base[i])
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
                f"{len(run_cols) + 1} intervals in a row since {_day(since)} beyond "
                f"{sens.z_shift:g} robust sigmas on the same side, a level that moved (not the "
                f"new normal until accepted): {fmt(float(x[i]))} on "
                f"{_day(panel.days[t])} vs expected {fmt(exp_v)} "
                f"({pct_change(pos[i], rx[i], float(x[i]) - (exp_v or 0.0))}), from {window_words[i]}",
                {"since": since.isoformat(), "sigmas": float(z[i])},
            )
        )
    return out


def _fault_median(a: np.ndarray) -> np.ndarray:
    """Per row, the median of a fault's points (NaN without one)."""
    return nanmedian_rows(np.where(np.isfinite(a), a, np.nan))


def _still(panel: Panel, values: np.ndarray, r: int, hi: int, t: int, in_fault: bool) -> str:
    """The words that open a finding in a fault that goes on."""
    if not in_fault:
        return ""
    n = int(np.isfinite(values[r, hi : t + 1]).sum())
    return (
        f"still at the level it moved to on {_day(panel.days[hi])} ({n} intervals); not "
        "accepted as the new normal: "
    )


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
