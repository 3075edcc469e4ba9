"""What every cause module shares: which detectors speak of values and which of rows, and the
words a cause is said in (days with their weekday, numbers, a series' dimensions).

>>> days_words(["2026-09-29", "2026-09-28"])
'2026-09-28 (Mon), 2026-09-29 (Tue)'
>>> number_words(1234.5), number_words(0.012345), series_words({"dims": {"currency": "EUR"}})
('1,234', '0.01235', 'currency=EUR')
"""

from __future__ import annotations

from datetime import date
from typing import Any

#: The detectors that say a value is wrong, and the ones that say rows are missing.
VALUE_DETECTORS = ("spike", "level_shift", "jump")
ROWS_DETECTORS = ("volume_drop", "missing")


def weekday_day(iso: str) -> str:
    """An ISO day with its weekday: ``2026-09-28 (Mon)``."""
    return f"{iso} ({date.fromisoformat(iso).strftime('%a')})"


def days_words(isos: list[str], limit: int = 4) -> str:
    """ISO days as a list, or as a range when there are more than ``limit``."""
    isos = sorted(set(isos))
    if len(isos) > limit:
        return f"{weekday_day(isos[0])} .. {weekday_day(isos[-1])} ({len(isos)} intervals)"
    return ", ".join(weekday_day(d) for d in isos)


def number_words(x: float) -> str:
    """A number in a cause: whole above 1,000, 4 significant digits below."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def series_words(a: dict[str, Any]) -> str:
    """An anomaly's series by its dimensions (``(all)`` without)."""
    return ", ".join(f"{k}={v}" for k, v in (a.get("dims") or {}).items()) or "(all)"


def iso_day(d: Any) -> str:
    """A date (or what is already a string) as ISO text."""
    return d.isoformat() if hasattr(d, "isoformat") else str(d)
