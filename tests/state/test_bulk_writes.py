"""A batch of many rows written by one statement means the same on both backends: on PostgreSQL
it goes through COPY (``splice.state.pg.copy_plan``), and a key written twice in one batch keeps
the later row for an upsert and the earlier one for ``OR IGNORE``, as row by row does."""

from __future__ import annotations

import json
from pathlib import Path

from splice.state.pg import COPY_ROWS, copy_plan
from splice.state.sql import statement
from splice.state.store import StateStore

_SERIES = statement(
    "INSERT INTO watch_series (target, metric, spec, node_id, kind, dims, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_POINT = statement(  # the statement splice watch writes its points with
    "INSERT OR REPLACE INTO watch_points (series_id, interval_start, value, measured_at, "
    "watch_id) VALUES (?, ?, ?, ?, ?)"
)
_FIRST = statement(
    "INSERT OR IGNORE INTO watch_points (series_id, interval_start, value, measured_at, "
    "watch_id) VALUES (?, ?, ?, ?, ?)"
)
_READ = statement(
    "SELECT series_id, interval_start, value, watch_id FROM watch_points "
    "ORDER BY series_id, interval_start"
)
_IDS = statement("SELECT series_id FROM watch_series ORDER BY series_id")


def _day(i: int) -> str:
    return f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}"


def test_the_statements_here_take_the_copy_path_on_postgresql() -> None:
    """Else the tests below would pass on PostgreSQL row by row and say nothing of COPY."""
    for q in (_SERIES, _POINT, _FIRST):
        assert copy_plan(q) is not None, q
    assert copy_plan(_READ) is None


def test_a_batch_of_points_upserts_as_row_by_row_does(state_target: Path | str) -> None:
    s = StateStore.open(state_target)
    try:
        with s.transaction() as conn:
            for n in range(4):
                conn.execute(_SERIES, ("prod", "m", "m", "p:n", "value",
                                       json.dumps({"k": str(n)}), 0.0))  # fmt: skip
        ids = [r[0] for r in s.conn.execute(_IDS).fetchall()]
        first = [(sid, _day(d), float(d), 1.0, "w1") for sid in ids for d in range(300)]
        # the same keys again in one batch: the later value wins
        again = [(ids[0], _day(d), -1.0, 2.0, "w2") for d in range(5)]
        with s.transaction() as conn:
            conn.executemany(_POINT, first + again)
        assert len(first + again) >= COPY_ROWS  # through COPY on PostgreSQL
        # a second batch over some of them, and new ones (fewer rows: row by row)
        second = [(sid, _day(d), 100.0 + d, 3.0, "w3") for sid in ids[:2] for d in range(290, 600)]
        with s.transaction() as conn:
            conn.executemany(_POINT, second)
            # OR IGNORE keeps what is there, and the first of a key written twice in the batch
            conn.executemany(_FIRST, [(ids[3], _day(d), 7.0, 4.0, "w4") for d in range(1000)]
                             + [(ids[3], _day(999), 8.0, 4.0, "w5")])  # fmt: skip
        got = {(r[0], r[1]): (float(r[2]), r[3]) for r in s.conn.execute(_READ).fetchall()}
    finally:
        s.close()
    assert len(got) == 4 * 300 + 2 * 300 + 700
    assert got[(ids[0], _day(0))] == (-1.0, "w2") and got[(ids[0], _day(5))] == (5.0, "w1")
    assert got[(ids[1], _day(295))] == (395.0, "w3") and got[(ids[2], _day(295))] == (295.0, "w1")
    assert got[(ids[3], _day(10))] == (10.0, "w1")  # there before: ignored
    assert got[(ids[3], _day(999))] == (7.0, "w4")  # the first of the batch


def test_a_batch_into_a_table_with_an_identity_numbers_every_row(
    state_target: Path | str,
) -> None:
    s = StateStore.open(state_target)
    try:
        with s.transaction() as conn:
            conn.executemany(_SERIES, [("prod", "m", "m", "p:n", "value",
                                        json.dumps({"k": str(n)}), 0.0) for n in range(1500)])  # fmt: skip
        ids = [r[0] for r in s.conn.execute(_IDS).fetchall()]
    finally:
        s.close()
    assert len(ids) == len(set(ids)) == 1500
