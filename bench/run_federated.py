"""Benchmark: `splice run` on a generated federated workspace of a few hundred models.

    python bench/run_federated.py                      # 200 dbt + 100 SQLMesh models
    python bench/run_federated.py --n-dbt 400 --n-sqlmesh 200 --dir /tmp/bench-fed
    python bench/run_federated.py --repeat 3              # median of 3 fresh copies

The workspace is bench/_gen.py's (SQLMesh models on 20 raw tables, dbt models reading them
through sources; views, full tables and SQLMesh incrementals on ``event_date``), with the raw
tables filled with seeded rows for 2024-01-01..2024-03-31.  Three pieces of work, each timed
by hand (in one fresh Python process: SQLMesh's ``Context`` then ``dbtRunner``, tool imports
included) and with Splice (``splice.api.run`` in one fresh process):

1. the first build: SQLMesh's prod plan applied (execution time 2024-04-01), then every dbt
   model and test;
2. the next day (2024-04-02): ``Context.run`` for the new interval, then ``dbt build`` of
   everything (by hand nobody knows what is unaffected); Splice builds what its plan says;
3. a no-op: ``splice run`` again with nothing new.

Both ways must end with the same rows in every dbt mart (checked).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

FIRST = "2024-04-01"
NEXT = "2024-04-02"


def _env(ws: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPLICE_WORKSPACE", "SPLICE_TARGET")}
    env.update(
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
        DO_NOT_TRACK="1",
        SQLMESH__DISABLE_ANONYMIZED_ANALYTICS="true",
        PYTHONPATH=str(ROOT / "src"),
        SPLICE_WAREHOUSE=str(ws / "warehouse.duckdb"),  # the generated dbt profile reads it
    )
    return env


def generate(base: Path, n_dbt: int, n_sqlmesh: int, rows: int) -> int:
    """The generated workspace with its raw tables filled (deterministic)."""
    import duckdb

    from _gen import COLUMNS, generate_federated_workspace
    from _gen import KEYS as _KEYS

    ws = generate_federated_workspace(base, n_dbt, n_sqlmesh)
    # SQLMesh resolves a relative DuckDB path against the process's directory, not the
    # project's: name the file absolutely, so every process below opens the same warehouse
    cfg = base / "sqlmesh_proj" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("../warehouse.duckdb", str(base / "warehouse.duckdb")))
    con = duckdb.connect(str(base / "warehouse.duckdb"))
    try:
        con.execute("CREATE SCHEMA IF NOT EXISTS raw")
        for i, rel in enumerate(sorted(ws.raw)):
            table = rel.split(".", 1)[1]
            measures = ", ".join(
                f"round(((i * {7 + k} + {i}) % 1000) / 10.0, 1)::DOUBLE AS {c}"
                for k, c in enumerate(c for c in COLUMNS if c not in _KEYS)
            )
            con.execute(
                f"CREATE TABLE {table} AS SELECT i::BIGINT AS id, (i * 31 + {i}) % 500 AS customer_id, "
                f"(i * 17) % 100 AS product_id, ['N', 'E', 'S', 'W'][1 + i % 4] AS region, "
                f"DATE '2024-01-01' + (i % 91)::INT AS event_date, {measures} "
                f"FROM range({rows}) t(i)"
            )
    finally:
        con.close()
    return len(ws.models)


def _worker(kind: str, ws: Path, when: str) -> dict[str, Any]:
    """In a fresh process: the work, tool imports included."""
    from datetime import datetime

    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if kind in ("hand-first", "hand-next"):
        from sqlmesh import Context

        ctx = Context(paths=str(ws / "sqlmesh_proj"))
        et = datetime.fromisoformat(when)
        if kind == "hand-first":
            ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time=et)
        else:
            ctx.run("prod", execution_time=et)
        ctx.close()
        t1 = time.perf_counter()
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
        from dbt.cli.main import dbtRunner

        d = str(ws / "dbt_proj")
        res = dbtRunner().invoke(
            ["build", "--project-dir", d, "--profiles-dir", d, "--log-level", "none"]
        )
        DuckDBConnectionManager.close_all_connections()
        if not res.success:
            raise SystemExit(f"dbt build failed: {res.exception}")
        out.update(sqlmesh=t1 - t0, dbt=time.perf_counter() - t1, results=len(res.result.results))
    else:
        from splice.api import run
        from splice.workspace.core import Workspace

        with Workspace.open(ws) as w:
            report = run(w, execution_time=when)
        if not report.ok:
            raise SystemExit(f"splice run failed: {json.dumps(report.summary())[:2000]}")
        out.update(built=len(report.built), checks=len(report.checks),
                   segments=len(report.segments), tools=report.timings.get("tools", 0.0))  # fmt: skip
    out["total"] = time.perf_counter() - t0
    return out


def _in_process(kind: str, ws: Path, when: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, __file__, "--worker", kind, str(ws), when],
        env=_env(ws), capture_output=True, text=True, cwd=ws,
    )  # fmt: skip
    if res.returncode != 0:
        raise SystemExit(f"worker {kind} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _marts(ws: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'analytics' "
            "AND table_name LIKE 'fct_%' ORDER BY 1").fetchall()]  # fmt: skip
        return {t: int(con.execute(f"SELECT COUNT(*) FROM analytics.{t}").fetchone()[0])
                for t in tables}  # fmt: skip
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-dbt", type=int, default=200)
    ap.add_argument("--n-sqlmesh", type=int, default=100)
    ap.add_argument("--rows", type=int, default=2000, help="rows per raw table")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="fresh copies measured (median)")
    ap.add_argument("--worker", nargs=3, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, ws, when = args.worker
        print(json.dumps(_worker(kind, Path(ws), when)))
        return
    root = args.dir or Path(tempfile.mkdtemp(prefix="splice-bench-fed-"))
    if root.exists():
        shutil.rmtree(root)
    base = root / "base"
    t0 = time.perf_counter()
    n = generate(base, args.n_dbt, args.n_sqlmesh, args.rows)
    print(f"generated {n} models ({args.n_dbt} dbt, {args.n_sqlmesh} SQLMesh) with "
          f"{args.rows} rows per raw table in {time.perf_counter() - t0:.1f} s", file=sys.stderr)  # fmt: skip
    import statistics

    runs: list[dict[str, Any]] = []
    same = True
    for i in range(args.repeat):
        hand, sp = root / f"hand-{i}", root / f"splice-{i}"
        for dest in (hand, sp):
            shutil.copytree(base, dest)
            cfg = dest / "sqlmesh_proj" / "config.yaml"
            cfg.write_text(cfg.read_text().replace(str(base / "warehouse.duckdb"),
                                                   str(dest / "warehouse.duckdb")))  # fmt: skip
        one: dict[str, Any] = {}
        for label, h_kind, when in (
            ("first build", "hand-first", FIRST),
            ("next day", "hand-next", NEXT),
        ):
            print(f"repeat {i + 1}/{args.repeat}, {label}: by hand (load "
                  f"{os.getloadavg()[0]:.2f})", file=sys.stderr)  # fmt: skip
            h = _in_process(h_kind, hand, when)
            print(f"repeat {i + 1}/{args.repeat}, {label}: splice", file=sys.stderr)
            s = _in_process("splice", sp, when)
            one[label] = (h, s)
        print(f"repeat {i + 1}/{args.repeat}, no-op: splice", file=sys.stderr)
        one["no-op"] = _in_process("splice", sp, NEXT)
        same = same and _marts(hand) == _marts(sp)
        runs.append(one)

    def med(label: str, side: int, key: str) -> float:
        return statistics.median(float(r[label][side][key]) for r in runs)

    fig = {label: ({k: med(label, 0, k) for k in ("total", "sqlmesh", "dbt", "results")},
                   {**runs[0][label][1], "total": med(label, 1, "total")})
           for label in ("first build", "next day")}  # fmt: skip
    noop = {**runs[0]["no-op"], "total": statistics.median(r["no-op"]["total"] for r in runs)}
    overs = {label: [r[label][1]["total"] / r[label][0]["total"] - 1 for r in runs]
             for label in fig}  # fmt: skip

    print(f"splice run on a generated federated workspace: {n} models "
          f"({args.n_dbt} dbt, {args.n_sqlmesh} SQLMesh); median of {args.repeat}; load "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")  # fmt: skip
    print(f"{'work':44} {'by hand':>9} {'splice':>9} {'overhead':>9}  splice built")
    for label, (h, s) in fig.items():
        over = s["total"] / h["total"] - 1
        print(f"{label:44} {h['total']:8.2f}s {s['total']:8.2f}s {over * 100:8.1f}%  "
              f"{s['built']} nodes, {s['checks']} checks, {s['segments']} segments "
              f"(by hand: SQLMesh {h['sqlmesh']:.2f} s + dbt {h['dbt']:.2f} s, {h['results']} dbt results)")  # fmt: skip
    print(f"{'no-op splice run':44} {'':>9} {noop['total']:8.2f}s {'':>9}  {noop['built']} nodes")
    for label, o in overs.items():
        print(f"overhead of each repeat, {label}: " + ", ".join(f"{x * 100:.1f}%" for x in o))
    print(
        f"\nsame rows in every dbt mart both ways: {'yes' if same else 'NO'}  (workspaces in {root})"
    )
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
