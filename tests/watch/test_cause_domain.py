"""The domain and slice faults named from their anomalies: what changed, by how much, since when."""

from __future__ import annotations

from datetime import date

from splice.watch.cause import classify, title_words
from splice.watch.cause_domain import how_changed

MON, TUE = date(2026, 9, 28), date(2026, 9, 29)
CODES = ["AUD", "EUR", "GBP", "USD"]


def _domain(day: date, code: str) -> dict[str, object]:
    return {
        "detector": "domain_change", "metric": "p:fx/rows_by(currency)", "kind": "slice",
        "dims": {"currency": code}, "interval": day, "value": 0.0, "expected": 1.0,
        "reason": "...", "data": {"vanished": CODES, "new": [c.lower() for c in CODES],
                                  "n_vanished": 4, "n_new": 4, "n_expected": 4},
    }  # fmt: skip


def test_codes_in_lower_case_are_a_domain_change_that_no_longer_matches_the_join() -> None:
    anomalies = [_domain(d, c) for d in (MON, TUE) for c in CODES]
    match = [{"partner": "raw.bookings.currency", "via": "p:fct_bookings",
              "before": {"day": "2026-09-25", "values": 4, "matched": 4},
              "after": {"day": "2026-09-28", "values": 4, "matched": 0}}]  # fmt: skip
    f = classify(anomalies, domain={"match": match})
    assert f["class"] == "domain_change" and f["n"] == 4
    assert f["words"].startswith(
        "domain change: currency values changed case on 2026-09-28 (Mon) (AUD -> aud, "
    )
    assert "4 of 4 values no longer match raw.bookings.currency" in f["words"]
    assert f["intervals"] == ["2026-09-28", "2026-09-29"]
    assert title_words(f) == "changed the values of a key"
    # without the join's side, the change is still named with its counts
    alone = classify(anomalies)
    assert "4 of 4 values that arrived every interval vanished at once" in alone["words"]


def test_replaced_values_are_listed_when_they_do_not_map_one_to_one() -> None:
    assert how_changed(["EUR", "GBP"], [" EUR", " GBP"])[0] == "gained or lost spaces"
    assert how_changed(["EUR", "GBP"], ["EURO", "POUND"]) == ("were replaced", [])


def test_a_vanished_slice_is_named_with_its_rows_and_days() -> None:
    drops = [
        {"detector": "slice_drop", "metric": "p:f/rows_by(channel)", "kind": "slice",
         "dims": {"channel": "partner"}, "interval": d, "value": 0.0, "expected": 85.0,
         "reason": "...", "data": {}}
        for d in (MON, TUE)
    ]  # fmt: skip
    f = classify(drops)
    assert f["class"] == "slice_missing"
    assert f["words"] == (
        "slice missing: channel = partner: 0 rows where 85 were expected on 2026-09-28 (Mon), "
        "and 0 on 2026-09-29 (Tue)"
    )
    # a failed audit downstream of it is said too, the slice named first
    checks = [{"check": "p:audit:f.not_null", "of": ["p:f"], "runs": 1, "first_run": "r1",
               "first_at": "2026-09-29T00:00:00", "message": None}]  # fmt: skip
    both = classify(drops, checks=checks)
    assert both["class"] == "slice_missing" and both["classes"] == ["slice_missing", "failed_audit"]


def test_the_values_finding_no_partner_are_read_from_the_warehouse() -> None:
    import duckdb

    from splice.graph.model import Relation
    from splice.watch.cause_domain import unmatched_query
    from splice.watch.graph_monitors import JoinMonitor

    con = duckdb.connect()
    con.execute("CREATE SCHEMA raw; CREATE SCHEMA fx")
    con.execute("CREATE TABLE raw.b (day DATE, ccy TEXT)")
    con.execute(
        "INSERT INTO raw.b VALUES ('2026-09-28', 'EUR'), ('2026-09-28', 'XYZ'), "
        "('2026-09-28', 'XYZ'), ('2026-09-28', 'GBP'), ('2026-09-25', 'ABC')"
    )
    con.execute("CREATE TABLE fx.r (rate_day DATE, ccy TEXT)")
    # Friday has every code; Monday's rates came in lower case, one of them missing
    con.execute(
        "INSERT INTO fx.r VALUES ('2026-09-25', 'EUR'), ('2026-09-25', 'GBP'), "
        "('2026-09-28', 'eur'), ('2026-09-28', 'GBP')"
    )
    left, right = Relation("memory", "raw", "b"), Relation("memory", "fx", "r")
    asof = JoinMonitor("p:m", left, "ccy", "day", "DATE", right, "ccy", "rate_day")
    got = con.execute(unmatched_query(asof, MON).sql("duckdb")).fetchall()
    assert got == [("XYZ", 2), ("EUR", 1)]  # Monday's partners are Monday's rates
    lookup = JoinMonitor("p:m", left, "ccy", "day", "DATE", right, "ccy", None)
    assert con.execute(unmatched_query(lookup, MON).sql("duckdb")).fetchall() == [("XYZ", 2)]


def test_a_join_whose_rows_stop_finding_partners_names_the_values() -> None:
    drop = {
        "detector": "coverage_drop", "kind": "coverage", "dims": {}, "interval": MON,
        "metric": "p:m/coverage(b.ccy in r.ccy)", "value": 0.97, "expected": 1.0,
        "reason": "...", "data": {"max_before": 1.0},
    }  # fmt: skip
    f = classify([drop], domain={"unmatched": [{"value": "XYZ", "rows": 31}]})
    assert f["class"] == "domain_change"
    assert f["words"] == (
        "domain change: the join's coverage(b.ccy in r.ccy) fell to 97.0% on 2026-09-28 (Mon) "
        "from at least 100.0%; the values finding no partner: 'XYZ' (31 rows)"
    )
