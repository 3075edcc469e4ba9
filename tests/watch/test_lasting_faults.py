"""Faults that last, through real `splice watch` on a real DuckDB warehouse: a level that moved
and stays is flagged on every interval, week after week and past the training window, until a
person accepts it; then the series is judged against its new level."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np

from splice.graph.model import Graph, Node, Relation
from splice.watch.calendars import publishing_calendar
from splice.watch.levels import record_levels
from splice.watch.service import watch
from splice.workspace.core import Workspace

START = date(2025, 1, 1)
HISTORY = 180  # clean days before the fault
FAULT = START + timedelta(HISTORY)  # 2025-06-30, a Monday
WEEKS = 10  # watched week by week: 70 days, past the 56-day training window
WEEKLY = np.array([1.12, 0.97, 0.94, 0.96, 1.0, 0.82, 1.19])
CONFIG = """[workspace]
name = "lasting"
[warehouse]
path = "wh.duckdb"
[watch]
default_monitors = false

[[metrics]]
name = "fx"
node = "lasting:source:rates"
time = "day"
value = "avg(rate)"
dimensions = ["currency"]

[[metrics]]
name = "bookings"
node = "lasting:source:bookings"
time = "day"
value = "sum(n)"
"""


def _graph() -> Graph:
    g = Graph()
    for name, cols in (
        ("rates", {"day": "DATE", "currency": "TEXT", "rate": "DOUBLE"}),
        ("bookings", {"day": "DATE", "n": "BIGINT"}),
    ):
        g.add_node(
            Node(
                id=f"lasting:source:{name}",
                project="lasting",
                name=f"source:{name}",
                kind="source",
                tool="declared",
                writes=Relation("wh", "raw", name),
                columns=cols,
            )
        )
    return g


class _Data:
    """Three random-walk rates at full precision on TARGET business days, and a daily booking
    count with a weekly pattern; ``days`` of them, with the faults applied from ``FAULT`` on."""

    def __init__(self, days: int, *, jpy_factor: float = 1.0, bookings_factor: float = 1.0):
        rng = np.random.default_rng(11)
        cal = publishing_calendar("ECB")
        self.rates: list[tuple[date, str, float]] = []
        self.bookings: list[tuple[date, int]] = []
        level = np.array([1.17, 0.0068, 1.33])
        for i in range(days):
            d = START + timedelta(i)
            n = 1000 * WEEKLY[d.weekday()] * rng.normal(1, 0.03)
            self.bookings.append((d, round(n * (bookings_factor if d >= FAULT else 1.0))))
            if cal.is_publishing(d):
                level = level * np.exp(rng.normal(0, 0.004, 3))
                for cur, v in zip(("EUR", "JPY", "GBP"), level, strict=True):
                    bad = cur == "JPY" and d >= FAULT
                    self.rates.append((d, cur, float(v) * (jpy_factor if bad else 1.0)))

    def load(self, warehouse: Path, since: date | None = None) -> None:
        con = duckdb.connect(str(warehouse))
        try:
            con.execute("CREATE SCHEMA IF NOT EXISTS raw")
            con.execute(
                "CREATE TABLE IF NOT EXISTS raw.rates (day DATE, currency TEXT, rate DOUBLE)"
            )
            con.execute("CREATE TABLE IF NOT EXISTS raw.bookings (day DATE, n BIGINT)")
            con.executemany(
                "INSERT INTO raw.rates VALUES (?, ?, ?)",
                [r for r in self.rates if since is None or r[0] >= since],
            )
            con.executemany(
                "INSERT INTO raw.bookings VALUES (?, ?)",
                [r for r in self.bookings if since is None or r[0] >= since],
            )
        finally:
            con.close()


def _workspace(tmp: Path, data: _Data) -> Path:
    (tmp / "splice.toml").write_text(CONFIG)
    data.load(tmp / "wh.duckdb")
    return tmp


def _watch(root: Path) -> list[tuple[str, str, date, str]]:
    with Workspace.open(root) as ws:
        ws._graph = _graph()
        found = watch(ws)
    return [(a.metric, a.series, a.interval, a.detector) for a in found.anomalies]


def _load_week(root: Path, full: _Data, week: int) -> list[date]:
    """Load the ``week``-th week after the clean history into the warehouse; its days."""
    first = FAULT + timedelta(7 * week)
    days = [first + timedelta(i) for i in range(7)]
    part = _Data(0)
    part.rates = [r for r in full.rates if r[0] in days]
    part.bookings = [r for r in full.bookings if r[0] in days]
    part.load(root / "wh.duckdb")
    return days


def _series_id(root: Path, metric: str) -> int:
    con = sqlite3.connect(root / ".splice" / "state.db")
    try:
        return int(
            con.execute(
                "SELECT series_id FROM watch_series WHERE metric = ?", (metric,)
            ).fetchone()[0]
        )
    finally:
        con.close()


def test_a_lasting_100x_rate_and_a_lasting_drop_are_flagged_on_every_day_until_accepted(
    tmp_path: Path,
) -> None:
    full = _Data(HISTORY + 7 * (WEEKS + 2), jpy_factor=100.0, bookings_factor=0.75)
    clean = _Data(HISTORY)
    root = _workspace(tmp_path, clean)
    assert _watch(root) == []  # the clean half year: quiet

    flagged: dict[tuple[str, str], list[date]] = {}
    for week in range(WEEKS):
        _load_week(root, full, week)
        found = _watch(root)
        # nothing but the two faults, in any week
        assert {(m, s) for m, s, _, _ in found} <= {("fx", "currency=JPY"), ("bookings", "(all)")}
        for m, s, d, _ in found:
            flagged.setdefault((m, s), []).append(d)

    end = FAULT + timedelta(7 * WEEKS)
    jpy_days = sorted({r[0] for r in full.rates if FAULT <= r[0] < end and r[1] == "JPY"})
    assert flagged[("fx", "currency=JPY")] == jpy_days  # every business day, for 10 weeks
    booking_days = [FAULT + timedelta(i) for i in range(7 * WEEKS)]
    assert flagged[("bookings", "(all)")] == booking_days  # -25%: beyond the noise from day one

    con = sqlite3.connect(root / ".splice" / "state.db")
    rows = con.execute(
        "SELECT detector, reason, json_extract(data, '$.since') FROM watch_anomalies "
        "WHERE metric = 'fx' ORDER BY interval_start"
    ).fetchall()
    con.close()
    assert {r[2] for r in rows} == {FAULT.isoformat()}
    assert {r[0] for r in rows} == {"jump"}
    assert rows[-1][1].startswith(
        f"still at the level it moved to on Mon {FAULT.isoformat()} ({len(jpy_days)} intervals); "
        "not accepted as the new normal: "
    )

    # a person accepts the bookings' new level: the next week is quiet, judged against it, and
    # a day back at the old level is now the anomaly
    with Workspace.open(root) as ws, ws.state.transaction():
        record_levels(
            ws.state.conn, ws.target, None, {_series_id(root, "bookings"): FAULT},
            accepted_by="maria", how="accepted",
        )  # fmt: skip
    first = FAULT + timedelta(7 * WEEKS)
    days = [first + timedelta(i) for i in range(7)]
    part = _Data(0)
    part.rates = [r for r in full.rates if r[0] in days]
    part.bookings = [r for r in full.bookings if r[0] in days]
    part.bookings[-1] = (days[-1], round(part.bookings[-1][1] / 0.75))  # the old level, once
    part.load(root / "wh.duckdb")
    found = _watch(root)
    assert [(m, d, det) for m, _, d, det in found if m == "bookings"] == [
        ("bookings", days[-1], "spike")
    ]
    assert sorted(d for m, _, d, _ in found if m == "fx") == sorted(
        {r[0] for r in part.rates if r[1] == "JPY"}
    )  # the rate nobody accepted goes on being flagged


def test_a_clean_series_watched_week_by_week_raises_nothing(tmp_path: Path) -> None:
    full = _Data(HISTORY + 7 * 4)
    root = _workspace(tmp_path, _Data(HISTORY))
    assert _watch(root) == []
    for week in range(4):
        _load_week(root, full, week)
        assert _watch(root) == []
