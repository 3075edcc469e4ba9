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
