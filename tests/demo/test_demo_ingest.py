"""The dlt pipeline and the bookings generator on tiny ranges, into a private warehouse."""

from __future__ import annotations

import random
from datetime import date
from pathlib import Path

import duckdb
import pytest

from splice.demo import ingest_fx_rates, load_bookings, set_incident
from splice.demo.bookings import WEEKLY, generate_bookings
from splice.demo.ecb import CURRENCIES, rates_to_usd


def rates_of(ws: Path, day: str) -> dict[str, tuple[float, date]]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"))
    try:
        rows = con.execute(
            "SELECT currency, rate_to_usd, as_of FROM raw.fx_rates WHERE rate_date = ?", [day]
        ).fetchall()
    finally:
        con.close()
    return {c: (r, a) for c, r, a in rows}


def test_stale_rates_then_reload(tmp_path: Path) -> None:
    set_incident(tmp_path, "stale-rates")
    res = ingest_fx_rates(tmp_path, date(2026, 9, 25), date(2026, 9, 29))
    assert res.days_loaded == [date(2026, 9, 25), date(2026, 9, 28), date(2026, 9, 29)]
    assert res.days_skipped == [date(2026, 9, 26), date(2026, 9, 27)]  # the weekend
    assert res.stale_days == {
        date(2026, 9, 28): date(2026, 9, 25),
        date(2026, 9, 29): date(2026, 9, 25),
    }
    assert res.rows == 3 * len(CURRENCIES)

    friday, monday = rates_of(tmp_path, "2026-09-25"), rates_of(tmp_path, "2026-09-28")
    assert {c: r for c, (r, _) in monday.items()} == {c: r for c, (r, _) in friday.items()}
    assert {a for _, a in monday.values()} == {date(2026, 9, 25)}
    assert rates_of(tmp_path, "2026-09-26") == {}

    # the vendor is fixed; reloading the two days replaces their rows (merge), no duplicates
    set_incident(tmp_path, None)
    again = ingest_fx_rates(tmp_path, date(2026, 9, 28), date(2026, 9, 29))
    assert again.stale_days == {}
    monday = rates_of(tmp_path, "2026-09-28")
    assert len(monday) == len(CURRENCIES)
    assert {a for _, a in monday.values()} == {date(2026, 9, 28)}
    expected = rates_to_usd(date(2026, 9, 28))
    assert expected is not None
    assert monday["GBP"][0] == pytest.approx(expected["GBP"])
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    try:
        assert con.execute("SELECT COUNT(*) FROM raw.fx_rates").fetchone() == (3 * len(CURRENCIES),)
    finally:
        con.close()


def test_bookings_are_deterministic_and_seasonal() -> None:
    week = generate_bookings(date(2026, 8, 3), date(2026, 8, 9))  # Monday .. Sunday
    assert week == generate_bookings(date(2026, 8, 3), date(2026, 8, 9))
    # a day regenerated alone is the same as inside a range
    assert [b for b in week if b.booking_date == date(2026, 8, 5)] == generate_bookings(
        date(2026, 8, 5), date(2026, 8, 5)
    )
    per_day = {
        d: sum(1 for b in week if b.booking_date == d) for d in {b.booking_date for b in week}
    }
    assert all(300 <= n <= 2000 for n in per_day.values())
    assert per_day[date(2026, 8, 9)] > per_day[date(2026, 8, 8)]  # Sunday busier than Saturday
    assert WEEKLY[6] > WEEKLY[5]
    shares = {c: sum(1 for b in week if b.currency == c) / len(week) for c in CURRENCIES}
    assert {b.currency for b in week} == set(CURRENCIES)
    assert max(shares, key=shares.__getitem__) == "USD"
    assert shares["EUR"] > shares["GBP"] > shares["JPY"]
    assert all(b.amount > 0 for b in week)
    assert all(b.amount == round(b.amount) for b in week if b.currency in {"JPY", "KRW", "IDR"})
    assert (
        generate_bookings(date(2026, 8, 3), date(2026, 8, 3), seed=1)
        != week[: per_day[date(2026, 8, 3)]]
    )
    random.seed(12345)  # the generator does not depend on the global random state
    assert week == generate_bookings(date(2026, 8, 3), date(2026, 8, 9))


def test_load_bookings_replaces_a_range(tmp_path: Path) -> None:
    first = load_bookings(tmp_path, date(2026, 9, 1), date(2026, 9, 3))
    load_bookings(tmp_path, date(2026, 9, 2), date(2026, 9, 2))  # reload one day
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    try:
        n, ids = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT booking_id) FROM raw.bookings"
        ).fetchone()  # type: ignore[misc]
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'raw' AND table_name = 'bookings'"
            ).fetchall()
        )
    finally:
        con.close()
    assert n == ids == first.rows
    assert types == {
        "booking_id": "VARCHAR",
        "booked_at": "TIMESTAMP",
        "booking_date": "DATE",
        "currency": "VARCHAR",
        "amount": "DOUBLE",
        "channel": "VARCHAR",
        "_load_id": "VARCHAR",
        "_loaded_at": "TIMESTAMP",
    }
