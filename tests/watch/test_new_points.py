"""Measured rows become new points column by column (splice.watch.new_points): the series made
in the order the rows first give them a value, the first of two rows of a series and day kept,
what was measured before left out, a value that is not a number refused."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import numpy as np
import pytest

from splice.errors import ConfigError
from splice.watch.new_points import new_points
from splice.watch.specs import Measure, MetricSpec

SPEC = MetricSpec(
    "m", "p:src", None, "day", "DATE", ["shop", "region"], "day",  # type: ignore[arg-type]
    [Measure("sales", "sum(x)", "value", None), Measure("orders", "count(*)", "value", None)],
)  # fmt: skip


def _run(rows: list[tuple[object, ...]], known: list[tuple[int, int]] | None = None):  # type: ignore[no-untyped-def]
    index: dict[tuple[str, str], int] = {}
    keys: list[tuple[str, str]] = []

    def add(key: tuple[str, str], meta: object) -> int:
        index[key] = len(keys)
        keys.append(key)
        return index[key]

    cells = np.array([i * (1 << 32) + d for i, d in known or []], dtype=np.int64)
    i, d, v = new_points(rows, SPEC, index, add, cells)
    return keys, list(zip(i.tolist(), d.tolist(), v.tolist(), strict=True))


def test_series_points_and_order() -> None:
    day1, day2 = date(2026, 1, 1), datetime(2026, 1, 2, 10, 30)
    e1 = (day1 - date(1970, 1, 1)).days
    e2 = e1 + 1
    keys, points = _run(
        [
            (day1, "a", "eu", None, 3),  # sales has no value: only orders' series is made here
            (day1, "b", None, Decimal("2.5"), 1),
            (day2, "a", "eu", 10.0, 4),
            (None, "c", "us", 1.0, 1),  # no interval: left out
            (day2, "a", "eu", 99.0, 9),  # the same series and day again: the first counts
            (day2, "b", None, float("inf"), True),  # not finite: no point
        ]
    )
    a = '{"region":"eu","shop":"a"}'
    b = '{"region":null,"shop":"b"}'
    assert keys == [("orders", a), ("sales", b), ("orders", b), ("sales", a)]
    assert points == [
        (0, e1, 3.0),
        (1, e1, 2.5),
        (2, e1, 1.0),
        (3, e2, 10.0),
        (0, e2, 4.0),
        (2, e2, 1.0),
    ]


def test_known_points_are_not_new() -> None:
    day = date(2026, 3, 1)
    e = (day - date(1970, 1, 1)).days
    _keys, points = _run([(day, "a", "eu", 1.0, 2)], known=[(1, e)])
    assert points == [(0, e, 1.0)]  # sales is series 0; orders (1) was measured before


def test_a_value_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a number"):
        _run([(date(2026, 1, 1), "a", "eu", "12.5", 1)])
