"""The fault behind an incident, classified and said in words with its numbers.

:func:`classify` reads what the incident's anomalies at the origin say, the source's own records
(:mod:`splice.watch.source_evidence`), the stored history of the series that stopped, and the
failed checks of the run journal, and names the fault:

- ``stopped_moving``: the values repeat an earlier interval's values (which day, how many
  intervals in a row, how many series);
- ``late``: the values are the source's values N intervals earlier.  With an honest as-of date
  the payload says so: its as-of trails the interval by the same N intervals on consecutive
  intervals while it keeps advancing (a freeze keeps one as-of, so its lag grows).  With an
  as-of that claims to be current, the values say it: a late feed repeats the last interval once
  (the day it fell behind) and then keeps moving by ordinary one-interval moves, where a frozen
  feed that recovers jumps by the (k+1)-interval move it missed.  The mean size of the move
  right after the repeat across the repeating series (each in units of its own usual move) is
  compared with the same statistic on the earlier intervals (series move together, so the
  statistic is judged against its own history): the share of one-interval moves at least as
  big (``p_late``) against the share of (k+1)-interval moves at most as big
  (``p_recovered``); the larger says which it is (at least ``MIN_SERIES_FOR_LATE`` series are
  needed to say so);
- ``inverted``: the value is close to the reciprocal of the expected one;
- ``unit_change``: value / expected is close to 10^k for an integer k != 0;
- ``duplicated_load``: the source relation holds more rows than distinct keys for the interval,
  written by several loads;
- ``late_rows``: rows of an interval loaded after the node reading them processed that interval
  (Splice's build evidence): the interval needs a restatement;
- ``failed_ingestion``: the ingestion job feeding the origin failed for those intervals and no
  later run loaded them (the job, its runs, each run's error: :mod:`splice.watch.cause_runs`);
- ``domain_change`` / ``slice_missing`` (:mod:`splice.watch.cause_domain`): the values of a key
  changed (and no longer match the other side of a join), or one value of a dimension lost
  its rows;
- ``missing_rows``: the origin lost rows and nothing says they arrived late;
- ``failed_audit``: an audit or test of the origin (or downstream of it) failed in the runs;
- else the detector's own words (``level_shift``, ``spike``) or ``unknown``.

When several apply, ``classes`` lists them all and ``class`` is the most specific (the order of
:data:`PRIORITY`).  ``intervals`` (ISO dates at the origin) lists the intervals the fault covers
when the evidence says more than the flagged ones (a feed still late, rows that arrived late).
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import date
from statistics import median
from typing import Any

#: The most specific cause first: a duplicated load explains the failed uniqueness audit it
#: causes, a unit change explains the range audit it fails.
#: Classes read from the values alone (not from the load records or the runs).
VALUE_CLASSES = ("stopped_moving", "inverted", "unit_change")
PRIORITY = (
    "code_change",
    "duplicated_load",
    "late_rows",
    "failed_ingestion",
    "late",
    "stopped_moving",
    "inverted",
    "unit_change",
    "domain_change",
    "slice_missing",
    "missing_rows",
    "failed_audit",
    "level_shift",
    "spike",
    "unknown",
)
#: How close value * expected must be to 1 (in log terms, against log(value / expected)).
INVERT_TOLERANCE = 0.25
#: How close log10(value / expected) must be to an integer k for a unit change.
UNIT_TOLERANCE = 0.05
#: Below this many repeating series the moves after a repeat say too little to call it late.
MIN_SERIES_FOR_LATE = 5
VALUE_DETECTORS = ("spike", "level_shift", "jump")
ROWS_DETECTORS = ("volume_drop", "missing")


def _wd(iso: str) -> str:
    return f"{iso} ({date.fromisoformat(iso).strftime('%a')})"


def _days(isos: list[str], limit: int = 4) -> str:
    isos = sorted(set(isos))
    if len(isos) > limit:
        return f"{_wd(isos[0])} .. {_wd(isos[-1])} ({len(isos)} intervals)"
    return ", ".join(_wd(d) for d in isos)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _series(a: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in (a.get("dims") or {}).items()) or "(all)"


def _iso(d: Any) -> str:
    return d.isoformat() if hasattr(d, "isoformat") else str(d)


# -- the classes ---------------------------------------------------------------------------------
def _stopped(anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:
    stops = [a for a in anomalies if a["detector"] == "stopped_moving"]
    if not stops:
        return None
    runs: dict[str, dict[str, Any]] = {}
    for a in sorted(stops, key=lambda a: a["interval"]):
        data = a.get("data") or {}
        run = runs.setdefault(_series(a), {"days": [], "same_as": data.get("same_as"),
                                           "since": data.get("since"), "run": 0})  # fmt: skip
        run["days"].append(_iso(a["interval"]))
        run["run"] = max(run["run"], int(data.get("run") or 1))
    same = defaultdict(list)
    for s, r in runs.items():
        same[r["same_as"]].append(s)
    main_same, series = max(same.items(), key=lambda kv: len(kv[1]))
    days = sorted({d for r in runs.values() for d in r["days"]})
    k = max(r["run"] for r in runs.values())
    eligible = max(int((a.get("data") or {}).get("series_eligible") or 0) for a in stops)
    of = f" of {eligible}" if eligible >= len(runs) else ""
    groups = sorted(same.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))
    parts = []
    for same_as, names in groups[:3]:
        g_days = sorted({d for s in names for d in runs[s]["days"]})
        g_k = max(runs[s]["run"] for s in names)
        part = (
            f"{len(names)}{of if len(groups) == 1 else ''} series "
            f"{'repeats' if len(names) == 1 else 'repeat'} "
            f"{_wd(same_as) if same_as else 'an earlier interval'}'s values on {_days(g_days)}"
            + (f" ({g_k} intervals in a row)" if g_k > 1 else "")
        )
        if len(names) <= 5:
            part += f" ({', '.join(sorted(names))})"
        parts.append(part)
    if len(groups) > 3:
        parts.append(f"{sum(len(n) for _, n in groups[3:])} more series repeat other days")
    words = "stopped moving: " + "; ".join(parts)
    return {
        "class": "stopped_moving",
        "words": words,
        "n": k,
        "_cells": sum(len(r["days"]) for r in runs.values()),
        "evidence": {
            "series": len(runs),
            "series_eligible": eligible or None,
            "same_as": main_same,
            "repeats": {
                s: {
                    "same_as": r["same_as"],
                    "since": r["since"],
                    "run": r["run"],
                    "intervals": r["days"],
                }
                for s, r in sorted(runs.items())
            },  # fmt: skip
            "intervals": days,
        },
        "intervals": days,
        "_series": series,
    }


def _late_by_payload(source: dict[str, Any] | None) -> dict[str, Any] | None:
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
                    f"{p['column']} trails every interval by {n} (as of {_wd(olds[0])} for "
                    f"{_wd(days[0])}, ... as of {_wd(olds[-1])} for {_wd(days[-1])}), while it "
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


def _late_by_values(
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
        pts = sorted(((_iso(d), float(v)) for d, v in history.get(s, []) if v is not None and
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
            f"repeated {_wd(stopped['evidence']['same_as'])}'s values on "
            f"{_days(stopped['intervals'])} and then kept moving by ordinary one-interval moves "
            f"(the next move, {ratio:.2f}x the usual squared move over {obs_n} series, was "
            f"matched or beaten by {p_late:.0%} of earlier one-interval moves and by only "
            f"{p_recovered:.0%} of {k + 1}-interval moves, the jump a feed that recovered would "
            f"make), so "
            + (
                f"every interval up to {_wd(max(days))} holds the values of {k} interval"
                f"{'s' if k > 1 else ''} before, whatever its as-of date says; it caught up on "
                f"{_wd(caught_up)} (a {k + 1}-interval move)"
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


def _ratios(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inverted and unit-change findings from value anomalies (one vote per series)."""
    per: dict[str, list[tuple[str, float, dict[str, Any]]]] = defaultdict(list)
    n_series: set[str] = set()
    for a in anomalies:
        if a.get("kind", "value") != "value" or a["detector"] not in VALUE_DETECTORS:
            continue
        v, e = a.get("value"), a.get("expected")
        if v is None or e is None or not (v > 0 and e > 0):
            continue
        n_series.add(_series(a))
        lr = math.log(v / e)
        if abs(lr) < 0.05:
            continue
        if abs(math.log(v * e)) <= INVERT_TOLERANCE * abs(lr):
            per["inverted"].append((_series(a), v / e, a))
        k = round(lr / math.log(10))
        if k != 0 and abs(lr / math.log(10) - k) <= UNIT_TOLERANCE:
            per[f"unit:{k}"].append((_series(a), v / e, a))
    out = []
    for key, items in per.items():
        series = sorted({s for s, _, _ in items})
        ex = min(items, key=lambda x: _iso(x[2]["interval"]))[2]
        days = sorted({_iso(a["interval"]) for _, _, a in items})
        ratio = ex["value"] / ex["expected"]
        names = ", ".join(series[:5]) + (", ..." if len(series) > 5 else "")
        if key == "inverted":
            out.append({
                "class": "inverted", "n": -1,
                "words": (
                    f"inverted: {names} reads {_num(ex['value'])} on {_wd(_iso(ex['interval']))} "
                    f"where {_num(ex['expected'])} was expected: value x expected = "
                    f"{ex['value'] * ex['expected']:.3g}, the reciprocal (1/{_num(ex['expected'])}"
                    f" = {_num(1 / ex['expected'])}) of the expected value"
                ),
                "evidence": {"series": series, "value": ex["value"], "expected": ex["expected"],
                             "ratio": ratio, "product": ex["value"] * ex["expected"],
                             "intervals": days},  # fmt: skip
                "intervals": days, "_weight": len(series), "_cells": len(items),
            })  # fmt: skip
        else:
            k = int(key.split(":")[1])
            out.append({
                "class": "unit_change", "n": k,
                "words": (
                    f"unit change: {names} reads {_num(ex['value'])} on "
                    f"{_wd(_iso(ex['interval']))} where {_num(ex['expected'])} was expected, "
                    f"{ratio:.4g}x: a factor of 10^{k}"
                ),
                "evidence": {"series": series, "value": ex["value"], "expected": ex["expected"],
                             "ratio": ratio, "k": k, "factor": 10.0**k, "intervals": days},  # fmt: skip
                "intervals": days, "_weight": len(series), "_cells": len(items),
            })  # fmt: skip
    return out


def _still_off(f: dict[str, Any], history: dict[str, list[tuple[Any, float]]]) -> None:
    """Add to an inverted or unit-change finding every later interval of its series that is
    still off by the same factor (a fault that lasts is in scope until it stops)."""
    ev = f["evidence"]
    e, first = ev["expected"], min(ev["intervals"])
    days = set(f["intervals"])
    for s in ev["series"]:
        for d, v in history.get(s, []):
            day = _iso(d)
            if day < first or v is None or not v > 0:
                continue
            if f["class"] == "inverted":
                off = abs(math.log(v * e)) <= INVERT_TOLERANCE * abs(math.log(ev["ratio"]))
            else:
                off = abs(math.log10(v / e) - ev["k"]) <= UNIT_TOLERANCE
            if off:
                days.add(day)
    f["intervals"] = sorted(days)
    ev["intervals"] = f["intervals"]


def _duplicated(source: dict[str, Any] | None) -> dict[str, Any] | None:
    dups = [d for d in (source or {}).get("duplicates", []) if d["rows"] > d["distinct"]]
    if not dups:
        return None
    rel = (source or {}).get("relation", "the source relation")
    d0 = dups[0]
    copies = d0["rows"] / max(d0["distinct"], 1)
    loads = d0.get("loads") or []
    load_words = ""
    if len(loads) >= 2:
        load_words = ", written by loads " + " and ".join(
            f"{ld['load_id']} ({ld['rows']:,} rows at {str(ld['at'])[:19]})" for ld in loads[:4]
        )
    return {
        "class": "duplicated_load",
        "n": round(copies),
        "words": (
            f"duplicated load: {rel} holds {d0['rows']:,} rows for {d0['distinct']:,} distinct "
            f"{', '.join(d0['keys'])} on {_wd(d0['interval'])} ({copies:.2g} copies of each)"
            + load_words
            + (f"; {len(dups)} intervals have duplicates" if len(dups) > 1 else "")
        ),
        "evidence": {
            "relation": rel,
            "intervals": [
                {k: d[k] for k in ("interval", "rows", "distinct", "keys")}
                | {"load_ids": [ld["load_id"] for ld in d.get("loads") or []]}
                for d in dups
            ],
            "load_ids": sorted({ld["load_id"] for d in dups for ld in d.get("loads") or []}),
        },
        "intervals": [d["interval"] for d in dups],
    }


def _late_rows(source: dict[str, Any] | None) -> dict[str, Any] | None:
    late = (source or {}).get("late_rows") or []
    if not late:
        return None
    days = sorted({r["interval"] for r in late})
    total = sum(r["rows"] for r in late)
    r0 = late[0]
    node = r0.get("node") or "the node reading them"
    rel = (source or {}).get("relation", "the source")
    return {
        "class": "late_rows",
        "n": total,
        "words": (
            f"late rows: {total:,} rows of {rel} for {_days(days)} arrived after {node} had "
            f"processed {'that interval' if len(days) == 1 else 'those intervals'} (load "
            f"{r0['load_id']} at {str(r0['at'])[:19]}, processed at {str(r0['processed_at'])[:19]})"
            f"; {'it needs' if len(days) == 1 else 'they need'} a restatement: {', '.join(days)}"
        ),
        "evidence": {"relation": rel, "node": node, "rows": late, "restate": days},
        "intervals": days,
    }


def _missing_rows(anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:
    drops = [a for a in anomalies if a["detector"] in ROWS_DETECTORS]
    if not drops:
        return None
    days = sorted({_iso(a["interval"]) for a in drops})
    a = drops[0]
    got = "no rows" if a["detector"] == "missing" or a.get("value") is None else (
        f"{_num(a['value'])} where {_num(a['expected'])} were expected"
        if a.get("expected") is not None
        else _num(a["value"])
    )  # fmt: skip
    return {
        "class": "missing_rows",
        "n": len(days),
        "words": f"missing rows: {a['metric']} has {got} on {_days(days)}, and no late load of "
        "them is on record",
        "evidence": {"intervals": days, "value": a.get("value"), "expected": a.get("expected")},
        "intervals": days,
    }


def _headline(anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:
    for det in ("level_shift", "spike", "jump"):
        items = [a for a in anomalies if a["detector"] == det]
        if items:
            a = items[0]
            cls = "level_shift" if det == "level_shift" else "spike"
            days = sorted({_iso(x["interval"]) for x in items})
            return {
                "class": cls,
                "n": len(days),
                "words": f"{'level shift' if cls == 'level_shift' else 'spike'}: {a['reason']}",
                "evidence": {"series": len({_series(x) for x in items}), "intervals": days},
                "intervals": days,
            }
    return None


def classify(
    anomalies: list[dict[str, Any]],
    source: dict[str, Any] | None = None,
    *,
    history: dict[str, list[tuple[Any, float]]] | None = None,
    checks: list[dict[str, Any]] | None = None,
    domain: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The incident's fault: ``{"class", "words", "evidence", "n", "classes", "intervals"}``.

    ``anomalies``: the incident's anomalies at its origin (as stored: detector, metric, dims,
    interval, value, expected, reason, data, kind); ``source``: :func:`source_evidence` of
    the relation feeding the origin (with ``late_rows`` when :func:`splice.watch.cause_evidence.gather` found any);
    ``history``: the stored points of the series that stopped moving (series label -> [(day,
    value)]); ``checks``: the failed checks of the runs (:func:`splice.watch.cause_evidence.failed_checks`);
    ``domain``: :func:`splice.watch.cause_domain.domain_evidence`.

    >>> a = {"detector": "spike", "metric": "fx_rate", "dims": {"currency": "EUR"},
    ...      "interval": date(2026, 9, 28), "value": 0.877, "expected": 1.14, "kind": "value",
    ...      "reason": "0.877 on Mon", "data": {}}
    >>> f = classify([a])
    >>> f["class"], f["n"]
    ('inverted', -1)
    >>> classify([])["class"]
    'unknown'
    """
    from splice.watch.cause_runs import failed_audit, failed_ingestion

    found: list[dict[str, Any]] = []
    for f in (_duplicated(source), _late_rows(source), failed_ingestion(source, anomalies)):
        if f:
            found.append(f)
    stopped = _stopped(anomalies)
    late = _late_by_payload(source)
    if late is None and stopped is not None:
        late = _late_by_values(stopped, history)
    if late:
        found.append(late)
    if stopped:
        found.append(stopped)
    ratio = sorted(_ratios(anomalies), key=lambda f: -f["_weight"])
    if ratio and history:
        _still_off(ratio[0], history)
    found += ratio[:1] + [f for f in ratio[1:] if f["class"] != ratio[0]["class"]]
    from splice.watch.cause_domain import classify_domain

    found += classify_domain(anomalies, domain)
    if not any(f["class"] in ("late_rows", "duplicated_load", "failed_ingestion") for f in found):
        miss = _missing_rows(anomalies)
        if miss:
            from splice.watch.cause_runs import empty_loads

            said = empty_loads(source, miss["intervals"])  # the job loaded them, empty
            miss["words"] += f"; {said}" if said else ""
            found.append(miss)
    audit = failed_audit(checks)
    if audit:
        found.append(audit)
    if not found:
        head = _headline(anomalies)
        if head:
            found.append(head)
    if not found:
        return {"class": "unknown", "words": "no evidence names the fault", "evidence": {},
                "n": None, "classes": ["unknown"], "intervals": []}  # fmt: skip
    found.sort(key=lambda f: PRIORITY.index(f["class"]))
    values = [f for f in found if f["class"] in VALUE_CLASSES]
    if values and found[0] is values[0]:
        # the fault is in the values themselves: the class most of the bad points show (one
        # currency x100 for two months is a unit change, though three others repeated once)
        best = max(values, key=lambda f: f.get("_cells", 0))
        found.remove(best)
        found.insert(0, best)
    top = found[0]
    classes = list(dict.fromkeys(f["class"] for f in found))
    words = top["words"]
    for f in found[1:]:
        if f["class"] == "failed_audit" or (
            f["class"] == "stopped_moving" and top["class"] != "late"
        ):
            words += "; " + f["words"]
    return {
        "class": top["class"],
        "words": words,
        "evidence": top["evidence"]
        | ({"also": {f["class"]: f["evidence"] for f in found[1:]}} if len(found) > 1 else {}),
        "n": top.get("n"),
        "classes": classes,
        "intervals": sorted(set(top.get("intervals") or [])),
    }


def cause_text(fault: dict[str, Any], record: str | None) -> str:
    """``diagnosis["cause"]``: the fault in words, then what the load records say."""
    if fault.get("class") in (None, "unknown"):
        return record or ""
    words = fault["words"]
    words = words[0].upper() + words[1:]
    return f"{words}. {record}" if record else f"{words}."


def title_words(fault: dict[str, Any] | None) -> str | None:
    """The incident title's verb for a fault (None: let the detector say it).

    >>> title_words({"class": "late", "n": 1}), title_words({"class": "unit_change", "n": 2})
    ('is late by 1 interval', 'changed unit (x10^2)')
    """
    if not fault:
        return None
    n = fault.get("n")
    return {
        "stopped_moving": "stopped moving",
        "late": f"is late by {n} interval{'s' if n != 1 else ''}",
        "inverted": "is inverted",
        "unit_change": f"changed unit (x10^{n})",
        "duplicated_load": "read rows loaded twice" if n == 2 else "read duplicated rows",
        "late_rows": "missed rows that arrived late",
        "failed_ingestion": "was not loaded (its ingestion failed)",
        "missing_rows": "lost rows",
        "failed_audit": "failed a check",
        "domain_change": "changed the values of a key",
        "slice_missing": "lost a slice of its rows",
        "code_change": "was built with new code that changed published values"
        if (fault.get("evidence") or {}).get("how") == "restated values"
        else "was built with new code",
    }.get(str(fault.get("class")))
