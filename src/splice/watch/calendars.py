"""Publishing calendars: the days a series is expected to be published on.

A calendar is named by a ``holidays`` financial-market code (``"ECB"``: the TARGET calendar
the European Central Bank publishes its reference rates on; ``"NYSE"``, ``"XLON"``, ...) or
``"none"``.  Detectors use it for one thing only: a value that repeats on a non-publishing day
(a weekend, a TARGET holiday) is normal, never "stopped moving".

>>> cal = publishing_calendar("ECB")
>>> cal.is_publishing(date(2026, 9, 28)), cal.is_publishing(date(2026, 9, 26))
(True, False)
>>> cal.is_publishing(date(2026, 12, 25)), cal.holiday_name(date(2026, 12, 25))
(False, 'Christmas Day')
>>> publishing_calendar("none").is_publishing(date(2026, 12, 25))
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Any

import numpy as np

from splice.errors import ConfigError

NO_CALENDAR = ("none", "")


@dataclass
class Calendar:
    """Weekends and the holidays of ``name`` are non-publishing days (``name`` None: none)."""

    name: str | None
    _holidays: Any = field(default=None, repr=False)

    def is_publishing(self, day: date) -> bool:
        if self.name is None:
            return True
        return day.weekday() < 5 and day not in self._holidays

    def holiday_name(self, day: date) -> str | None:
        if self.name is None or day not in self._holidays:
            return None
        return str(self._holidays.get(day))

    def publishing_mask(self, days: list[date]) -> np.ndarray:
        """A boolean array: is each day a publishing day."""
        if self.name is None or not days:
            return np.ones(len(days), dtype=bool)
        return np.array([self.is_publishing(d) for d in days], dtype=bool)


@lru_cache(maxsize=16)
def publishing_calendar(name: str | None) -> Calendar:
    """The calendar called ``name`` (a ``holidays`` financial code, or ``"none"``)."""
    if name is None or name.strip().lower() in NO_CALENDAR:
        return Calendar(None)
    import holidays

    code = name.strip().upper()
    supported = holidays.list_supported_financial()
    if code not in supported:
        known = ", ".join(sorted(k for k in supported if len(k) <= 4)[:40])
        raise ConfigError(
            f"calendar {name!r} is not a known financial calendar.",
            fix=f'use "none" or one of: {known}',
        )
    return Calendar(code, holidays.financial_holidays(code))
