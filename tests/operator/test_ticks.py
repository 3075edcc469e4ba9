"""When schedules fire: read in their time zone (daylight saving included); after downtime only
the latest missed tick runs, once, and the skipped ones are counted."""

from __future__ import annotations

from datetime import UTC, datetime

from splice.operator.ticks import due, latest_tick, next_tick


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_local_six_oclock_moves_in_utc_when_the_clocks_go_back() -> None:
    # Amsterdam leaves summer time on Sunday 2026-10-25: 06:00 local is 04:00Z, then 05:00Z
    assert next_tick("0 6 * * *", "Europe/Amsterdam", utc("2026-10-24T05:00")) == utc(
        "2026-10-25T05:00"
    )
    assert latest_tick("0 6 * * *", "Europe/Amsterdam", utc("2026-10-24T05:00")) == utc(
        "2026-10-24T04:00"
    )


def test_after_three_days_down_only_the_latest_tick_runs_and_two_are_skipped() -> None:
    d = due("0 6 * * *", "UTC", last=utc("2026-09-26T06:00"), now=utc("2026-09-29T06:30"))
    assert d is not None and (d.tick, d.skipped) == (utc("2026-09-29T06:00"), 2)


def test_nothing_is_due_before_the_next_tick_or_for_a_schedule_never_seen() -> None:
    assert (
        due("0 6 * * *", "UTC", last=utc("2026-09-29T06:00"), now=utc("2026-09-30T05:59")) is None
    )
    assert due("0 6 * * *", "UTC", last=None, now=utc("2026-09-30T07:00")) is None


def test_weekdays_only_skip_the_weekend_without_counting_it() -> None:
    # Friday's tick taken; on Monday at 07:00 Monday's runs, and nothing was missed
    d = due("0 6 * * 1-5", "UTC", last=utc("2026-09-25T06:00"), now=utc("2026-09-28T07:00"))
    assert d is not None and (d.tick, d.skipped) == (utc("2026-09-28T06:00"), 0)
