"""Slices and join coverage on seeded panels: a vanished slice and a changed set of values
found on their first interval, small slices and clean noise left alone."""

from __future__ import annotations

import numpy as np
from tests.watch.test_detectors import _days, _panel

from splice.watch.calendars import publishing_calendar
from splice.watch.detectors import Panel, detect
from splice.watch.detectors.slices import fill

CHANNELS = {"web": 0.52, "app": 0.38, "partner": 0.10}
WEEKLY = np.array([1.12, 0.97, 0.94, 0.96, 1.0, 0.82, 1.19])


def _slices(values: np.ndarray, labels: list[str], **kw: object) -> Panel:
    p = _panel(values, "slice", labels=labels, **kw)
    fill(p.values, p.new)  # as splice watch does: a value absent from an interval has 0 rows
    return p


def _bookings(n_days: int, shares: dict[str, float], seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    wd = np.array([d.weekday() for d in _days(n_days)])
    day = 1000 * WEEKLY[wd] * rng.normal(1, 0.04, n_days)
    return np.array([rng.poisson(share * day) for share in shares.values()], dtype=float)


def test_a_channel_that_stops_arriving_is_found_on_its_first_day_and_every_day_after() -> None:
    values = _bookings(150, CHANNELS)
    values[2, 120:] = np.nan  # partner: no rows at all (the query returns no group for it)
    found = [(f.col, f.detector, f.row, f) for f in detect(_slices(values, list(CHANNELS)))]
    assert [(c, d, r) for c, d, r, _ in found] == [(c, "slice_drop", 2) for c in range(120, 150)]
    first = found[0][3]
    assert first.value == 0 and 80 < first.expected < 125
    assert first.reason.startswith("partner has 0 rows on")
    assert found[1][3].reason.startswith(f"still down since {_days(150)[120].strftime('%a')}")


def test_thirty_currencies_of_bookings_with_small_ones_give_no_alarm() -> None:
    from splice.demo.bookings import CURRENCY_WEIGHTS

    total = sum(CURRENCY_WEIGHTS.values())
    shares = {c: w / total for c, w in CURRENCY_WEIGHTS.items()}
    values = _bookings(240, shares, seed=5)
    values[values == 0] = np.nan  # an empty slice has no group: filled back to 0
    assert (np.isnan(values).sum(axis=1) > 5).any()  # the small ones are empty now and then
    assert detect(_slices(values, list(shares))) == []


def _rates_rows(n_days: int, codes: list[str]) -> np.ndarray:
    """One row per currency on every ECB business day (no rows on weekends and holidays)."""
    cal = publishing_calendar("ECB")
    on = np.array([cal.is_publishing(d) for d in _days(n_days)])
    return np.where(on[None, :], 1.0, np.nan).repeat(len(codes), axis=0)


def test_codes_that_change_case_are_a_domain_change_on_their_first_day() -> None:
    codes = [f"C{i:02d}" for i in range(30)]
    n = 200
    days = _days(n)
    monday = next(i for i in range(150, n) if days[i].weekday() == 0)
    old = _rates_rows(n, codes)
    new = np.full_like(old, np.nan)
    new[:, monday:], old[:, monday:] = old[:, monday:], np.nan
    panel = _slices(np.vstack([old, new]), codes + [c.lower() for c in codes])
    found = detect(panel)
    first_day = [f for f in found if f.col == monday]
    assert {f.detector for f in found} == {"domain_change"}
    assert sorted(f.row for f in first_day) == list(range(30))  # every old code, none new
    data = first_day[0].data
    assert data["n_vanished"] == 30 and data["n_new"] == 30 and data["new"][0] == "c00"
    assert "30 values never seen before appeared (c00, c01" in first_day[0].reason
    # the next business day it is still so, and nothing was flagged before the change (Good
    # Friday and Easter Monday had no rows at all: not a change of values)
    assert min(f.col for f in found) == monday
    assert any(f.col > monday and f.reason.startswith("still absent") for f in found)


def test_a_few_sparse_values_missing_are_noise_many_at_once_are_not() -> None:
    codes = [f"C{i:02d}" for i in range(30)]
    days = _days(200)
    tue = next(i for i in range(150, 200) if days[i].weekday() == 1)
    few = _rates_rows(200, codes)
    few[:3, tue] = np.nan
    assert detect(_slices(few, codes)) == []
    many = _rates_rows(200, codes)
    many[:12, tue] = np.nan
    found = detect(_slices(many, codes))
    assert {(f.col, f.detector) for f in found} == {(tue, "slice_drop")}
    assert sorted(f.row for f in found) == list(range(12))


def test_join_coverage_that_falls_is_found_on_its_first_day() -> None:
    rng = np.random.default_rng(2)
    values = np.clip(1.0 - rng.exponential(0.0004, 150), 0, 1)  # now and then a row unmatched
    values[110:] = 0.0
    found = detect(_panel(values, "coverage"))
    assert [(f.col, f.detector) for f in found] == [(c, "coverage_drop") for c in range(110, 150)]
    assert "0.00% of rows find a join partner vs at least" in found[0].reason
    assert detect(_panel(values[:110], "coverage")) == []
