"""Detectors on seeded series: each incident found on its day, calendars respected, no noise."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from splice.watch.calendars import publishing_calendar
from splice.watch.detectors import Panel, detect, sensitivity
from splice.watch.metrics import KIND_DETECTORS

START = date(2025, 1, 1)  # a Wednesday; TARGET holidays: Jan 1, Apr 18, Apr 21, May 1


def _days(n: int) -> list[date]:
    return [START + timedelta(i) for i in range(n)]


def _panel(values: np.ndarray, kind: str, new_from: int = 0, **kw: object) -> Panel:
    values = np.atleast_2d(np.asarray(values, dtype=float))
    new = np.zeros(values.shape, dtype=bool)
    new[:, new_from:] = True
    opts: dict[str, object] = {
        "detectors": KIND_DETECTORS[kind],
        "calendar": publishing_calendar("ECB"),
        "sensitivity": sensitivity("medium"),
    }
    opts.update(kw)
    return Panel(
        name="m",
        kind=kind,
        days=_days(values.shape[1]),
        values=values,
        new=new & np.isfinite(values),
        **opts,  # type: ignore[arg-type]
    )


def _rates(n_days: int, n_series: int = 29, seed: int = 7, fill: bool = False) -> np.ndarray:
    """Random-walk rates on TARGET business days (NaN otherwise, or Friday's value if ``fill``)."""
    rng = np.random.default_rng(seed)
    cal = publishing_calendar("ECB")
    days = _days(n_days)
    out = np.full((n_series, n_days), np.nan)
    level = rng.uniform(0.05, 2.0, n_series)
    for j, d in enumerate(days):
        if cal.is_publishing(d):
            level = level * np.exp(rng.normal(0, 0.005, n_series))
            out[:, j] = np.round(level, 6)
        elif fill and j > 0:
            out[:, j] = out[:, j - 1]
    return out


def _volume(n_days: int, seed: int = 3, base: float = 1000.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weekly = np.array([1.12, 0.97, 0.94, 0.96, 1.0, 0.82, 1.19])
    wd = np.array([d.weekday() for d in _days(n_days)])
    return np.round(base * weekly[wd] * rng.normal(1, 0.04, n_days))


def _found(panel: Panel) -> list[tuple[date, str, int]]:
    return [(panel.days[f.col], f.detector, f.row) for f in detect(panel)]


# -- stopped moving ---------------------------------------------------------------------------
def test_clean_rates_give_no_alarm_and_forward_filled_weekends_and_holidays_are_normal() -> None:
    for fill in (False, True):
        assert _found(_panel(_rates(200, fill=fill), "value")) == []


def test_without_the_calendar_a_holiday_repeat_looks_stale() -> None:
    # forward-filled: Good Friday 2025-04-18 and Easter Monday repeat Thursday's rates
    values = _rates(200, fill=True)
    found = _found(_panel(values, "value", calendar=publishing_calendar("none")))
    assert {d for d, det, _ in found if det == "stopped_moving"} >= {date(2025, 4, 18)}


def test_a_monday_repeating_friday_is_stopped_moving_on_its_first_day() -> None:
    values = _rates(150)
    monday = 146  # 2025-05-27 is a Tuesday; find the Monday after day 140
    days = _days(150)
    monday = next(i for i in range(140, 150) if days[i].weekday() == 0)
    friday = monday - 3
    values[:, monday] = values[:, friday]
    values[:, monday + 1] = values[:, friday]
    found = _found(_panel(values, "value"))
    assert {(d, det) for d, det, _ in found} == {
        (days[monday], "stopped_moving"),
        (days[monday + 1], "stopped_moving"),
    }
    assert len(found) == 2 * 29
    reasons = [f.reason for f in detect(_panel(values, "value"))]
    assert "is the same as on Fri" in reasons[0] and "29 of 29 series" in reasons[0]


def test_one_series_alone_is_stale_on_its_first_repeat_when_its_history_says_repeats_are_rare() -> (
    None
):
    days = _days(150)
    values = _rates(150, n_series=3)
    values[0] *= 1.0 + 1e-9 * np.arange(150)  # a cross rate: full precision, never repeats
    values[1] = np.round(1.1 * values[1] / np.nanmax(values[1]), 4)  # EUR/USD to 4 decimals
    values[2, :] = np.where(np.isfinite(values[2]), 1.0, np.nan)  # USD: always 1.0
    b = [i for i in range(120, 150) if np.isfinite(values[0, i])][:3]
    for r in (0, 1):
        values[r, b[1]] = values[r, b[0]]
        values[r, b[2]] = values[r, b[0]]
    found = detect(_panel(values[:1], "value"))
    assert [(days[f.col], f.detector) for f in found] == [
        (days[b[1]], "stopped_moving"),
        (days[b[2]], "stopped_moving"),
    ]
    assert (
        "it repeated alone" in found[0].reason and found[1].data["since"] == days[b[1]].isoformat()
    )
    # at 4 decimals an honest repeat is a 1-in-100 event: one repeat alone is not enough
    assert [(days[f.col], f.detector) for f in detect(_panel(values[1:2], "value"))] == [
        (days[b[2]], "stopped_moving")
    ]
    assert _found(_panel(values[2:], "value")) == []


def test_earlier_anomalies_stay_out_of_training_across_watch_calls() -> None:
    values = _rates(150)
    days = _days(150)
    monday = next(i for i in range(140, 150) if days[i].weekday() == 0)
    values[:, monday] = values[:, monday - 3]
    values[:, monday + 1] = values[:, monday - 3]
    prior = np.zeros(values.shape, dtype=bool)
    prior[:, monday] = True  # flagged by the previous watch
    panel = _panel(values, "value", new_from=monday + 1, prior=prior)
    assert {(d, det) for d, det, _ in _found(panel)} == {(days[monday + 1], "stopped_moving")}


# -- level detectors ----------------------------------------------------------------------------
def test_weekly_seasonal_volume_is_not_an_alarm_but_a_half_day_is() -> None:
    v = _volume(120)
    assert _found(_panel(v, "volume")) == []
    v[100] = round(v[100] / 2)
    v[110] = v[110] * 2
    assert [(d, det) for d, det, _ in _found(_panel(v, "volume"))] == [
        (_days(120)[100], "volume_drop"),
        (_days(120)[110], "volume_jump"),
    ]


def test_a_thin_slice_s_unlucky_friday_is_no_alarm_but_a_tenth_of_it_is() -> None:
    """One currency's GMV per day (the demo's CAD: about 45 bookings on a Friday, lognormal
    amounts): on Friday 2026-08-14 it had 27 bookings and 41% of its usual GMV. Its eight
    weeks of week-over-week changes happen to be calm (a robust sigma of 0.10 on the log scale,
    where the weekday residuals say 0.15): judged on that alone it was an 8.5-sigma spike. Noise
    is estimated both ways and the larger kept, so it is no alarm; a tenth of the usual GMV is."""
    from splice.demo.bookings import PRICE_LIST_DAY, _day_bookings
    from splice.demo.ecb import rates_to_usd
    from splice.demo.layout import BOOKINGS_SEED

    price_list = rates_to_usd(PRICE_LIST_DAY)
    assert price_list is not None
    days = [date(2026, 5, 1) + timedelta(i) for i in range(106)]
    assert days[-1] == date(2026, 8, 14)
    gmv = np.array([[sum(b.amount for b in _day_bookings(d, BOOKINGS_SEED, price_list)
                         if b.currency == "CAD") for d in days]])  # fmt: skip

    def found(values: np.ndarray) -> list[tuple[date, str]]:
        new = np.zeros(values.shape, dtype=bool)
        new[:, -1] = True
        panel = Panel(name="avg(gmv_local)", kind="value", days=days, values=values, new=new,
                      detectors=KIND_DETECTORS["value"], calendar=publishing_calendar("none"),
                      sensitivity=sensitivity("medium"))  # fmt: skip
        return [(panel.days[f.col], f.detector) for f in detect(panel)]

    assert gmv[0, -1] < 0.45 * np.median(gmv[0, -57:-1:7])  # the unlucky Friday
    assert found(gmv) == []
    gmv[0, -1] = 0.1 * np.median(gmv[0, -57:-1:7])
    assert found(gmv) == [(date(2026, 8, 14), "spike")]


def test_a_lasting_drop_is_flagged_on_every_day_until_accepted() -> None:
    days = _days(150)
    big = _volume(150)
    big[100:] = np.round(big[100:] * 0.6)  # -40%: beyond the spike threshold on day one
    found = detect(_panel(big, "volume"))
    assert [(days[f.col], f.detector) for f in found] == [
        (days[i], "volume_drop") for i in range(100, 150)
    ]
    assert {f.data["since"] for f in found} == {days[100].isoformat()}
    assert found[-1].data["intervals"] == 50
    assert found[-1].reason.startswith(
        "still at the level it moved to on Fri 2025-04-11 (50 intervals); not accepted as the "
        "new normal: 600 on Fri 2025-05-30 vs expected 984.362 (-39.0%)"
    )
    small = _volume(150)
    small[100:] = np.round(small[100:] * 0.8)  # -20%: a level shift, once its run is complete
    found = detect(_panel(small, "volume"))
    assert [f.col for f in found] == list(range(102, 150))
    assert {f.data["since"] for f in found} == {days[100].isoformat()}
    assert "3 intervals in a row" in found[0].reason
    # accepted from day 100 on: judged against itself, quiet
    accepted = _panel(small, "volume", level_from=np.array([100]))
    assert _found(accepted) == []


def test_an_inverted_rate_is_a_jump_and_the_day_after_is_not() -> None:
    values = _rates(150, n_series=3)
    days = _days(150)
    i = next(j for j in range(130, 150) if np.isfinite(values[0, j]))
    values[0, i] = 1.0 / values[0, i]
    found = _found(_panel(values, "value"))
    assert found == [(days[i], "jump", 0)]


def test_a_rate_x100_for_longer_than_the_training_window_is_flagged_every_day_until_it_is_back() -> (
    None
):
    values = _rates(330, n_series=3)
    days = _days(330)
    bad = [i for i in range(150, 300) if np.isfinite(values[0, i])]  # 150 days: 106 business
    values[0, 150:300] *= 100.0
    found = detect(_panel(values, "value", new_from=120))
    assert [(f.col, f.detector) for f in found] == [(i, "jump") for i in bad]
    assert {f.data["since"] for f in found} == {days[bad[0]].isoformat()}
    assert found[-1].reason.startswith(
        f"still at the level it moved to on Mon 2025-06-02 ({len(bad)} intervals); not "
        "accepted as the new normal: "
    )
    assert f"over {len(bad)} intervals" in found[-1].reason  # judged against the last good point


def test_a_feed_a_day_late_for_weeks_is_flagged_on_every_day() -> None:
    lag = _rates(200, n_series=1)[0] * 0  # as-of lag in days, business days: always 0
    late = [i for i in range(120, 200) if np.isfinite(lag[i])]
    lag[120:] = np.where(np.isfinite(lag[120:]), 1.0, np.nan)
    found = detect(_panel(lag, "lag"))
    assert [f.col for f in found] == late
    assert [f.detector for f in found[:2]] == ["spike", "level_shift"]
    assert {f.data["since"] for f in found} == {_days(200)[late[0]].isoformat()}


def test_null_rate_rise_and_duplicates() -> None:
    nulls = np.zeros(90)
    nulls[80] = 0.05
    assert _found(_panel(nulls, "null_rate")) == [(_days(90)[80], "null_rate_rise", 0)]
    dups = np.zeros(90)
    dups[85] = 30
    assert _found(_panel(dups, "duplicates")) == [(_days(90)[85], "duplicates", 0)]


def test_missing_intervals_respect_the_series_calendar() -> None:
    daily = _volume(90)
    daily[80] = np.nan  # a Saturday of a 7-day series
    p = _panel(daily, "volume", judge_missing_from=0)
    assert [(d, det) for d, det, _ in _found(p)] == [(_days(90)[80], "missing")]
    business = _rates(140, n_series=1)[0] * 0 + 30  # row counts on business days only
    p = _panel(business, "volume", judge_missing_from=0)
    assert _found(p) == []  # weekends and Good Friday / Easter Monday have no rows: normal
    business[np.flatnonzero(np.isfinite(business))[-5]] = np.nan
    assert [det for _, det, _ in _found(_panel(business, "volume", judge_missing_from=0))] == [
        "missing"
    ]


@pytest.mark.parametrize("level", ["low", "medium", "high"])
def test_sensitivity_presets_keep_clean_series_quiet(level: str) -> None:
    sens = sensitivity(level)
    assert _found(_panel(_volume(200), "volume", sensitivity=sens)) == []
    if level != "high":  # high also flags the larger moves of a young random walk
        assert _found(_panel(_rates(200), "value", sensitivity=sens)) == []


# -- joint repeats on the real ECB rates of 2026 (the demo's vendor serves them) ----------------
def _ecb_2026(freeze: tuple[str, ...] = ()) -> tuple[list[str], Panel]:
    """USD per unit of every demo currency, 2026-04-01..09-30, judged from 07-27; the
    currencies in ``freeze`` repeat Friday 09-25's rate on 28..30 September."""
    from splice.demo.ecb import CURRENCIES, rates_to_usd

    cur = [c for c in CURRENCIES if c != "USD"]
    days = [date(2026, 4, 1) + timedelta(i) for i in range(183)]
    v = np.full((len(cur), len(days)), np.nan)
    for j, d in enumerate(days):
        r = rates_to_usd(d)
        if r:
            v[:, j] = [r[c] for c in cur]
    fri = days.index(date(2026, 9, 25))
    for c in freeze:
        for d in (28, 29, 30):
            v[cur.index(c), days.index(date(2026, 9, d))] = v[cur.index(c), fri]
    new = np.isfinite(v) & np.array([d >= date(2026, 7, 27) for d in days])[None, :]
    panel = Panel(name="fx_rate", kind="value", days=days, values=v, new=new,
                  detectors=KIND_DETECTORS["value"], sensitivity=sensitivity("medium"),
                  calendar=publishing_calendar("ECB"))  # fmt: skip
    return cur, panel


def test_an_honest_joint_repeat_anchored_by_the_coarse_euro_rate_is_no_alarm() -> None:
    # Monday 2026-09-07 (US Labor Day): EUR/USD, given to 4 decimals, did not move, and the CHF
    # and ISK cross rates derived from it repeated with it: three of 29, explained by EUR
    cur, panel = _ecb_2026()
    assert np.isclose(panel.values[cur.index("CHF"), panel.days.index(date(2026, 9, 7))],
                      panel.values[cur.index("CHF"), panel.days.index(date(2026, 9, 4))])  # fmt: skip
    assert detect(panel) == []


def test_three_full_precision_rates_frozen_together_are_found_on_their_first_day() -> None:
    cur, panel = _ecb_2026(("JPY", "CHF", "SEK"))
    found = {(cur[f.row], panel.days[f.col].day, f.detector) for f in detect(panel)}
    assert found == {(c, d, "stopped_moving") for c in ("JPY", "CHF", "SEK") for d in (28, 29, 30)}


def test_a_count_that_moves_by_one_in_thirty_is_no_alarm_but_a_third_is() -> None:
    # thirty currencies book every day; one small market has an empty day (29), later ten do (20)
    v = np.full(120, 30.0)
    v[100] = 29.0
    assert _found(_panel(v, "distinct")) == []
    v[110] = 20.0
    assert [(d, det) for d, det, _ in _found(_panel(v, "distinct"))] == [
        (_days(120)[110], "distinct_change")
    ]


def test_a_repeat_left_unflagged_does_not_make_the_next_one_ordinary() -> None:
    # 29 rates given to 4 decimals (each repeats honestly now and then, so three of them
    # repeating together on one day is no alarm); on the second day of the freeze the three are
    # judged against their history before the run, not against their own first repeat
    rng = np.random.default_rng(21)
    cal = publishing_calendar("ECB")
    days = _days(200)
    v = np.full((29, 200), np.nan)
    level = np.full(29, 2.0)
    for j, d in enumerate(days):
        if cal.is_publishing(d):
            level = level * np.exp(rng.normal(0, 0.005, 29))
            v[:, j] = np.round(level, 4)
    cols = np.flatnonzero(np.isfinite(v[0]))
    quiet = [r for r in range(29) if (np.diff(v[r, cols]) == 0).sum() == 0][:3]
    assert len(quiet) == 3
    for r in quiet:
        v[r, cols[-3:]] = v[r, cols[-4]]
    found = _found(_panel(v, "value", new_from=int(cols[-3])))
    assert sorted(found) == sorted(
        (days[int(c)], "stopped_moving", r) for r in quiet for c in cols[-2:]
    )
