"""The clock a plan or run is pinned to (``--execution-time``), parsed once, strictly.

>>> parse_execution_time("2026-10-01")
datetime.datetime(2026, 10, 1, 0, 0)
>>> parse_execution_time("2026-10-01T06:15")
datetime.datetime(2026, 10, 1, 6, 15)
>>> parse_execution_time("2026-02-30")
Traceback (most recent call last):
...
splice.errors.InputError: execution time '2026-02-30' is not a valid date: day is out of range for month.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

#: The range SQLMesh's interval arithmetic (epoch milliseconds, a day added at the end) and
#: every warehouse handle; anything outside is a typo, not a clock.
EARLIEST = datetime(1970, 1, 2)
LATEST = datetime(2999, 12, 31)
FIX = "write it as YYYY-MM-DD or YYYY-MM-DDTHH:MM (for example 2026-10-01), between 1970-01-02 and 2999-12-31"


def parse_execution_time(value: datetime | date | str) -> datetime:
    """``value`` as a naive datetime, or an :class:`~splice.errors.InputError` naming it."""
    from splice.errors import InputError

    if isinstance(value, datetime):
        when = value.replace(tzinfo=None)
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip()
        try:
            when = datetime.fromisoformat(text).replace(tzinfo=None)
        except ValueError as e:
            why = str(e) if "out of range" in str(e) or "must be in" in str(e) else "unreadable"
            raise InputError(
                f"execution time {text!r} is not a valid date: {why}.", fix=FIX
            ) from None
    if not EARLIEST <= when <= LATEST:
        raise InputError(
            f"execution time {when.date().isoformat()} is out of range.",
            fix=FIX,
        )
    return when


def utc_text(ts: float | None) -> str:
    """An epoch time as UTC text, to the second ("-" for none).

    >>> utc_text(0), utc_text(None)
    ('1970-01-01 00:00:00Z', '-')
    """
    if ts is None:
        return "-"
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%SZ")
