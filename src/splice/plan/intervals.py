"""SQLMesh's intervals as Splice shows them: merged ``[start_ms, end_ms)`` lists, in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


def merge(intervals: Any) -> list[list[int]]:
    """Sorted, merged ``[start_ms, end_ms)`` intervals.

    >>> merge([(5, 7), (1, 3), (3, 4)])
    [[1, 4], [5, 7]]
    """
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in intervals or []):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def describe_intervals(intervals: list[list[int]]) -> str:
    """Merged intervals for people: days when they fall on midnights, else minutes (UTC).

    >>> day = 86_400_000
    >>> describe_intervals([[1790812800000, 1790812800000 + 2 * day]])
    '2026-10-01 .. 2026-10-02'
    >>> describe_intervals([[0, 3_600_000]])
    '1970-01-01 00:00 .. 1970-01-01 01:00'
    """
    parts: list[str] = []
    for a, b in intervals:
        if a % 86_400_000 == 0 and b % 86_400_000 == 0:
            first = datetime.fromtimestamp(a / 1000, UTC).date()
            last = datetime.fromtimestamp(b / 1000, UTC).date() - timedelta(days=1)
            parts.append(first.isoformat() if first == last else f"{first} .. {last}")
        else:
            fmt = "%Y-%m-%d %H:%M"
            parts.append(
                f"{datetime.fromtimestamp(a / 1000, UTC):{fmt}} .. {datetime.fromtimestamp(b / 1000, UTC):{fmt}}"
            )
    return ", ".join(parts)
