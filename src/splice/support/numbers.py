"""One format per kind of number, the same in the terminal, on the page, in receipts and in
reasons: counts (rows, nodes, series), measured values, durations, shares (rates), checksums.

>>> count(2186.0), value(1.14030001), duration(75), percent(0.0123), checksum("ab" * 20)
('2,186', '1.1403', '1 min 15 s', '1.2%', 'abababababababab')
"""

from __future__ import annotations

import math
from typing import Any

#: How many hexadecimal characters of a checksum are shown (the whole one is in the JSON).
CHECKSUM_CHARS = 16


def count(n: Any) -> str:
    """A count (rows, nodes, series, intervals): a whole number, thousands separated; ``-``
    for none; a text that is not a number is shown as it is.

    >>> count(1815), count(2186.0), count("12"), count(None), count("n/a"), count(-3)
    ('1,815', '2,186', '12', '-', 'n/a', '-3')
    """
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    if isinstance(n, bool):
        return str(int(n))
    try:
        return f"{round(float(n)):,}"
    except (TypeError, ValueError, OverflowError):
        return str(n)


def value(v: Any) -> str:
    """A measured value (a metric's value, its expected value, a rate of exchange): short and
    exact enough; a whole number is shown without decimals.

    >>> value(1.14030001), value(12345.678), value(2186.0), value(2186), value(0.0), value(None)
    ('1.1403', '12,345.7', '2,186', '2,186', '0', '-')
    >>> value(0.000123456), value(-42.5)
    ('0.0001235', '-42.5')
    """
    if v is None or isinstance(v, str):
        return "-" if v is None else v
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "-" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v == 0:
        return "0"
    if float(v).is_integer():
        return f"{int(v):,}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.1f}"
    if a >= 1:
        return f"{v:.6g}"
    return f"{v:.4g}"


def duration(s: float | None) -> str:
    """A duration in seconds as people read it (empty for none).

    >>> duration(0.0423), duration(2.5), duration(75), duration(3725), duration(None)
    ('42 ms', '2.5 s', '1 min 15 s', '1 h 2 min', '')
    """
    if s is None:
        return ""
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 59.95:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {round(s % 60):.0f} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"


def percent(share: float | None, *, signed: bool = False) -> str:
    """A share (0..1: rows rewritten of a rebuild, a null rate) or a relative change as a
    percentage with one decimal; ``-`` for none.

    >>> percent(0.0123), percent(1), percent(None), percent(0.05, signed=True)
    ('1.2%', '100.0%', '-', '+5.0%')
    """
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "-"
    return f"{share * 100:+.1f}%" if signed else f"{share * 100:.1f}%"


def checksum(c: Any) -> str:
    """A checksum as shown to people: its first :data:`CHECKSUM_CHARS` characters.

    >>> checksum("0123456789abcdef0123"), checksum(None)
    ('0123456789abcdef', '-')
    """
    return "-" if c is None or c == "" else str(c)[:CHECKSUM_CHARS]
