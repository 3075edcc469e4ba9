"""Benchmark: Splice's detectors on real ECB rates and seeded bookings, against the peer method.

    python bench/detect.py            # every scenario, the clean years, the timing
    python bench/detect.py --json     # the same figures as JSON
    python bench/detect.py --quick    # a smaller timing run

What it measures, in one run:

1. scenarios, each injected at known intervals into a clean year (2025) that is judged point by
   point (walk-forward, as a first `splice watch` does), with 2023-2024 as history:
   - on the real ECB reference rates (USD per unit of 29 currencies, from the
     ``currency_converter`` package): all rates frozen for 1 and for 3 business days, one
     currency frozen for 3 business days, one rate inverted for a day (EUR per USD instead of
     USD per EUR);
   - on seeded bookings (30 currencies' daily counts with the demo's weekly pattern and a yearly
     season, Poisson noise, and the row volume and duplicate count of the fact table): a
     duplicated load, a half-missing day, a late day;
   - faults that last (each bad interval must be flagged: cells found n/n), also past the
     8-week training window: one currency x100 for 30 and for 80 business days, one rate
     inverted for 20, all rates frozen for 10, the bookings' row volume halved for 30 and for
     90 days;
   for each: detected or not, the delay in intervals from the first bad interval to the first
   flagged one, the flagged intervals against the injected ones (scope exact / narrower /
   wider), and false alarms outside them;
2. the clean year on its own: false alarms per year on the rates (as published: business days
   only; and forward-filled over weekends and TARGET holidays, with and without the calendar)
   and on the bookings;
3. the peer method on the same data: a trailing 14-interval z-score at 3 sigma (what common dbt
   observability packages do), same scenarios, same clean year;
4. time: detection of one new interval over 10,000 series with 365 points of history each
   (target < 1 s), and a full walk-forward over all 365 intervals.

5. the incident on the real demo workspace (real dlt, SQLMesh, dbt and DuckDB, through
   ``splice.demo.story``): the clean quarter baselined, the vendor frozen on Monday 2026-09-28
   and Tuesday, ``splice run``, then ``splice watch``: how many anomalies became how many
   incidents, the root cause named (origin node, source job, the vendor's as-of date) right or
   wrong, the scope exact / narrower / wider than the injected days, and the time of grouping
   plus diagnosis. (``--no-incident`` skips it.) The panel scenarios above have no graph, so
   root cause is judged on this one.

6. the workspace scenarios (``bench/detect_workspace.py``; ``--no-workspace`` skips them,
   ``--scenarios a,b`` picks some): each fault class on the real demo, scored for detection,
   delay, incidents, origin, cause class, scope per node and the repair's verification, plus
   the false alarms of a clean run-on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from splice.demo.bookings import CURRENCY_WEIGHTS, WEEKLY  # noqa: E402
from splice.demo.ecb import CURRENCIES, rates_to_usd  # noqa: E402
from splice.watch.calendars import publishing_calendar  # noqa: E402
from splice.watch.detectors import Panel, detect, sensitivity  # noqa: E402
from splice.watch.metrics import KIND_DETECTORS  # noqa: E402

HISTORY_START = date(2023, 1, 1)
YEAR_START = date(2025, 1, 1)
YEAR_END = date(2025, 12, 31)
PEER_WINDOW = 14
PEER_Z = 3.0
TARGET_DETECT_S = 1.0
SEED = 20250101


# -- data ---------------------------------------------------------------------------------------
def calendar_days(start: date, end: date) -> list[date]:
    return [start + timedelta(i) for i in range((end - start).days + 1)]


def ecb_rates(fill: bool = False) -> tuple[list[str], list[date], np.ndarray]:
    """USD per unit of every ECB currency (USD itself left out), per calendar day.

    Business days only (NaN otherwise) as the vendor publishes them; ``fill`` carries the last
    published rate over weekends and holidays, as a daily rates table would.
    """
    currencies = [c for c in CURRENCIES if c != "USD"]
    days = calendar_days(HISTORY_START, YEAR_END)
    values = np.full((len(currencies), len(days)), np.nan)
    for j, d in enumerate(days):
        rates = rates_to_usd(d)
        if rates is not None:
            for i, c in enumerate(currencies):
                if c in rates:
                    values[i, j] = rates[c]
        elif fill and j > 0:
            values[:, j] = values[:, j - 1]
    return currencies, days, values


def seeded_bookings() -> tuple[list[date], np.ndarray, np.ndarray]:
    """Per-currency daily booking counts [31, T] and the fact table's daily row volume [T]."""
    rng = np.random.default_rng(SEED)
    days = calendar_days(HISTORY_START, YEAR_END)
    weekly = np.array(WEEKLY)[[d.weekday() for d in days]]
    season = 1 + 0.15 * np.sin(2 * np.pi * (np.array([d.timetuple().tm_yday for d in days]) / 365))
    weights = np.array(list(CURRENCY_WEIGHTS.values()))
    lam = 1000 * weights[:, None] / weights.sum() * weekly[None, :] * season[None, :]
    daily = lam * rng.normal(1.0, 0.04, len(days))[None, :]  # a day's demand moves every currency
    counts = rng.poisson(daily).astype(float)
    return days, counts, counts.sum(axis=0)


def year_mask(days: list[date]) -> np.ndarray:
    return np.array([YEAR_START <= d <= YEAR_END for d in days])


# -- running a detector and the peer ------------------------------------------------------------
def splice_flags(
    values: np.ndarray, days: list[date], kind: str, *, calendar: str = "ECB", **kw: Any
) -> dict[int, set[int]]:
    """row -> flagged columns, judging the year walk-forward (history before it)."""
    new = np.isfinite(values) & year_mask(days)[None, :]
    panel = Panel(
        name=kind,
        kind=kind,
        days=days,
        values=values,
        new=new,
        detectors=KIND_DETECTORS[kind],
        sensitivity=sensitivity("medium"),
        calendar=publishing_calendar(calendar),
        **kw,
    )
    out: dict[int, set[int]] = {}
    for f in detect(panel):
        out.setdefault(f.row, set()).add(f.col)
    return out


def peer_flags(values: np.ndarray, days: list[date]) -> dict[int, set[int]]:
    """The peer: a point more than 3 sigma from the mean of its series' previous 14 points."""
    judged = year_mask(days)
    out: dict[int, set[int]] = {}
    for r in range(values.shape[0]):
        cols = np.flatnonzero(np.isfinite(values[r]))
        v = values[r, cols]
        if len(v) <= PEER_WINDOW:
            continue
        win = np.lib.stride_tricks.sliding_window_view(v[:-1], PEER_WINDOW)  # previous 14
        mu, sd = win.mean(axis=1), win.std(axis=1, ddof=1)
        x = v[PEER_WINDOW:]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(x - mu) / sd
        hit = (z >= PEER_Z) | ((sd == 0) & (x != mu))
        flagged = {int(cols[PEER_WINDOW + i]) for i in np.flatnonzero(hit)}
        flagged = {c for c in flagged if judged[c]}
        if flagged:
            out[r] = flagged
    return out


# -- scenarios ------------------------------------------------------------------------------------
@dataclass
class Scenario:
    name: str
    data: str  # what it is injected into
    injected: set[tuple[int, int]]  # (row, col) cells that are wrong
    splice: dict[int, set[int]] = field(default_factory=dict)
    peer: dict[int, set[int]] = field(default_factory=dict)
    points: list[int] | None = None  # the row's present columns (for delays in intervals)

    def judge(self, flags: dict[int, set[int]], days: list[date]) -> dict[str, Any]:
        bad_cols = sorted({c for _, c in self.injected})
        bad_rows = {r for r, _ in self.injected}
        hits = {(r, c) for r, cs in flags.items() for c in cs if (r, c) in self.injected}
        flagged_cols = sorted({c for r, cs in flags.items() for c in cs if r in bad_rows})
        inside = [c for c in flagged_cols if c in bad_cols]
        outside = {(r, c) for r, cs in flags.items() for c in cs if (r, c) not in self.injected}
        first_bad = bad_cols[0]
        delay = None
        if inside:
            pts = self.points or list(range(len(days)))
            delay = pts.index(inside[0]) - pts.index(first_bad) if inside[0] in pts else None
        scope = (
            "none"
            if not inside
            else "exact"
            if set(inside) == set(bad_cols) and not outside
            else "narrower"
            if not outside
            else "wider"
        )
        return {
            "detected": bool(hits),
            "delay": delay,
            "flagged": [days[c].isoformat() for c in inside],
            "injected": [days[c].isoformat() for c in bad_cols],
            "cells_found": f"{len(hits)}/{len(self.injected)}",
            "false_alarms": len(outside),
            "scope": scope,
        }


def _business_cols(values: np.ndarray, start: date, days: list[date], n: int) -> list[int]:
    row = values[0]
    j = days.index(start)
    cols = []
    while len(cols) < n:
        if np.isfinite(row[j]):
            cols.append(j)
        j += 1
    return cols


def rate_scenarios() -> tuple[list[Scenario], list[date]]:
    currencies, days, clean = ecb_rates()
    out: list[Scenario] = []

    def prev_col(c: int) -> int:
        j = c - 1
        while not np.isfinite(clean[0, j]):
            j -= 1
        return j

    def run(name: str, rows: list[int], start: date, n: int, how: str) -> None:
        v = clean.copy()
        cols = _business_cols(v, start, days, n)
        src = prev_col(cols[0])
        for r in rows:
            for c in cols:
                v[r, c] = (
                    v[r, src]
                    if how == "freeze"
                    else 100.0 * v[r, c]
                    if how == "x100"
                    else 1.0 / v[r, c]
                )
        s = Scenario(name, "ECB rates", {(r, c) for r in rows for c in cols})
        s.points = [int(c) for c in np.flatnonzero(np.isfinite(clean[0]))]
        s.splice = splice_flags(v, days, "value")
        s.peer = peer_flags(v, days)
        out.append(s)

    every = list(range(len(currencies)))
    run("all rates frozen, 1 business day", every, date(2025, 3, 10), 1, "freeze")
    run("all rates frozen, 3 business days", every, date(2025, 6, 16), 3, "freeze")
    run(
        "one currency (JPY) frozen, 3 days",
        [currencies.index("JPY")],
        date(2025, 9, 8),
        3,
        "freeze",
    )
    run(
        "one rate inverted (EUR), 1 day", [currencies.index("EUR")], date(2025, 10, 14), 1, "invert"
    )
    # faults that last: every bad interval must be flagged, also past the training window
    gbp = currencies.index("GBP")
    run("lasting: one currency (GBP) x100, 30 days", [gbp], date(2025, 2, 3), 30, "x100")
    run("lasting: one rate inverted (EUR), 20 days", [currencies.index("EUR")], date(2025, 5, 12),
        20, "invert")  # fmt: skip
    run("lasting: all rates frozen, 10 days", every, date(2025, 7, 7), 10, "freeze")
    run("lasting: one currency (JPY) x100, 80 days", [currencies.index("JPY")],
        date(2025, 8, 4), 80, "x100")  # fmt: skip
    return out, days


def booking_scenarios() -> tuple[list[Scenario], list[date]]:
    days, counts, volume = seeded_bookings()
    out: list[Scenario] = []
    dups = np.zeros(len(days))

    def run(name: str, day: date, how: str, n: int = 1) -> None:
        c = days.index(day)
        vol, cnt, dup = volume.copy(), counts.copy(), dups.copy()
        kw: dict[str, Any] = {}
        if how == "halved":
            vol[c : c + n] = np.round(vol[c : c + n] / 2)
        if how == "duplicate":
            vol[c] *= 2
            cnt[:, c] *= 2
            dup[c] = volume[c]
        elif how == "half":
            vol[c] = np.round(vol[c] / 2)
            cnt[:, c] = np.round(cnt[:, c] / 2)
        elif how == "late":
            vol[c] = np.nan  # not there when the next day is watched
            kw["judge_missing_from"] = days.index(YEAR_START)
        s = Scenario(name, "seeded bookings", {(0, j) for j in range(c, c + n)})
        flags = splice_flags(vol[None, :], days, "volume", **kw)
        if how == "duplicate":
            for r, cs in splice_flags(dup[None, :], days, "duplicates").items():
                flags.setdefault(r, set()).update(cs)
        s.splice = flags
        s.peer = peer_flags(vol[None, :], days) if how != "late" else {}
        out.append(s)

    run("duplicated load (bookings)", date(2025, 4, 9), "duplicate")
    run("half-missing day (bookings)", date(2025, 7, 22), "half")
    run("late day (bookings)", date(2025, 11, 4), "late")
    run("lasting: volume halved, 30 days", date(2025, 9, 1), "halved", 30)
    run("lasting: volume halved, 90 days", date(2025, 5, 1), "halved", 90)
    return out, days


def clean_year() -> list[dict[str, Any]]:
    rows = []
    _, days, rates = ecb_rates()
    _, fdays, filled = ecb_rates(fill=True)
    bdays, counts, volume = seeded_bookings()
    cases: list[tuple[str, np.ndarray, list[date], str, str]] = [
        ("ECB rates, 29 currencies (business days)", rates, days, "value", "ECB"),
        ("ECB rates, forward-filled, TARGET calendar", filled, fdays, "value", "ECB"),
        ("ECB rates, forward-filled, no calendar", filled, fdays, "value", "none"),
        ("bookings per currency", counts, bdays, "value", "ECB"),
        ("bookings row volume", volume[None, :], bdays, "volume", "ECB"),
    ]
    for label, values, d, kind, cal in cases:
        s = splice_flags(values, d, kind, calendar=cal)
        p = peer_flags(values, d)
        rows.append(
            {
                "data": label,
                "series": int(values.shape[0]),
                "splice_false_alarms": sum(len(v) for v in s.values()),
                "peer_false_alarms": sum(len(v) for v in p.values()) if cal != "none" else None,
                "splice_examples": sorted({f"{d[c].isoformat()}" for cs in s.values() for c in cs})[
                    :5
                ],
            }
        )
    return rows


# -- timing ---------------------------------------------------------------------------------------
def timing(n_series: int, n_points: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    days = [date(2025, 1, 1) + timedelta(i) for i in range(n_points)]
    half = n_series // 2
    walk = np.exp(np.cumsum(rng.normal(0, 0.005, (half, n_points)), axis=1))
    weekly = np.array(WEEKLY)[[d.weekday() for d in days]]
    seasonal = 500 * weekly[None, :] * rng.normal(1, 0.04, (n_series - half, n_points))
    values = np.vstack([walk, seasonal])
    values[:half, np.array([d.weekday() >= 5 for d in days])] = np.nan  # business-day series
    new_last = np.zeros(values.shape, dtype=bool)
    new_last[:, -1] = True
    out: dict[str, float] = {}
    for label, new in (("one new interval", new_last),):
        panel = Panel(
            "t",
            "value",
            days,
            values,
            new & np.isfinite(values),
            detectors=KIND_DETECTORS["value"],
            calendar=publishing_calendar("ECB"),
        )
        panel.new[:half, -1] = False  # the last day is a Sunday for the business-day half
        panel.new[:half, -3] = np.isfinite(values[:half, -3])
        t0 = time.perf_counter()
        found = detect(panel)
        out[label] = time.perf_counter() - t0
        out[f"{label}: anomalies"] = float(len(found))
    full = Panel(
        "t",
        "value",
        days,
        values,
        np.isfinite(values),
        detectors=KIND_DETECTORS["value"],
        calendar=publishing_calendar("ECB"),
    )
    t0 = time.perf_counter()
    found = detect(full)
    out["walk-forward over every interval"] = time.perf_counter() - t0
    out["walk-forward: anomalies"] = float(len(found))
    return out


def events_graph(catalog: str = "bench") -> Any:
    """One hand-made source node (``raw.events``: day, series, amount): the graph of the
    watch timings (no dbt or SQLMesh project to load)."""
    from splice.graph.model import Graph, Node, Relation

    g = Graph()
    g.add_node(
        Node(
            id="bench:source:events",
            project="bench",
            name="source:events",
            kind="source",
            tool="declared",
            writes=Relation(catalog, "raw", "events"),
            columns={"day": "DATE", "series": "TEXT", "amount": "DOUBLE"},
        )
    )
    return g


def watch_timing(n_series: int, n_days: int = 365) -> dict[str, float]:
    """``splice watch`` end to end on one declared metric with ``n_series`` dimension values.

    A real :func:`splice.watch.service.watch`: the metric's SQL pushed down to DuckDB, the
    history in Splice's SQLite state, the detectors, the write.  The graph is one hand-made
    source node (no dbt or SQLMesh project to load).  Timed: the first watch (the whole
    history, judged walk-forward) and the next day's watch (one new interval per series).
    """
    import tempfile

    import duckdb

    from splice.watch.service import watch
    from splice.workspace.core import Workspace

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "splice.toml").write_text(
            '[workspace]\nname = "bench"\n[warehouse]\npath = "bench.duckdb"\n'
            "[watch]\ndefault_monitors = false\n"
            '[[metrics]]\nname = "amount"\nnode = "bench:source:events"\ntime = "day"\n'
            'value = "sum(amount)"\ndimensions = ["series"]\n'
        )
        con = duckdb.connect(str(root / "bench.duckdb"))
        con.execute("CREATE SCHEMA raw")
        con.execute(
            "CREATE TABLE raw.events AS SELECT DATE '2025-01-01' + d.i::INTEGER AS day, "
            "'s' || s.i AS series, 1000 * (1 + 0.1 * sin(d.i / 58.0)) "
            "* (0.95 + 0.1 * random()) AS amount "
            f"FROM range({n_days - 1}) d(i), range({n_series}) s(i)"
        )
        con.close()

        with Workspace.open(root) as ws:
            ws._graph = events_graph()
            t0 = time.perf_counter()
            first = watch(ws)
            out["first watch (history, walk-forward)"] = time.perf_counter() - t0
            out["first watch: points"] = float(first.points)
            for k, v in first.timings.items():
                out[f"first watch: {k}"] = v
        con = duckdb.connect(str(root / "bench.duckdb"))
        con.execute(
            f"INSERT INTO raw.events SELECT DATE '2025-01-01' + {n_days - 1}, 's' || s.i, "
            f"1000 * (0.95 + 0.1 * random()) FROM range({n_series}) s(i)"
        )
        con.close()
        with Workspace.open(root) as ws:
            ws._graph = events_graph()
            t0 = time.perf_counter()
            nxt = watch(ws)
            out["next watch"] = time.perf_counter() - t0
            out["next day: points"] = float(nxt.points)
            out["next day: anomalies"] = float(len(nxt.anomalies))
            for k, v in nxt.timings.items():
                out[f"next day: {k}"] = v
    return out


# -- report ---------------------------------------------------------------------------------------
INJECTED_STALE = {"2026-09-28", "2026-09-29"}


def incident_story() -> dict[str, Any]:
    """The stale-rates story on the real demo; the incident's root cause and scope judged."""
    import tempfile

    from splice.demo.story import tell_stale_rates

    with tempfile.TemporaryDirectory(prefix="splice-bench-incident-") as tmp:
        t0 = time.perf_counter()
        story = tell_stale_rates(Path(tmp) / "travel")
        seconds = time.perf_counter() - t0
    incs = story.incidents
    d = incs[0].diagnosis if incs else {}
    origin = (d.get("origin") or {}).get("node")
    source = (d.get("source") or {}).get("node")
    stale = {
        x["interval"]: x["oldest"]
        for p in (d.get("source") or {}).get("payload_dates", [])
        for x in p["days"]
        if x["stale"]
    }
    scope = set((d.get("scope") or {}).get("intervals") or [])
    return {
        "anomalies": len(story.watch.anomalies),
        "incidents": len(incs),
        "origin": origin,
        "source": source,
        "origin_right": origin == "pricing:fx.daily_rates"
        and source == "ingestion:fx_rates_ingest",
        "cause_as_of": stale,
        "cause_right": set(stale) == INJECTED_STALE and set(stale.values()) == {"2026-09-25"},
        "scope": sorted(scope),
        "scope_verdict": "exact"
        if scope == INJECTED_STALE
        else ("wider" if scope > INJECTED_STALE else "narrower/other"),
        "baseline_false_alarms": story.baseline_anomalies,
        "grouping_and_diagnosis_s": story.watch.timings.get("incidents"),
        "watch_s": story.watch.seconds,
        "story_s": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--quick", action="store_true", help="time 2,000 series instead of 10,000")
    ap.add_argument("--no-incident", action="store_true", help="skip the demo incident")
    ap.add_argument(
        "--workspace",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the workspace scenarios on the real demo (bench/detect_workspace.py)",
    )
    ap.add_argument("--scenarios", help="only these workspace scenarios (comma-separated)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    rate, rdays = rate_scenarios()
    book, bdays = booking_scenarios()
    results = []
    for s, d in [(s, rdays) for s in rate] + [(s, bdays) for s in book]:
        results.append({"scenario": s.name, "data": s.data, "splice": s.judge(s.splice, d),
                        "peer": s.judge(s.peer, d)})  # fmt: skip
    clean = clean_year()
    n = 2_000 if args.quick else 10_000
    times = timing(n, 365)
    e2e = watch_timing(n)
    incident = None if args.no_incident else incident_story()
    workspace = None
    if args.workspace:
        from detect_workspace import workspace_bench

        names = args.scenarios.split(",") if args.scenarios else None
        workspace = workspace_bench(names)
    report = {
        "incident": incident,
        "workspace": workspace,
        "scenarios": results,
        "clean_year": clean,
        "timing": {"series": n, "points": 365, **times},
        "watch": {"series": n, **e2e},
        "seconds": time.perf_counter() - t0,
    }
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0

    print("Detection benchmark: Splice's detectors vs the peer (trailing 14-interval z >= 3)")
    print(f"judged year {YEAR_START}..{YEAR_END}, walk-forward; history from {HISTORY_START}\n")
    head = f"{'scenario':42} {'':7} {'detected':8} {'delay':5} {'scope':8} {'cells':7} {'false':5}  flagged"
    print(head)
    print("-" * len(head))
    for r in results:
        for who in ("splice", "peer"):
            j = r[who]
            print(
                f"{r['scenario'] if who == 'splice' else '':42} {who:7} "
                f"{'yes' if j['detected'] else 'NO':8} {'-' if j['delay'] is None else j['delay']:>5} "
                f"{j['scope']:8} {j['cells_found']:7} {j['false_alarms']:>5}  "
                f"{', '.join(j['flagged'][:3]) or '-'}"
            )
    print("\nfalse alarms over the clean year (every series together)")
    for c in clean:
        peer = "-" if c["peer_false_alarms"] is None else c["peer_false_alarms"]
        print(
            f"  {c['data']:46} {c['series']:>3} series   splice {c['splice_false_alarms']:>4}"
            f"   peer {peer:>5}"
            + (f"   e.g. {', '.join(c['splice_examples'])}" if c["splice_examples"] else "")
        )
    print(
        f"\ntime: {n:,} series x 365 points: one new interval judged in "
        f"{times['one new interval']:.3f} s (target < {TARGET_DETECT_S:g} s); "
        f"walk-forward over all 365 intervals {times['walk-forward over every interval']:.2f} s"
    )
    print(
        f"      the walk-forward raised {times['walk-forward: anomalies']:.0f} alarms on these "
        f"{n * 365:,} synthetic clean points"
    )
    print(
        f"splice watch, one declared metric x {n:,} series (SQL in DuckDB, history in SQLite): "
        f"first watch ({e2e['first watch: points']:,.0f} points) "
        f"{e2e['first watch (history, walk-forward)']:.1f} s; next day's watch "
        f"({e2e['next day: points']:,.0f} points) {e2e['next watch']:.2f} s = measure "
        f"{e2e['next day: measure']:.2f} + history {e2e['next day: history']:.2f} + detect "
        f"{e2e['next day: detect']:.2f} + "
        f"write {e2e['next day: write']:.2f}"
    )
    if incident:
        i = incident
        print(
            f"\nincident on the real demo (stale rates 2026-09-28..29): {i['anomalies']} anomalies "
            f"-> {i['incidents']} incident(s); baseline false alarms {i['baseline_false_alarms']}"
        )
        print(
            f"  root cause: {i['origin']} fed by {i['source']}: "
            f"{'RIGHT' if i['origin_right'] else 'WRONG'}; vendor as-of {i['cause_as_of']}: "
            f"{'RIGHT' if i['cause_right'] else 'WRONG'}"
        )
        print(
            f"  scope {', '.join(i['scope'])}: {i['scope_verdict']}; grouping + diagnosis "
            f"{i['grouping_and_diagnosis_s']:.2f} s of a {i['watch_s']:.1f} s watch "
            f"(story with the real tools {i['story_s']:.0f} s)"
        )
    if workspace:
        from detect_workspace import print_table

        print_table(workspace)
    print(f"(bench ran {report['seconds']:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
