"""Durations in splice.toml (``30m``, ``4h``, ``2d``): parsed in one place."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+)\s*([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """A duration such as ``"30m"``, ``"4h"``, ``"2d"`` or ``"1h30m"``, in seconds.

    >>> parse_duration("30m"), parse_duration("4h"), parse_duration("2d"), parse_duration("1h30m")
    (1800, 14400, 172800, 5400)
    >>> parse_duration("4 hours")
    Traceback (most recent call last):
    ...
    ValueError: '4 hours' is not a duration: write a number and a unit (s, m, h, d), e.g. 30m, 4h, 2d
    """
    s = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(s)
    if not s or "".join(n + u for n, u in parts) != s:
        raise ValueError(
            f"{text!r} is not a duration: write a number and a unit (s, m, h, d), e.g. 30m, 4h, 2d"
        )
    seconds = sum(int(n) * _UNIT_S[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds
