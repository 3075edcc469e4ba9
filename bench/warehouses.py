"""Benchmark: the same work on DuckDB, PostgreSQL and Spark, in one run, on the same data.

    python bench/warehouses.py                 # everything, a throwaway local PostgreSQL
    python bench/warehouses.py --quick         # 2,000 series instead of 10,000; one repeat
    python bench/warehouses.py --pg-url URL    # a PostgreSQL server of yours (a new database
                                               # is made on it and dropped at the end)
    python bench/warehouses.py --json
    python bench/warehouses.py --no-spark      # without the local Spark (pyspark, Java 17)

What it measures:

1. ``splice watch`` over one declared metric with 10,000 series (365 days of history each: the
   rows are generated once by DuckDB, written to CSV and loaded into both warehouses, so both
   hold the same 3.6 million rows): the first watch (the whole history, judged walk-forward)
   and the next day's (one new interval per series), split into measure / history / detect /
   write as ``splice watch`` times them;
2. the demo story's repair (``splice.demo.story.tell_stale_rates`` on each warehouse, then
   propose, approve and apply the proposal: undo capture, reload, restatement, rebuild,
   verification), the apply's time and its steps;
   (on Spark too: a throwaway local Spark Connect server, ``local[2]``);
3. ``splice run`` against the tools by hand on PostgreSQL (and on Spark): the built demo with the next day due,
   ``sqlmesh run`` + ``dbt build`` by hand (subprocess CLIs) against ``splice run`` (subprocess
   CLI), median of ``--repeat`` fresh databases; the target is at most 10% overhead, as on
   DuckDB (bench/run.py).

Wall times on a shared 2-core machine; the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

N_DAYS = 365
TARGET_OVERHEAD = 0.10


@contextmanager
def postgres(url: str | None) -> Iterator[Any]:
    """A PostgreSQL server for the run: the one at ``url``, or a throwaway local one."""
    from splice.warehouse.postgres.local_server import LocalPostgres

    if url:
        yield url
        return
    base = Path(tempfile.mkdtemp(prefix="splice-bench-pg-"))
    base.chmod(0o755)
    server = LocalPostgres(base / "data").start()
    try:
        yield server.url("postgres")
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def new_database(server_url: str, name: str) -> str:
    """Create database ``name`` on the server (dropping an older one) and return its URL."""
    import psycopg
    from sqlglot import exp

    ident = exp.to_identifier(name, quoted=True)
    with psycopg.connect(server_url, autocommit=True) as con:
        drop = exp.Drop(this=exp.Table(this=ident), kind="DATABASE", exists=True)
        con.execute(drop.sql("postgres").encode())
        create = exp.Create(this=exp.Table(this=ident), kind="DATABASE")
        con.execute(create.sql("postgres").encode())
    head, _, _ = server_url.rpartition("/")
    return f"{head}/{name}"


# -- 1. splice watch over a 10,000-series metric ---------------------------------------------------
def generate_events(csv: Path, n_series: int, n_days: int) -> None:
    """The metric's rows (day, series, amount) for ``n_days - 1`` days, as CSV (seeded)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SELECT setseed(0.16)")
    con.execute(
        f"COPY (SELECT DATE '2025-01-01' + d.i::INTEGER AS day, 's' || s.i AS series, "
        "round(1000 * (1 + 0.1 * sin(d.i / 58.0)) * (0.95 + 0.1 * random()), 4) AS amount "
        f"FROM range({n_days - 1}) d(i), range({n_series}) s(i)) TO '{csv}' (HEADER false)"
    )
    con.close()


def next_day_rows(n_series: int, n_days: int) -> list[tuple[str, str, float]]:
    import random

    rnd = random.Random(16)
    from datetime import date, timedelta

    day = (date(2025, 1, 1) + timedelta(days=n_days - 1)).isoformat()
    return [(day, f"s{i}", round(1000 * (0.95 + 0.1 * rnd.random()), 4)) for i in range(n_series)]


def _toml(warehouse: str) -> str:
    return (
        f'[workspace]\nname = "bench"\n[warehouse]\n{warehouse}\n'
        "[watch]\ndefault_monitors = false\n"
        '[[metrics]]\nname = "amount"\nnode = "bench:source:events"\ntime = "day"\n'
        'value = "sum(amount)"\ndimensions = ["series"]\n'
    )


def load_duckdb(root: Path, csv: Path) -> float:
    import duckdb

    (root / "splice.toml").write_text(_toml('path = "bench.duckdb"'))
    t0 = time.perf_counter()
    con = duckdb.connect(str(root / "bench.duckdb"))
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.events (day DATE, series TEXT, amount DOUBLE PRECISION)")
    con.execute(f"COPY raw.events FROM '{csv}' (HEADER false)")
    con.close()
    return time.perf_counter() - t0


def load_postgres(root: Path, url: str, csv: Path) -> float:
    import psycopg

    (root / "splice.toml").write_text(_toml(f'type = "postgres"\nurl = "{url}"'))
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("CREATE SCHEMA raw")
        con.execute("CREATE TABLE raw.events (day DATE, series TEXT, amount DOUBLE PRECISION)")
        with (
            con.cursor().copy("COPY raw.events FROM STDIN WITH (FORMAT csv)") as cp,
            csv.open("rb") as f,
        ):
            while chunk := f.read(1 << 20):
                cp.write(chunk)
        con.execute("ANALYZE raw.events")
    return time.perf_counter() - t0


def add_next_day(
    kind: str, root: Path, url: str | None, rows: list[tuple[str, str, float]]
) -> None:
    if kind == "duckdb":
        import duckdb

        con = duckdb.connect(str(root / "bench.duckdb"))
        con.executemany("INSERT INTO raw.events VALUES (CAST(? AS DATE), ?, ?)", rows)
        con.close()
        return
    import psycopg

    assert url
    with psycopg.connect(url, autocommit=True) as con, con.cursor() as cur:
        cur.executemany("INSERT INTO raw.events VALUES (%s::date, %s, %s)", rows)


def watch_once(root: Path) -> tuple[float, Any]:
    from detect import events_graph
    from splice.watch.service import watch
    from splice.workspace.core import Workspace

    with Workspace.open(root) as ws:
        ws._graph = events_graph(ws.default_catalog)  # in the workspace's catalog
        t0 = time.perf_counter()
        result = watch(ws)
        return time.perf_counter() - t0, result


def watch_bench(server_url: str, n_series: int) -> dict[str, Any]:
    out: dict[str, Any] = {"series": n_series, "days": N_DAYS}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "events.csv"
        generate_events(csv, n_series, N_DAYS)
        rows = next_day_rows(n_series, N_DAYS)
        for kind in KINDS:
            root = Path(tmp) / kind
            root.mkdir()
            url = new_database(server_url, "splice_bench_watch") if kind != "duckdb" else None
            load = (
                load_duckdb(root, csv) if kind == "duckdb" else load_postgres(root, url or "", csv)
            )
            if kind == "postgres+state":  # Splice's own state in PostgreSQL as well
                state = new_database(server_url, "splice_bench_state")
                state = state.replace("postgresql://", "postgresql+psycopg://", 1)
                with (root / "splice.toml").open("a") as f:
                    f.write(f'\n[state]\nurl = "{state}"\n')
            first_s, first = watch_once(root)
            add_next_day("duckdb" if kind == "duckdb" else "postgres", root, url, rows)
            next_s, nxt = watch_once(root)
            out[kind] = {
                "load": load,
                "first watch": first_s,
                "first watch: points": first.points,
                "first watch: anomalies": len(first.anomalies),
                "next watch": next_s,
                "next day: points": nxt.points,
                "next day: anomalies": len(nxt.anomalies),
                **{f"next day: {k}": v for k, v in nxt.timings.items()},
            }
    return out


#: the warehouse (and where Splice's state is): DuckDB + SQLite, PostgreSQL + SQLite, both in
#: PostgreSQL
KINDS = ("duckdb", "postgres", "postgres+state")


def _fmt_watch(w: dict[str, Any]) -> list[str]:
    lines = [f"1. splice watch, one metric x {w['series']:,} series x {w['days']} days"]
    head = f"   {'':14} {'load':>7} {'first watch':>12} {'next watch':>11}  next day split"
    lines.append(head)
    for kind in KINDS:
        r = w[kind]
        split = " + ".join(
            f"{k.split(': ', 1)[1]} {v:.2f}"
            for k, v in r.items()
            if k.startswith("next day: ") and k not in ("next day: points", "next day: anomalies")
        )
        lines.append(
            f"   {kind:14} {r['load']:6.1f}s {r['first watch']:11.1f}s {r['next watch']:10.2f}s  "
            f"{split}  ({r['next day: points']:,} points, {r['next day: anomalies']} anomalies)"
        )
    return lines


# -- 2. the demo story's repair ----------------------------------------------------------------
@contextmanager
def spark() -> Iterator[Any]:
    """A throwaway local Spark Connect server for the run (pyspark's own Spark, Java 17)."""
    from splice.warehouse.spark.local_server import LocalSpark

    base = Path(tempfile.mkdtemp(prefix="splice-bench-spark-"))
    server = LocalSpark(base, memory="2g").start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _url(kind: str, server_url: str, spark_server: Any, name: str) -> str | None:
    if kind == "postgres":
        return new_database(server_url, name)
    if kind == "spark":
        spark_server.drop_schemas()  # one demo at a time on the one server
        return str(spark_server.remote)
    return None


def repair_bench(server_url: str, spark_server: Any = None) -> dict[str, Any]:
    """The stale-rates story on each warehouse, then its repair timed step by step."""
    from splice import api
    from splice.demo.story import DEMO_AGENT, DEMO_OWNER, tell_stale_rates
    from splice.demo.vendor import set_incident
    from splice.support.principals import Principal

    out: dict[str, Any] = {}
    agent = Principal.of(DEMO_AGENT, kind="agent", auth="cli-as", scopes="read,propose")
    owner = Principal.of(DEMO_OWNER, kind="person", auth="cli-as")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("duckdb", "postgres") + (("spark",) if spark_server else ()):
            url = _url(kind, server_url, spark_server, "splice_bench_story")
            t0 = time.perf_counter()
            story = tell_stale_rates(Path(tmp) / kind / "travel", warehouse=kind, warehouse_url=url)
            told = time.perf_counter() - t0
            ws_dir = story.build.workspace
            set_incident(ws_dir, None)
            with api.open_workspace(ws_dir) as ws:
                t1 = time.perf_counter()
                p = api.propose(ws, story.incidents[0].incident_id, principal=agent)
                t2 = time.perf_counter()
                api.approve(ws, p.proposal_id, principal=owner, comment="bench")
                t3 = time.perf_counter()
                applied = api.apply(ws, p.proposal_id, principal=owner)
                t4 = time.perf_counter()
            out[kind] = {
                "story (build, baseline, run on, watch)": told,
                "propose (draft + undo capture)": t2 - t1,
                "approve": t3 - t2,
                "apply (check, reload, restate, rebuild, verify)": t4 - t3,
                "undo rows": sum(u.rows for u in p.undo),
                "verified": bool(applied.verification and applied.verification.passed),
            }
    return out


def _fmt_repair(r: dict[str, Any]) -> list[str]:
    lines = ["2. the demo story's repair (stale rates 2026-09-28..29)"]
    for kind in [k for k in ("duckdb", "postgres", "spark") if k in r]:
        x = r[kind]
        lines.append(
            f"   {kind:10} story {x['story (build, baseline, run on, watch)']:5.1f}s; propose "
            f"{x['propose (draft + undo capture)']:5.2f}s ({x['undo rows']:,} rows saved); "
            f"approve {x['approve']:4.2f}s; apply {x['apply (check, reload, restate, rebuild, verify)']:5.2f}s; "
            f"{'verified' if x['verified'] else 'NOT VERIFIED'}"
        )
    return lines


# -- 3. splice run against the tools by hand, on PostgreSQL ------------------------------------
NEXT_DAY = "2026-10-02"
LAST_DAY = "2026-10-01"
BIN = Path(sys.executable).parent


def _fresh(server_url: str, name: str, dest: Path, spark_server: Any = None) -> Path:
    """The demo built anew on a database of its own (SQLMesh's state names its catalog, so
    a copied database under another name is not the same project); on Spark, on the server
    emptied first."""
    from splice.demo import build_demo

    kind = "spark" if spark_server is not None else "postgres"
    url = _url(kind, server_url, spark_server, name)
    return build_demo(dest, warehouse=kind, warehouse_url=url).workspace


def run_bench(server_url: str, repeat: int, spark_server: Any = None) -> dict[str, Any]:
    """``splice run`` against ``sqlmesh run`` + ``dbt build`` by hand, on PostgreSQL (or on
    Spark, with ``spark_server``)."""
    import statistics

    from run import _timed  # the same subprocess timing as bench/run.py (DuckDB)

    times: dict[str, list[float]] = {"hand_sqlmesh": [], "hand_dbt": [], "hand": [], "splice": [],
                                     "noop": []}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(repeat):
            hand = _fresh(server_url, f"splice_bench_hand_{i}", root / f"hand-{i}" / "travel",
                          spark_server)  # fmt: skip
            t_sm = _timed(
                [str(BIN / "sqlmesh"), "-p", "pricing", "run", "prod", "--end", LAST_DAY], hand
            )
            t_dbt = _timed([str(BIN / "dbt"), "build", "--project-dir", "finance", "--profiles-dir",
                            "finance"], hand)  # fmt: skip
            times["hand_sqlmesh"].append(t_sm)
            times["hand_dbt"].append(t_dbt)
            times["hand"].append(t_sm + t_dbt)
            sp = _fresh(server_url, f"splice_bench_splice_{i}", root / f"splice-{i}" / "travel",
                        spark_server)  # fmt: skip
            cmd = [str(BIN / "splice"), "run", "--execution-time", NEXT_DAY]
            times["splice"].append(_timed(cmd, sp))
            # nothing left to do: the remembered no-op plan (SQLMesh's state checksummed)
            times["noop"].append(_timed(cmd, sp))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"repeat": repeat, "median": med, "all": times,
            "overhead": med["splice"] / med["hand"] - 1.0,
            "warehouse": "Spark" if spark_server is not None else "PostgreSQL"}  # fmt: skip


def _fmt_run(r: dict[str, Any]) -> list[str]:
    m = r["median"]
    verdict = "within" if r["overhead"] <= TARGET_OVERHEAD else "OVER"
    return [
        f"3. splice run vs the tools by hand on {r.get('warehouse', 'PostgreSQL')} (next day due; "
        f"median of {r['repeat']})",
        f"   by hand: sqlmesh run {m['hand_sqlmesh']:.2f}s + dbt build {m['hand_dbt']:.2f}s = "
        f"{m['hand']:.2f}s; splice run {m['splice']:.2f}s: overhead {100 * r['overhead']:+.1f}% "
        f"({verdict} the {100 * TARGET_OVERHEAD:.0f}% target); a second splice run with nothing "
        f"to do {m['noop']:.2f}s",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pg-url", help="a PostgreSQL server (URL of any database on it)")
    ap.add_argument("--quick", action="store_true", help="2,000 series, one repeat")
    ap.add_argument("--repeat", type=int, default=3, help="fresh databases per run figure")
    ap.add_argument("--only", help="comma-separated parts: watch,repair,run")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-spark", action="store_true",
                    help="leave Spark out (it needs pyspark and Java 17: make test installs both)")  # fmt: skip
    args = ap.parse_args(argv)
    parts = set((args.only or "watch,repair,run").split(","))
    n_series = 2_000 if args.quick else 10_000
    report: dict[str, Any] = {"load_average": os.getloadavg()}
    t0 = time.perf_counter()
    from contextlib import nullcontext

    on_spark = not args.no_spark and bool(parts & {"repair", "run"})
    with postgres(args.pg_url) as server_url, spark() if on_spark else nullcontext() as sp:
        if "watch" in parts:
            report["watch"] = watch_bench(server_url, n_series)
        if "repair" in parts:
            report["repair"] = repair_bench(server_url, sp)
        if "run" in parts:
            report["run"] = run_bench(server_url, 1 if args.quick else args.repeat)
            if sp is not None:
                report["run_spark"] = run_bench(server_url, 1 if args.quick else args.repeat, sp)
    report["seconds"] = time.perf_counter() - t0
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print("Warehouses benchmark: DuckDB, PostgreSQL and Spark, same data, one run")
    print(f"(load average {', '.join(f'{x:.2f}' for x in report['load_average'])})\n")
    if "watch" in report:
        print("\n".join(_fmt_watch(report["watch"])))
    if "repair" in report:
        print("\n".join(_fmt_repair(report["repair"])))
    if "run" in report:
        print("\n".join(_fmt_run(report["run"])))
    if "run_spark" in report:
        print("\n".join(_fmt_run(report["run_spark"])))
    print(f"\ntotal {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
