"""The windows a next-day watch judges against (splice.watch.windows), through real `splice
watch` on a real DuckDB warehouse: a next-day watch reads one window per series and no point,
and judges exactly as it does from the points (a state without windows, as one upgraded from
before them, finds the same anomalies), through late rows, a series that appears, one that
stops, and a fault that lasts."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np

from splice.graph.model import Graph, Node, Relation
from splice.state.sql import statement
from splice.watch import history as hist
from splice.watch import windows
from splice.watch.service import history_since, watch
from splice.workspace.core import Workspace

START = date(2025, 1, 6)
HISTORY = 130
CONFIG = """[workspace]
name = "win"
[warehouse]
path = "wh.duckdb"
[watch]
default_monitors = false

[[metrics]]
name = "sales"
node = "win:source:sales"
time = "day"
value = "sum(amount)"
dimensions = ["shop"]
"""


def _graph() -> Graph:
    g = Graph()
    g.add_node(
        Node(
            id="win:source:sales",
            project="win",
            name="source:sales",
            kind="source",
            tool="declared",
            writes=Relation("wh", "raw", "sales"),
            columns={"day": "DATE", "shop": "TEXT", "amount": "DOUBLE"},
        )
    )
    return g


def _rows(day: date, rng: np.random.Generator) -> list[tuple[date, str, float]]:
    """A day's sales: four shops with a weekly pattern; shop d opens 10 days in, shop c
    closes 5 days in, shop b drops to a third from 3 days in (a fault that lasts)."""
    i = (day - START).days - HISTORY
    out = []
    for shop, level in (("a", 1000.0), ("b", 400.0), ("c", 250.0), ("d", 600.0)):
        if (shop == "d" and i < 10) or (shop == "c" and i >= 5):
            continue
        v = level * (1.2 if day.weekday() == 4 else 1.0) * rng.normal(1, 0.02)
        out.append((day, shop, v / 3 if shop == "b" and i >= 3 else v))
    return out


def _load(root: Path, rows: list[tuple[date, str, float]]) -> None:
    con = duckdb.connect(str(root / "wh.duckdb"))
    try:
        con.execute("CREATE SCHEMA IF NOT EXISTS raw")
        con.execute("CREATE TABLE IF NOT EXISTS raw.sales (day DATE, shop TEXT, amount DOUBLE)")
        if rows:
            con.executemany("INSERT INTO raw.sales VALUES (?, ?, ?)", rows)
    finally:
        con.close()


def _watch(
    root: Path, *, forget_windows: bool
) -> tuple[list[tuple[str, date, str]], set[int], set[int]]:
    """One watch: its anomalies, the series whose stored points it read to judge, and those
    in an open fault before it (a fault that lasts is judged against older points)."""
    with Workspace.open(root) as ws:
        ws._graph = _graph()
        conn = ws.state.conn
        if forget_windows:
            with ws.state.transaction():
                conn.execute(statement("DELETE FROM watch_windows"))
        ids = [s.series_id for s in hist.series_rows(conn, ws.target, "sales")]
        faulted = set(hist.open_faults(conn, ids)) if ids else set()
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        try:
            found = watch(ws)
        finally:
            conn.set_trace_callback(None)
    read: set[int] = set()
    for q in seen:
        if "JULIANDAY(interval_start)" in q and "FROM watch_points" in q:
            listed = re.search(r"series_id IN \(([^)]*)\)", q)
            assert listed is not None, q
            read |= {int(i) for i in re.findall(r"\d+", listed.group(1))}
    return sorted((a.series, a.interval, a.detector) for a in found.anomalies), read, faulted


def _check_windows(root: Path) -> None:
    """Every series' window holds exactly its stored points from where the next watch reads."""
    with Workspace.open(root) as ws:
        conn = ws.state.conn
        through = hist.metric_rows(conn, ws.target)["sales"].measured_through
        assert through is not None
        since = history_since(through, ws)
        ids = [s.series_id for s in hist.series_rows(conn, ws.target, "sales")]
        (s1, d1, v1), rest = windows.read(conn, ws.target, "sales", ids, since)
        assert rest == []
        s2, d2, v2 = hist.point_arrays(conn, ids, since)
        a = sorted(zip(s1.tolist(), d1.tolist(), v1.tolist(), strict=True))
        b = sorted(zip(s2.tolist(), d2.tolist(), v2.tolist(), strict=True))
        assert a == b and len(a) > 100


def test_next_day_watches_read_windows_and_judge_as_the_points_do(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    days = [START + timedelta(i) for i in range(HISTORY + 16)]
    data = {d: _rows(d, rng) for d in days}
    late = days[HISTORY + 6]  # shop a's row of this day arrives two days late
    roots = {}
    for name in ("windows", "points"):
        root = tmp_path / name
        root.mkdir()
        (root / "splice.toml").write_text(CONFIG)
        _load(root, [r for d in days[:HISTORY] for r in data[d]])
        roots[name] = root
    first = _watch(roots["windows"], forget_windows=False)[0]
    assert first == _watch(roots["points"], forget_windows=True)[0]
    _check_windows(roots["windows"])

    found: dict[str, list[tuple[str, date, str]]] = {"windows": [], "points": []}
    calm = 0  # watches that read no point at all
    for i, day in enumerate(days[HISTORY:]):
        today = [r for r in data[day] if not (day == late and r[1] == "a")]
        if i == 8:
            today += [r for r in data[late] if r[1] == "a"]
        for name, root in roots.items():
            _load(root, today)
            anomalies, reads, faulted = _watch(root, forget_windows=name == "points")
            found[name] += anomalies
            if name == "windows":
                assert reads <= faulted, f"{day}: points read for series {reads - faulted}"
                calm += not reads
            else:
                assert reads, "with no windows, the points are read"
        _check_windows(roots["windows"])
    assert found["windows"] == found["points"]
    assert calm >= 10
    shops = {a[0] for a in found["windows"]}
    assert "shop=b" in shops, found["windows"]  # the fault that lasts is judged every day
    b_days = [a[1] for a in found["windows"] if a[0] == "shop=b"]
    assert len(set(b_days)) >= 10


def test_a_backfill_rewrites_the_windows(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    (tmp_path / "splice.toml").write_text(CONFIG)
    _load(tmp_path, [r for i in range(HISTORY) for r in _rows(START + timedelta(i), rng)])
    _watch(tmp_path, forget_windows=False)
    with Workspace.open(tmp_path) as ws:
        ws._graph = _graph()
        # the history changed under the watch: a backfill measures it again, windows too
        con = duckdb.connect(str(tmp_path / "wh.duckdb"))
        con.execute("UPDATE raw.sales SET amount = amount * 2")
        con.close()
        watch(ws, backfill=True)
    _check_windows(tmp_path)
