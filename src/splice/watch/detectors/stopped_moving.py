"""The ``stopped_moving`` detector: a value that equals the last good value, on a day the
series normally changes; alone when its own history (and its precision) makes a repeat rare,
or together with many series of the measure at once.

"Normally" is learned from the series itself, per weekday (forward-filled rates repeat on
weekends: normal), and the publishing calendar (``holidays``' ECB/TARGET calendar by default)
makes a repeat on a holiday normal too.  The chance of the repeat is the series' own repeat
rate on such days (``(repeats + 0.5) / (transitions + 1)``); a run of ``k`` repeats has chance
``p**k``.  A series alone is flagged when that chance is below ``alpha / N`` (``N`` eligible
series of the measure that interval); and when several series of the measure repeat on the
same interval, the number that repeated is tested against the number expected (a Poisson tail
of the summed chances): 29 currencies repeating Friday on a Monday is flagged on its first day.

A series is flagged on its *first* repeat when its own history says repeats are rare: it
changed on at least 95% of at least 20 comparable days, no *anchor* repeats with it (a series
whose precision makes honest repeats likely, below), and its precision makes an honest repeat
rarer than ``alpha / N``: the chance is ``q / (sqrt(2 pi) s)``, a move of its usual size ``s``
rounding to nothing at its quantum ``q`` (the decimals its values are given to; a full-precision
float has none).  The rule comes from the real ECB rates (USD per unit, 2023-2025, 766 business
days): EUR/USD, published to 4 decimals, repeats on 1% of days (7 times; the quantum predicts
0.9%), so its first repeat is not enough; every other currency is a full-precision cross rate
that repeated only on a day EUR/USD repeated too (CNY, DKK, INR, MYR, ISK: 1-2 times each,
always with EUR), so a cross rate repeating without EUR is a frozen feed.  So a repeat that
includes an anchor (an honest-repeat chance of at least ``joint_anchor``, 0.2%: EUR/USD) is
explained by it when it is narrow (fewer than half of the series): on US Labor Day 2026 EUR,
CHF and ISK all repeated, honestly.  Once a run is flagged, each further repeat of it is
flagged too; the run's own repeats never count as the series' history (an unflagged first
repeat would make the second look ordinary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from splice.watch.detectors.base import Column
from splice.watch.panel import WEEKDAYS, Finding, day_words, fmt
from splice.watch.robust import poisson_tail

#: A series alone is judged on its first repeat when it changed on at least this share of at
#: least FIRST_REPEAT_MIN comparable days (see the module docstring).
FIRST_REPEAT_CHANGED = 0.95
FIRST_REPEAT_MIN = 20


class MovingState:
    """What stopped_moving needs about each series, updated point by point."""

    def __init__(self, s: int) -> None:
        self.last = np.full(s, np.nan)  # last good value
        self.last_col = np.full(s, -1)
        self.streak = np.zeros(s, dtype=int)  # points in a row equal to the last good value
        self.streak_col = np.full(s, -1)  # where the streak started
        self.skipped = np.zeros(s, dtype=int)  # bad points since the last good one
        self.n = np.zeros((s, 7), dtype=float)  # transitions landing on each weekday
        self.changed = np.zeros((s, 7), dtype=float)


def learn(col: Column) -> None:
    """After interval ``col.t`` (its faults opened): each series' last good value, its run of
    repeats, and per weekday how often it changed."""
    walk, t = col.walk, col.t
    st, values, bad = walk.state(MovingState), walk.values, walk.bad
    weekday, holiday = walk.weekday, walk.holiday
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


def stopped_moving(col: Column) -> list[Finding]:
    """``stopped_moving`` (see the module docstring).

    Reads the series with a new point at ``col.t`` and the state :func:`learn` keeps.  Fires,
    on a day that is not a calendar holiday, on an eligible series (one that normally changes
    on this weekday, with enough comparable days) whose point equals its last good value, when
    the chance of that repeat run alone is below ``alpha / N``, or the number of series
    repeating together is improbable (``alpha``), or the run goes on repeating a flagged one.
    Returns one ``stopped_moving`` finding per such series, ``direction`` flat, ``score`` the
    chance (``data``: same_as, since, run, repeat_rate, series_repeating, series_eligible)."""
    rp = _repeats(col)
    if rp is None:
        return []
    walk, t, rows, panel = col.walk, col.t, col.rows, col.panel
    st, weekday, wd = walk.state(MovingState), walk.weekday, rp.wd
    out: list[Finding] = []
    day = panel.days[t]
    for i in np.flatnonzero(rp.flag):
        r, k = int(rows[i]), rp.k[i]
        last_day = panel.days[int(st.last_col[r])]
        since = panel.days[int(st.streak_col[r])] if k > 1 else day
        chance = float(rp.p_eff[i] ** k)
        words = (
            f"{fmt(float(rp.v[i]))} on {day_words(day)} is the same as on {day_words(last_day)}"
            + (f" ({int(k)} intervals in a row)" if k > 1 else "")
            + f"; it changed on {int(rp.tot_n[i] - rp.tot_rep[i])} of {int(rp.tot_n[i])} "
            "comparable days before"
            + (
                f" ({WEEKDAYS[wd]}s: {int(st.changed[r, wd])} of {int(rp.n_w[i])})"
                if weekday is not None
                else ""
            )
        )
        if rp.k_same >= 2:
            words += (
                f", and {rp.k_same} of {rp.n_elig} series of {panel.name} did not move on this "
                f"interval where {rp.lam:.2g} would by chance (chance "
                f"{min(rp.joint, chance):.1g})"
            )
        elif rp.p_eff[i] < rp.p[i]:
            words += (
                f"; it repeated alone, and at its precision against its usual move a repeat "
                f"has chance {rp.p_quant[i]:.1g} (a repeat run {chance:.1g})"
            )
        else:
            words += f" (chance {chance:.1g})"
        out.append(
            Finding(
                r,
                t,
                "stopped_moving",
                "flat",
                float(rp.v[i]),
                float(rp.last[i]),
                min(rp.joint, chance),
                words,
                {
                    "same_as": last_day.isoformat(),
                    "since": since.isoformat(),
                    "run": int(k),
                    "repeat_rate": float(rp.p[i]),
                    "series_repeating": rp.k_same,
                    "series_eligible": rp.n_elig,
                },
            )
        )
    return out


@dataclass
class _Repeats:
    """The repeats at one interval, per series judged: ``flag`` the ones found."""

    wd: int
    v: np.ndarray  # the point
    last: np.ndarray  # the last good value
    n_w: np.ndarray  # comparable days on this weekday
    tot_n: np.ndarray  # comparable days, and repeats on them
    tot_rep: np.ndarray
    k: np.ndarray  # the repeat run's length
    p: np.ndarray  # the series' own repeat rate
    p_quant: np.ndarray  # the chance of an honest repeat at its precision
    p_eff: np.ndarray  # the chance used
    n_elig: int
    k_same: int  # series repeating
    lam: float  # ... expected by chance
    joint: float  # the chance of that many
    flag: np.ndarray


def _repeats(col: Column) -> _Repeats | None:
    """The repeats at ``col.t`` (None: a holiday, or no eligible series repeats)."""
    walk, t, rows = col.walk, col.t, col.rows
    values, weekday, holiday = walk.values, walk.weekday, walk.holiday
    st, sens = walk.state(MovingState), col.panel.sensitivity
    if holiday is not None and holiday[t]:
        return None  # a calendar holiday: nothing is expected to move
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
        return None
    same = np.isclose(v, last, rtol=1e-12, atol=0.0) & eligible
    if not same.any():
        return None
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
        p_quant[i] = repeat_chance(values[int(rows[i]), max(0, t - sens.training) : t])
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
    return _Repeats(wd, v, last, n_w, tot_n, tot_rep, k, p, p_quant, p_eff, n_elig, k_same,
                    lam, joint, flag)  # fmt: skip


def repeat_chance(win: np.ndarray) -> float:
    """The chance that a series repeats its value honestly: its values' precision (the
    quantum ``q``: 0.0001 for a rate given to 4 decimals, 1 for a count, 0 for a full-precision
    float) against its usual move ``s`` (robust sigma of its interval-to-interval changes):
    ``q / (sqrt(2 pi) s)``, the chance a move of that size rounds to nothing.

    >>> eur = 1.10 + 0.0045 * np.cumsum(np.tile([1.0, -0.6, 0.3, -0.8], 10))
    >>> round(repeat_chance(np.round(eur, 4)), 3)  # EUR/USD to 4 decimals: about 1 in 100
    0.01
    >>> repeat_chance(eur / 7.46)  # a cross rate at full precision: never by chance
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
