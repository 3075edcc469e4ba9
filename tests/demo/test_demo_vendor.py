"""The rates vendor over real HTTP: real ECB data, business days only, incidents from vendor.json."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import date
from pathlib import Path

import pytest
from currency_converter import CurrencyConverter

from splice.demo import INCIDENTS, Vendor, read_settings, set_incident
from splice.demo.ecb import CURRENCIES
from splice.errors import SpliceError


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def vendor(tmp_path: Path):
    with Vendor(tmp_path) as v:
        yield v


def test_serves_a_business_day_in_usd(vendor: Vendor) -> None:
    status, body = get(vendor.url + "?date=2026-09-25")
    assert status == 200
    assert body["date"] == body["as_of"] == "2026-09-25"
    assert body["base"] == "USD"
    assert sorted(body["rates"]) == sorted(CURRENCIES)
    assert len(body["rates"]) == 30  # 29 ECB currencies live in Q3 2026, plus EUR
    assert body["rates"]["USD"] == 1.0
    assert "BGN" not in body["rates"]  # Bulgaria joined the euro on 2026-01-01


def test_rates_match_currencyconverter(vendor: Vendor) -> None:
    cc = CurrencyConverter(fallback_on_missing_rate=False, fallback_on_wrong_date=False)
    _, body = get(vendor.url + "?date=2026-08-14")
    for cur in ("EUR", "GBP", "JPY", "CHF", "INR", "IDR"):
        expected = cc.convert(1, cur, "USD", date=date(2026, 8, 14))
        assert body["rates"][cur] == pytest.approx(expected, rel=1e-9), cur


def test_saturday_is_a_404_with_a_json_error(vendor: Vendor) -> None:
    status, body = get(vendor.url + "?date=2026-09-26")
    assert status == 404
    assert "not an ECB business day" in body["error"]


def test_bad_requests(vendor: Vendor) -> None:
    assert get(vendor.url + "?date=26/09/2026")[0] == 400
    assert get(vendor.url)[0] == 400
    assert get(vendor.url.replace("/v1/rates", "/v2/nothing"))[0] == 404


def test_stale_rates_switch_is_read_at_each_request(tmp_path: Path, vendor: Vendor) -> None:
    _, honest = get(vendor.url + "?date=2026-09-28")
    assert honest["as_of"] == "2026-09-28"

    set_incident(tmp_path, "stale-rates")  # while the vendor runs
    assert read_settings(tmp_path) == INCIDENTS["stale-rates"]
    _, friday = get(vendor.url + "?date=2026-09-25")
    for day in ("2026-09-28", "2026-09-29"):
        status, stale = get(vendor.url + f"?date={day}")
        assert status == 200
        assert stale["date"] == day
        assert stale["as_of"] == "2026-09-25"
        assert stale["rates"] == friday["rates"]
        assert stale["rates"] != honest["rates"]
    _, wednesday = get(vendor.url + "?date=2026-09-30")
    assert wednesday["as_of"] == "2026-09-30"

    set_incident(tmp_path, None)
    assert get(vendor.url + "?date=2026-09-28")[1] == honest


def test_unknown_incident_is_a_splice_error(tmp_path: Path) -> None:
    with pytest.raises(SpliceError) as err:
        set_incident(tmp_path, "stale")
    assert err.value.fix and "stale-rates" in err.value.fix


def _served(tmp_path: Path, vendor: Vendor, incident: str, day: str) -> dict:
    set_incident(tmp_path, incident)
    status, body = get(vendor.url + f"?date={day}")
    assert status == 200, body
    return body


def _true(day: str) -> dict[str, float]:
    from splice.demo.ecb import rates_to_usd

    rates = rates_to_usd(date.fromisoformat(day))
    assert rates is not None
    return rates


def test_each_fault_of_the_benchmark_is_served_as_described(tmp_path: Path, vendor: Vendor) -> None:
    fri, mon, tue = _true("2026-09-25"), _true("2026-09-28"), _true("2026-09-29")
    # three currencies frozen on Friday's rates; the as-of still claims the day
    body = _served(tmp_path, vendor, "frozen-some", "2026-09-29")
    assert body["as_of"] == "2026-09-29"
    assert {c for c in CURRENCIES if body["rates"][c] == fri[c] != tue[c]} == {"JPY", "CHF", "SEK"}
    assert body["rates"]["GBP"] == tue["GBP"]
    # a business day late: Monday serves Friday, Tuesday serves Monday; honest or lying as-of
    for incident, as_of in (("late-honest", "2026-09-28"), ("late-lying", "2026-09-29")):
        body = _served(tmp_path, vendor, incident, "2026-09-29")
        assert body["as_of"] == as_of
        assert body["rates"] == {c: mon[c] for c in sorted(mon)}
    assert _served(tmp_path, vendor, "late-honest", "2026-09-28")["as_of"] == "2026-09-25"
    # EUR inverted, JPY x100, GBP negative: one currency each, the others honest
    inv = _served(tmp_path, vendor, "inverted-rate", "2026-09-28")["rates"]
    assert inv["EUR"] == pytest.approx(1 / mon["EUR"]) and inv["GBP"] == mon["GBP"]
    unit = _served(tmp_path, vendor, "unit-change", "2026-09-30")["rates"]
    assert unit["JPY"] == pytest.approx(100 * _true("2026-09-30")["JPY"])
    neg = _served(tmp_path, vendor, "negative-rate", "2026-09-28")["rates"]
    assert neg["GBP"] == -mon["GBP"]
    # outside a fault's days the vendor is honest
    assert _served(tmp_path, vendor, "inverted-rate", "2026-09-25")["rates"]["EUR"] == fri["EUR"]
    assert (
        _served(tmp_path, vendor, "unit-change-lasting", "2026-07-24")["rates"]["JPY"]
        == (_true("2026-07-24")["JPY"])
    )


def test_an_outage_answers_503_on_its_days_then_the_vendor_recovers(
    tmp_path: Path, vendor: Vendor
) -> None:
    set_incident(tmp_path, "vendor-outage")
    for day in ("2026-09-28", "2026-09-29"):
        status, body = get(vendor.url + f"?date={day}")
        assert status == 503 and day in body["error"]
    assert _served(tmp_path, vendor, "vendor-outage", "2026-09-30")["rates"] == _true("2026-09-30")
    # an empty answer instead: 200 with no rates (the load succeeds and loads nothing)
    (tmp_path / "vendor" / "vendor.json").write_text(json.dumps({"incident": "x", "faults": [
        {"kind": "outage", "from": "2026-09-28", "to": "2026-09-28", "empty": True}]}))  # fmt: skip
    status, body = get(vendor.url + "?date=2026-09-28")
    assert (status, body["rates"], body["date"]) == (200, {}, "2026-09-28")


def test_a_bad_fault_in_vendor_json_is_a_clear_500(tmp_path: Path, vendor: Vendor) -> None:
    (tmp_path / "vendor").mkdir(exist_ok=True)
    (tmp_path / "vendor" / "vendor.json").write_text(
        json.dumps({"incident": "x", "faults": [{"kind": "melt", "from": "2026-09-28"}]})
    )
    status, body = get(vendor.url + "?date=2026-09-28")
    assert status == 500
    assert "unknown fault kind 'melt'" in body["error"]


def test_bookings_can_be_loaded_twice_or_in_parts(tmp_path: Path) -> None:
    import duckdb

    from splice.demo.bookings import load_bookings

    day = date(2026, 9, 28)
    whole = load_bookings(tmp_path, day, day)
    again = load_bookings(tmp_path, day, day, append=True)
    early = load_bookings(tmp_path, date(2026, 9, 29), date(2026, 9, 29), part=(0.0, 0.6))
    late = load_bookings(tmp_path, date(2026, 9, 29), date(2026, 9, 29), append=True,
                         part=(0.6, 1.0))  # fmt: skip
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    try:
        rows = con.execute(
            "SELECT booking_date, _load_id, COUNT(*), COUNT(DISTINCT booking_id), MIN(_loaded_at) "
            "FROM raw.bookings GROUP BY 1, 2 ORDER BY 1, 5"
        ).fetchall()
    finally:
        con.close()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (day, whole.load_id, whole.rows), (day, again.load_id, whole.rows),
        (date(2026, 9, 29), early.load_id, early.rows), (date(2026, 9, 29), late.load_id, late.rows),
    ]  # fmt: skip
    assert whole.load_id != again.load_id
    assert early.rows + late.rows == len(generate_day(date(2026, 9, 29)))


def generate_day(day: date) -> list:
    from splice.demo.bookings import generate_bookings

    return generate_bookings(day, day)


def test_the_vendor_run_on_its_own_does_not_take_splice_serves_port() -> None:
    """``python -m splice.demo.vendor .`` and ``splice serve`` run side by side on their
    defaults; the demo's splice.toml names the vendor's address as the feed it reads."""
    import splice.demo
    from splice.config.serve import ServeSection
    from splice.demo.layout import DEFAULT_VENDOR_PORT, VENDOR_PATH

    assert ServeSection().port != DEFAULT_VENDOR_PORT
    template = Path(splice.demo.__file__).parent / "templates" / "splice.toml"
    assert f"http://127.0.0.1:{DEFAULT_VENDOR_PORT}{VENDOR_PATH}" in template.read_text()
