"""The ``late`` cause (for :func:`splice.watch.cause.classify`): the values are the source's
values N intervals earlier, said by the payload's own as-of date (:func:`late_by_payload`) or,
when the as-of claims to be current, by the values (:func:`late_by_values`): a late feed repeats
the last interval once and then keeps moving by ordinary one-interval moves, where a frozen feed
that recovers jumps by the (k+1)-interval move it missed."""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from splice.watch.cause_words import days_words, iso_day, weekday_day

#: Below this many repeating series the moves after a repeat say too little to call it late.
MIN_SERIES_FOR_LATE = 5


def late_by_payload(source: dict[str, Any] | None) -> dict[str, Any] | None:
    """Late by N with an honest as-of: consecutive stale intervals trail by the same N."""
    for p in (source or {}).get("payload_dates", []):
        stale = [d for d in p["days"] + p.get("later", []) if d["stale"]]
        if len(stale) < 2:
            continue
        lags = [int(d.get("lag_intervals") or 0) for d in stale]
        olds = [d["oldest"] for d in stale]
        n = lags[0]
        if n >= 1 and all(x == n for x in lags) and len(set(olds)) == len(olds):
            days = [d["interval"] for d in stale]
            ongoing = bool(p.get("later"))
            return {
                "class": "late",
                "n": n,
                "words": (
                    f"late by {n} interval{'s' if n > 1 else ''}: the payload's own "
                    f"{p['column']} trails every interval by {n} (as of {weekday_day(olds[0])} for "
                    f"{weekday_day(days[0])}, ... as of {weekday_day(olds[-1])} for {weekday_day(days[-1])}), while it "
                    f"usually trails by {p['usual_lag_days']} days"
                    + ("; still late on the latest interval" if ongoing else "")
                ),
                "evidence": {
                    "column": p["column"],
                    "lag_intervals": n,
                    "usual_lag_days": p["usual_lag_days"],
                    "as_of": {d["interval"]: d["oldest"] for d in stale},
                    "how": "payload as-of",
                },
                "intervals": days,
            }
    return None


def late_by_values(
    stopped: dict[str, Any], history: dict[str, list[tuple[Any, float]]] | None
) -> dict[str, Any] | None:
    """Late by k with an as-of that claims otherwise: ordinary moves after the repeat.

    The statistic is the mean over the repeating series of |move| / the series' usual
    one-interval move (MAD of its moves before the repeat).  Series move together (a currency
    against the dollar), each move is taken less the median move of all series on that
    interval, and the statistic is compared with its own history on the earlier intervals:
    late when it is nearer (in standard deviations of its logarithm) to the one-interval moves
    than to the (k+1)-interval moves, else a freeze that recovered.  ``p_late`` (one-interval
    moves at least as big) and ``p_recovered`` ((k+1)-interval moves at most as big) are said.
    """
    if not history:
        return None
    repeats = stopped["evidence"]["repeats"]
    k_of = [int(r["run"]) for r in repeats.values()]
    if not k_of:
        return None
    k = max(set(k_of), key=k_of.count)
    vals: dict[str, dict[str, float]] = {}  # series -> day -> log value (or value)
    after: dict[str, tuple[str, str]] = {}  # series -> (last repeat, the interval after it)
    after_days: set[str] = set()
    ongoing = 0
    since_all = min((r["since"] or min(r["intervals"])) for r in repeats.values())
    for s, r in repeats.items():
        pts = sorted(((iso_day(d), float(v)) for d, v in history.get(s, []) if v is not None and
                      math.isfinite(v)), key=lambda x: x[0])  # fmt: skip
        days = [d for d, _ in pts]
        last_rep = max(r["intervals"])
        if last_rep not in days:
            continue
        i = days.index(last_rep)
        if i + 1 >= len(pts):
            ongoing += 1
            continue
        positive = all(v > 0 for _, v in pts)
        vals[s] = {d: (math.log(v) if positive else v) for d, v in pts}
        after[s] = (days[i], days[i + 1])
        after_days.update(days[i + 1 :])
    if len(vals) < MIN_SERIES_FOR_LATE or ongoing > len(vals):
        return None
    common = sorted(d for d in set.intersection(*(set(v) for v in vals.values())) if d < since_all)
    if len(common) < 12:
        return None

    def residuals(pairs: dict[str, tuple[str, str]]) -> dict[str, float]:
        # each series' move less the move all series made together (the dollar's, say)
        raw = {s: vals[s][b] - vals[s][a] for s, (a, b) in pairs.items()}
        mid = median(raw.values())
        return {s: x - mid for s, x in raw.items()}

    one = [residuals({s: (common[j - 1], common[j]) for s in vals}) for j in range(1, len(common))]
    scale = {s: median(abs(r[s]) for r in one) * 1.4826 for s in vals}
    names = [s for s in vals if scale[s] > 0]
    if len(names) < MIN_SERIES_FOR_LATE:
        return None

    def stat(res: dict[str, float]) -> float:
        return sum(abs(res[s]) / scale[s] for s in names) / len(names)

    s_one = [stat(r) for r in one]
    s_skip = [
        stat(residuals({s: (common[j - k - 1], common[j]) for s in vals}))
        for j in range(k + 1, len(common))
    ]
    obs = stat(residuals(after))

    def distance(xs: list[float], at: float | None = None) -> float:
        logs = [math.log(x) for x in xs if x > 0]
        mu = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / max(len(logs) - 1, 1)) or 1e-9
        return abs(math.log(max(obs if at is None else at, 1e-12)) - mu) / sd

    s1, sk = median(s_one), median(s_skip)
    p_late = sum(1 for x in s_one if x >= obs) / len(s_one)
    p_recovered = sum(1 for x in s_skip if x <= obs) / len(s_skip)
    ratio = (obs / s1) ** 2 if s1 > 0 else float("inf")
    verdict = {"ratio": round(ratio, 2), "series": len(names), "p_late": round(p_late, 3),
               "p_recovered": round(p_recovered, 3)}  # fmt: skip
    if distance(s_one) >= distance(s_skip):
        stopped["evidence"]["moves_after"] = verdict | {"verdict": "recovered"}
        return None
    obs_n = len(names)
    # the fault lasts until the feed catches up: the first later move as big as a
    # (k+1)-interval move (the interval it skipped) ends it there
    later = sorted(after_days)
    caught_up = None
    for a, b in zip(later, later[1:], strict=False):
        if not all(a in vals[s] and b in vals[s] for s in names):
            continue
        at = stat(residuals({s: (a, b) for s in names}))
        if distance(s_skip, at) < distance(s_one, at):
            caught_up = b
            break
    kept = [d for d in later if caught_up is None or d < caught_up]
    days = sorted(set(stopped["intervals"]) | set(kept))
    return {
        "class": "late",
        "n": k,
        "words": (
            f"late by {k} interval{'s' if k > 1 else ''}: {stopped['evidence']['series']} series "
            f"repeated {weekday_day(stopped['evidence']['same_as'])}'s values on "
            f"{days_words(stopped['intervals'])} and then kept moving by ordinary one-interval moves "
            f"(the next move, {ratio:.2f}x the usual squared move over {obs_n} series, was "
            f"matched or beaten by {p_late:.0%} of earlier one-interval moves and by only "
            f"{p_recovered:.0%} of {k + 1}-interval moves, the jump a feed that recovered would "
            f"make), so "
            + (
                f"every interval up to {weekday_day(max(days))} holds the values of {k} interval"
                f"{'s' if k > 1 else ''} before, whatever its as-of date says; it caught up on "
                f"{weekday_day(caught_up)} (a {k + 1}-interval move)"
                if caught_up
                else f"every interval since holds the values of {k} interval"
                f"{'s' if k > 1 else ''} before, whatever its as-of date says"
            )
        ),  # fmt: skip
        "evidence": {
            "how": "moves after the repeat",
            "move_ratio": round(ratio, 3),
            "recovered_ratio": round((sk / s1) ** 2, 3) if s1 > 0 else None,
            "p_late": round(p_late, 3),
            "p_recovered": round(p_recovered, 3),
            "series": obs_n,
            "same_as": stopped["evidence"]["same_as"],
            "caught_up": caught_up,
        },
        "intervals": days,
    }
