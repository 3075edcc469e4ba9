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
  (``p_recovered``); the larger says which it is (at least :data:`splice.watch.cause_late.MIN_SERIES_FOR_LATE` series are
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
from typing import Any

from splice.watch.cause_late import late_by_payload, late_by_values
from splice.watch.cause_words import (
    ROWS_DETECTORS,
    VALUE_DETECTORS,
    days_words,
    iso_day,
    number_words,
    series_words,
    weekday_day,
)

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


# -- the classes ---------------------------------------------------------------------------------
def _stopped(anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:
    stops = [a for a in anomalies if a["detector"] == "stopped_moving"]
    if not stops:
        return None
    runs: dict[str, dict[str, Any]] = {}
    for a in sorted(stops, key=lambda a: a["interval"]):
        data = a.get("data") or {}
        run = runs.setdefault(series_words(a), {"days": [], "same_as": data.get("same_as"),
                                           "since": data.get("since"), "run": 0})  # fmt: skip
        run["days"].append(iso_day(a["interval"]))
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
            f"{weekday_day(same_as) if same_as else 'an earlier interval'}'s values on {days_words(g_days)}"
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
        n_series.add(series_words(a))
        lr = math.log(v / e)
        if abs(lr) < 0.05:
            continue
        if abs(math.log(v * e)) <= INVERT_TOLERANCE * abs(lr):
            per["inverted"].append((series_words(a), v / e, a))
        k = round(lr / math.log(10))
        if k != 0 and abs(lr / math.log(10) - k) <= UNIT_TOLERANCE:
            per[f"unit:{k}"].append((series_words(a), v / e, a))
    out = []
    for key, items in per.items():
        series = sorted({s for s, _, _ in items})
        ex = min(items, key=lambda x: iso_day(x[2]["interval"]))[2]
        days = sorted({iso_day(a["interval"]) for _, _, a in items})
        ratio = ex["value"] / ex["expected"]
        names = ", ".join(series[:5]) + (", ..." if len(series) > 5 else "")
        if key == "inverted":
            out.append({
                "class": "inverted", "n": -1,
                "words": (
                    f"inverted: {names} reads {number_words(ex['value'])} on {weekday_day(iso_day(ex['interval']))} "
                    f"where {number_words(ex['expected'])} was expected: value x expected = "
                    f"{ex['value'] * ex['expected']:.3g}, the reciprocal (1/{number_words(ex['expected'])}"
                    f" = {number_words(1 / ex['expected'])}) of the expected value"
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
                    f"unit change: {names} reads {number_words(ex['value'])} on "
                    f"{weekday_day(iso_day(ex['interval']))} where {number_words(ex['expected'])} was expected, "
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
            day = iso_day(d)
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
            f"{', '.join(d0['keys'])} on {weekday_day(d0['interval'])} ({copies:.2g} copies of each)"
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
            f"late rows: {total:,} rows of {rel} for {days_words(days)} arrived after {node} had "
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
    days = sorted({iso_day(a["interval"]) for a in drops})
    a = drops[0]
    got = "no rows" if a["detector"] == "missing" or a.get("value") is None else (
        f"{number_words(a['value'])} where {number_words(a['expected'])} were expected"
        if a.get("expected") is not None
        else number_words(a["value"])
    )  # fmt: skip
    return {
        "class": "missing_rows",
        "n": len(days),
        "words": f"missing rows: {a['metric']} has {got} on {days_words(days)}, and no late load of "
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
            days = sorted({iso_day(x["interval"]) for x in items})
            return {
                "class": cls,
                "n": len(days),
                "words": f"{'level shift' if cls == 'level_shift' else 'spike'}: {a['reason']}",
                "evidence": {"series": len({series_words(x) for x in items}), "intervals": days},
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

    >>> from datetime import date
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
    late = late_by_payload(source)
    if late is None and stopped is not None:
        late = late_by_values(stopped, history)
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
