"""The fault behind an incident, classified from small inputs (golden-style: the class, its
number and the words a person reads)."""

from __future__ import annotations

import math
import random
from datetime import date, timedelta
from typing import Any

from splice.watch.cause import classify
from splice.watch.cause_evidence import late_rows

MON = date(2026, 9, 28)


def _a(detector: str, interval: date, value: float | None = None,
       expected: float | None = None, dims: dict[str, str] | None = None,
       kind: str = "value", metric: str = "fx_rate", **data: Any) -> dict[str, Any]:  # fmt: skip
    return {"detector": detector, "metric": metric, "dims": dims or {}, "interval": interval,
            "value": value, "expected": expected, "kind": kind, "reason": f"{detector} on {interval}",
            "data": data}  # fmt: skip


def _stopped(cur: str, day: date, same_as: date, run: int = 1, since: date | None = None,
             eligible: int = 29) -> dict[str, Any]:  # fmt: skip
    return _a("stopped_moving", day, 1.0, 1.0, {"currency": cur}, same_as=same_as.isoformat(),
              since=(since or day).isoformat(), run=run, series_eligible=eligible)  # fmt: skip


def test_stopped_moving_names_the_day_it_repeats_and_the_run() -> None:
    anomalies = [_stopped(c, MON, date(2026, 9, 25)) for c in ("EUR", "GBP", "JPY")] + [
        _stopped(c, MON + timedelta(1), date(2026, 9, 25), run=2, since=MON)
        for c in ("EUR", "GBP", "JPY")
    ]
    f = classify(anomalies)
    assert (f["class"], f["n"]) == ("stopped_moving", 2)
    assert f["evidence"]["same_as"] == "2026-09-25"
    assert f["words"] == (
        "stopped moving: 3 of 29 series repeat 2026-09-25 (Fri)'s values on 2026-09-28 (Mon), "
        "2026-09-29 (Tue) (2 intervals in a row) (currency=EUR, currency=GBP, currency=JPY)"
    )
    assert f["intervals"] == ["2026-09-28", "2026-09-29"]
    # series that repeat different days are said apart
    f = classify(anomalies + [_stopped("DKK", MON + timedelta(1), MON)])
    assert f["words"] == (
        "stopped moving: 3 series repeat 2026-09-25 (Fri)'s values on 2026-09-28 (Mon), "
        "2026-09-29 (Tue) (2 intervals in a row) (currency=EUR, currency=GBP, currency=JPY); "
        "1 series repeats 2026-09-28 (Mon)'s values on 2026-09-29 (Tue) (currency=DKK)"
    )


def _payload(days: list[tuple[str, str, int]], later: list[tuple[str, str, int]] | None = None,
             ) -> dict[str, Any]:  # fmt: skip
    def rec(d: tuple[str, str, int]) -> dict[str, Any]:
        return {"interval": d[0], "oldest": d[1], "newest": d[1], "rows": 30,
                "lag_days": (date.fromisoformat(d[0]) - date.fromisoformat(d[1])).days,
                "lag_intervals": d[2], "stale": True}  # fmt: skip

    return {"relation": "warehouse.raw.fx_rates", "loads": [], "payload_dates": [
        {"column": "as_of", "usual_lag_days": 0, "days": [rec(d) for d in days],
         "later": [rec(d) for d in later or []]}]}  # fmt: skip


def test_late_with_an_honest_as_of_is_late_by_the_constant_lag() -> None:
    src = _payload([("2026-09-28", "2026-09-25", 1)],
                   later=[("2026-09-29", "2026-09-28", 1), ("2026-09-30", "2026-09-29", 1)])  # fmt: skip
    f = classify([_stopped("EUR", MON, date(2026, 9, 25))], src)
    assert (f["class"], f["n"]) == ("late", 1)
    assert f["intervals"] == ["2026-09-28", "2026-09-29", "2026-09-30"]
    assert f["classes"] == ["late", "stopped_moving"]
    assert "late by 1 interval: the payload's own as_of trails every interval by 1" in f["words"]


def test_a_freeze_keeps_its_as_of_so_it_is_not_late() -> None:
    src = _payload([("2026-09-28", "2026-09-25", 1), ("2026-09-29", "2026-09-25", 2)])
    f = classify([_stopped("EUR", MON, date(2026, 9, 25))], src)
    assert f["class"] == "stopped_moving"


def _walks(n_series: int, days: list[date], seed: int) -> dict[str, list[list[Any]]]:
    rng = random.Random(seed)
    out = {}
    for i in range(n_series):
        v = 1.0 + i
        pts = []
        for d in days:
            v *= math.exp(rng.gauss(0, 0.005))
            pts.append([d.isoformat(), v])
        out[f"currency=C{i}"] = pts
    return out


def _business_days(start: date, end: date) -> list[date]:
    return [start + timedelta(i) for i in range((end - start).days + 1)
            if (start + timedelta(i)).weekday() < 5]  # fmt: skip


def _history(
    kind: str, seed: int = 2
) -> tuple[dict[str, list[tuple[str, float]]], list[dict[str, Any]]]:
    """20 series: Monday repeats Friday; then a late feed (ordinary moves on) or a freeze that
    recovered on Tuesday (a two-day move)."""
    days = _business_days(date(2026, 6, 1), date(2026, 9, 30))
    true = _walks(20, days, seed)
    fri, mon = days.index(date(2026, 9, 25)), days.index(MON)
    hist: dict[str, list[tuple[str, float]]] = {}
    anomalies = []
    for s, pts in true.items():
        vals = [v for _, v in pts]
        if kind == "late":
            seen = vals[:mon] + [vals[fri]] + [vals[j - 1] for j in range(mon + 1, len(vals))]
        else:
            seen = vals[:mon] + [vals[fri]] + vals[mon + 1 :]
        hist[s] = [(d.isoformat(), v) for d, v in zip(days, seen, strict=True)]
        anomalies.append(_stopped(s.split("=")[1], MON, date(2026, 9, 25), eligible=20))
    return hist, anomalies


def test_late_with_a_lying_as_of_is_seen_in_the_moves_after_the_repeat() -> None:
    hist, anomalies = _history("late")
    f = classify(anomalies, {"relation": "r", "payload_dates": []}, history=hist)
    assert (f["class"], f["n"]) == ("late", 1)
    assert f["evidence"]["p_late"] > f["evidence"]["p_recovered"]
    assert f["intervals"] == ["2026-09-28", "2026-09-29", "2026-09-30"]
    assert "kept moving by ordinary one-interval moves" in f["words"]


def test_a_freeze_that_recovered_is_stopped_moving_not_late() -> None:
    hist, anomalies = _history("recovered")
    f = classify(anomalies, {"relation": "r", "payload_dates": []}, history=hist)
    assert f["class"] == "stopped_moving"
    assert f["evidence"]["moves_after"]["verdict"] == "recovered"


def test_late_or_recovered_is_mostly_right_on_one_interval_of_evidence() -> None:
    """One move after the repeat is all the evidence there is: over 30 seeded panels of 20
    independent series each explanation is named right at least 3 times in 4."""
    for kind in ("late", "recovered"):
        right = 0
        for seed in range(30):
            hist, anomalies = _history(kind, seed)
            f = classify(anomalies, {"relation": "r", "payload_dates": []}, history=hist)
            right += (f["class"] == "late") == (kind == "late")
        assert right >= 23, (kind, right)


def test_inverted_says_the_reciprocal() -> None:
    f = classify([_a("spike", MON, 1 / 1.1703, 1.17, {"currency": "EUR"})])
    assert (f["class"], f["n"]) == ("inverted", -1)
    assert f["evidence"]["series"] == ["currency=EUR"]
    assert abs(f["evidence"]["product"] - 1.0) < 0.01
    assert "the reciprocal (1/1.17 = 0.8547) of the expected value" in f["words"]


def test_unit_change_says_the_power_of_ten() -> None:
    f = classify([_a("spike", MON, 0.6712, 0.006705, {"currency": "JPY"}),
                  _a("level_shift", MON + timedelta(1), 0.6701, 0.006705, {"currency": "JPY"})])  # fmt: skip
    assert (f["class"], f["n"]) == ("unit_change", 2)
    assert "a factor of 10^2" in f["words"]
    assert f["intervals"] == ["2026-09-28", "2026-09-29"]
    # a unit change that lasts: every later interval still x100 is part of it
    hist = {"currency=JPY": [("2026-09-25", 0.00671), ("2026-09-28", 0.6712),
                             ("2026-09-29", 0.6701), ("2026-09-30", 0.6690),
                             ("2026-10-01", 0.6702), ("2026-10-02", 0.00672)]}  # fmt: skip
    f = classify([_a("spike", MON, 0.6712, 0.006705, {"currency": "JPY"})], history=hist)
    assert f["intervals"] == ["2026-09-28", "2026-09-29", "2026-09-30", "2026-10-01"]
    # an ordinary jump of 30% is neither
    assert classify([_a("spike", MON, 1.3, 1.0)])["class"] == "spike"


def test_duplicated_load_names_the_counts_and_the_loads() -> None:
    src = {"relation": "warehouse.raw.bookings", "duplicates": [{
        "interval": "2026-09-28", "rows": 2218, "distinct": 1109, "keys": ["booking_id"],
        "loads": [{"interval": "2026-09-28", "load_id": "L1", "at": "2026-10-01T02:00:00", "rows": 1109},
                  {"interval": "2026-09-28", "load_id": "L2", "at": "2026-10-01T02:05:00", "rows": 1109}]}]}  # fmt: skip
    checks = [{"check": "pricing:audit:marts.fct_bookings_usd.unique_values",
               "of": ["pricing:marts.fct_bookings_usd"], "status": "fail", "first_run": "r1",
               "first_at": "2026-10-01T02:10:00", "runs": 1, "blocking": True,
               "message": "2218 rows failed"}]  # fmt: skip
    f = classify([_a("duplicates", MON, 1109, 0, kind="duplicates", metric="dups")], src,
                 checks=checks)  # fmt: skip
    assert (f["class"], f["n"]) == ("duplicated_load", 2)
    assert f["classes"] == ["duplicated_load", "failed_audit"]
    assert f["evidence"]["load_ids"] == ["L1", "L2"]
    assert f["words"].startswith(
        "duplicated load: warehouse.raw.bookings holds 2,218 rows for 1,109 distinct booking_id "
        "on 2026-09-28 (Mon) (2 copies of each), written by loads L1 (1,109 rows at "
        "2026-10-01T02:00:00) and L2"
    )
    assert (
        "audit unique_values of pricing:marts.fct_bookings_usd failed in 1 run since r1"
        in f["words"]
    )


def test_late_rows_are_the_rows_loaded_after_their_interval_was_processed() -> None:
    ms = 1790553600000  # 2026-09-28 00:00 UTC
    builds = [(1_790_700_000.0, [[ms - 86400000 * 90, ms + 86400000]])]
    rows = [{"interval": "2026-09-28", "load_id": "early", "at": "2026-09-29T00:00:00", "rows": 660},
            {"interval": "2026-09-28", "load_id": "late", "at": "2026-09-30T12:00:00", "rows": 440}]  # fmt: skip
    late = late_rows(rows, builds, "pricing:marts.fct_bookings_usd")
    assert [(r["load_id"], r["rows"]) for r in late] == [("late", 440)]
    src = {"relation": "warehouse.raw.bookings", "late_rows": late}
    f = classify([_a("volume_drop", MON, 660, 1100, kind="volume", metric="row_count")], src)
    assert (f["class"], f["n"]) == ("late_rows", 440)
    assert f["evidence"]["restate"] == ["2026-09-28"]
    assert "it needs a restatement: 2026-09-28" in f["words"]
    # the same drop with no late load on record: rows are missing
    f = classify([_a("volume_drop", MON, 660, 1100, kind="volume", metric="row_count")], {})
    assert f["class"] == "missing_rows"
    assert "660 where 1,100 were expected" in f["words"]


def test_a_failed_audit_alone_is_the_cause() -> None:
    checks = [{"check": "pricing:audit:fx.daily_rates.accepted_range", "of": ["pricing:fx.daily_rates"],
               "status": "fail", "first_run": "r20261001-020000-abc", "first_at": "2026-10-01T02:00:00",
               "runs": 2, "blocking": True, "message": None}]  # fmt: skip
    f = classify([_a("spike", MON, -1.3, 1.33, {"currency": "GBP"})], checks=checks)
    assert f["class"] == "failed_audit"
    assert f["words"] == (
        "failed check: audit accepted_range of pricing:fx.daily_rates failed in 2 runs since "
        "r20261001-020000-abc (2026-10-01T02:00:00) (blocking: the run stopped downstream)"
    )


def test_nothing_to_go_on_is_unknown() -> None:
    f = classify([], None)
    assert f == {"class": "unknown", "words": "no evidence names the fault", "evidence": {},
                 "n": None, "classes": ["unknown"], "intervals": []}  # fmt: skip
