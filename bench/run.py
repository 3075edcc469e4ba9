"""Benchmark: `splice run` on the demo workspace versus running the tools by hand.

    python bench/run.py                  # build the demo into a temporary directory, 3 repeats
    python bench/run.py --repeat 5 --dir /tmp/bench-run

The work, the same in every measurement: a copy of the built demo (Q3 2026) where the next day
is due (SQLMesh's clock at 2026-10-02: one daily interval of each of pricing's 3 models, with
their 12 audits) and finance was never built by Splice (so all of dbt builds: 1 seed, 4 models,
16 tests).

1. by hand, subprocess CLIs: ``sqlmesh -p pricing run prod --end 2026-10-01`` then
   ``dbt build --project-dir finance --profiles-dir finance`` (the CLI of sqlmesh has no
   --execution-time; --end bounds the run to the same interval);
   against ``splice run --execution-time 2026-10-02`` (subprocess CLI: imports, graph load, plan,
   lock, journal, both tools);
2. by hand, in process (one fresh Python process each; time measured inside it, tool imports
   included): ``Context(paths=pricing).run("prod", execution_time=...)`` then
   ``dbtRunner().invoke(["build", ...])``; against ``splice.api.run(ws, execution_time=...)``
   in a fresh process, split into graph load, plan and run;
3. a no-op: ``splice run`` again on the copy splice just ran (nothing to build). A run that
   succeeded re-plans with its graph still loaded and remembers that no-op plan
   (:mod:`splice.plan.memo`), so this loads no tool at all: subprocess CLI wall time, and in
   process; then ``splice run --fresh`` (plans from scratch: dbt parse, SQLMesh load), split
   into graph load, plan and run.

Each figure is the median of ``--repeat`` fresh copies. The machine's load is printed: these
are wall times on a shared 2-core box.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

NEXT_DAY = "2026-10-02"
LAST_DAY = "2026-10-01"  # sqlmesh's CLI --end is inclusive: the interval [10-01, 10-02)
BIN = Path(sys.executable).parent
TARGET_OVERHEAD = 0.10
TARGET_NOOP_S = 2.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPLICE_WORKSPACE", "SPLICE_TARGET")}
    env.update(
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
        DO_NOT_TRACK="1",
        SQLMESH__DISABLE_ANONYMIZED_ANALYTICS="true",
        PYTHONPATH=str(ROOT / "src"),
    )
    return env


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return elapsed


def _copy(base: Path, dest: Path) -> Path:
    from splice.demo import relocate

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest, symlinks=True)
    relocate(dest)
    return dest


def _worker(kind: str, ws: Path) -> dict[str, Any]:
    """Run in a fresh process: the in-process measurements (tool imports included)."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if kind == "hand":
        from datetime import datetime

        from sqlmesh import Context

        ctx = Context(paths=str(ws / "pricing"))
        ctx.run("prod", execution_time=datetime.fromisoformat(NEXT_DAY))
        ctx.close()
        t1 = time.perf_counter()
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
        from dbt.cli.main import dbtRunner

        fin = str(ws / "finance")
        res = dbtRunner().invoke(
            ["build", "--project-dir", fin, "--profiles-dir", fin, "--log-level", "none"]
        )
        DuckDBConnectionManager.close_all_connections()
        if not res.success:
            raise SystemExit(f"dbt build failed: {res.exception}")
        out.update(sqlmesh=t1 - t0, dbt=time.perf_counter() - t1, results=len(res.result.results))
    else:
        from splice.run.runner import make_run_plan, run_plan, run_session
        from splice.workspace.core import Workspace

        t_imp = time.perf_counter()
        with Workspace.open(ws) as w:
            if kind != "noop2":
                w.graph()
            t_graph = time.perf_counter()
            with run_session(w, command=f"bench {kind}") as session:
                plan, who = make_run_plan(w, None, execution_time=NEXT_DAY, fresh=(kind == "noop"))
                t_plan = time.perf_counter()
                report = run_plan(w, plan, execution_time=NEXT_DAY, session=session, planner=who)
            t_run = time.perf_counter()
        if not report.ok:
            raise SystemExit(f"splice run failed: {json.dumps(report.summary())}")
        out.update(
            imports=t_imp - t0,
            graph=t_graph - t_imp,
            plan=t_plan - t_graph,
            run=t_run - t_plan,
            built=len(report.built),
            checks=len(report.checks),
            segments=len(report.segments),
            tools=report.timings.get("tools", 0.0),
            remember=report.timings.get("remember", 0.0),
            plan_timings=plan.timings,
        )
    out["total"] = time.perf_counter() - t0
    return out


def _in_process(kind: str, ws: Path) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, __file__, "--worker", kind, str(ws)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise SystemExit(f"worker {kind} failed:\n{res.stdout}\n{res.stderr}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _check_same_work(ws: Path) -> str:
    """Both ways must leave SQLMesh's intervals at 2026-10-02 and dbt's tables built."""
    import duckdb

    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        n = con.execute("SELECT COUNT(*) FROM finance.fct_gmv_qtd").fetchone()
        end = con.execute("SELECT MAX(end_ts) FROM sqlmesh._intervals").fetchone()
    finally:
        con.close()
    when = time.strftime("%Y-%m-%d", time.gmtime(int(end[0]) / 1000)) if end and end[0] else "?"
    return f"fct_gmv_qtd {n[0] if n else '?'} rows, SQLMesh intervals end {when}"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", type=Path, default=None, help="keep the workspaces here")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("workspace", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.workspace)))
        return

    from splice.demo import build_demo

    root = args.dir or Path(tempfile.mkdtemp(prefix="splice-bench-run-"))
    root.mkdir(parents=True, exist_ok=True)
    base = root / "base"
    t0 = time.perf_counter()
    if not (base / ".splice" / "demo.json").exists():
        build_demo(base, force=base.exists())
    print(f"demo built in {time.perf_counter() - t0:.1f} s at {base}", file=sys.stderr)

    rows: dict[str, list[float]] = {}
    details: dict[str, Any] = {}

    def add(key: str, value: float) -> None:
        rows.setdefault(key, []).append(value)

    for i in range(args.repeat):
        print(f"repeat {i + 1}/{args.repeat} (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
        # 1. subprocess CLIs
        hand = _copy(base, root / f"hand-cli-{i}")
        t_sm = _timed(
            [str(BIN / "sqlmesh"), "-p", "pricing", "run", "prod", "--end", LAST_DAY], hand
        )
        t_dbt = _timed(
            [str(BIN / "dbt"), "build", "--project-dir", "finance", "--profiles-dir", "finance"],
            hand,
        )
        add("cli_hand_sqlmesh", t_sm)
        add("cli_hand_dbt", t_dbt)
        add("cli_hand", t_sm + t_dbt)
        details["hand_cli_check"] = _check_same_work(hand)
        sp = _copy(base, root / f"splice-cli-{i}")
        add("cli_splice", _timed([str(BIN / "splice"), "run", "--execution-time", NEXT_DAY], sp))
        details["splice_cli_check"] = _check_same_work(sp)
        # the run remembered its no-op plan: the next run is given it without loading the tools
        add("cli_noop", _timed([str(BIN / "splice"), "run", "--execution-time", NEXT_DAY], sp))
        fresh = [str(BIN / "splice"), "run", "--fresh", "--execution-time", NEXT_DAY]
        add("cli_noop_fresh", _timed(fresh, sp))
        # 2. in process, each in a fresh process
        h = _in_process("hand", _copy(base, root / f"hand-py-{i}"))
        add("py_hand", h["total"])
        add("py_hand_sqlmesh", h["sqlmesh"])
        add("py_hand_dbt", h["dbt"])
        spw = _copy(base, root / f"splice-py-{i}")
        s = _in_process("splice", spw)
        for k in ("total", "imports", "graph", "plan", "run", "tools", "remember"):
            add(f"py_splice_{k}", s[k])
        details["splice_work"] = {k: s[k] for k in ("built", "checks", "segments")}
        # 3. the no-op, in process
        n = _in_process("noop", spw)
        for k in ("total", "imports", "graph", "plan", "run"):
            add(f"py_noop_{k}", n[k])
        details["noop_work"] = {k: n[k] for k in ("built", "checks", "segments")}
        details["noop_plan_timings"] = n["plan_timings"]
        n2 = _in_process("noop2", spw)  # the remembered no-op plan: no tool is loaded
        add("py_noop2_total", n2["total"])
        add("py_noop2_plan_run", n2["plan"] + n2["run"])

    med = {k: statistics.median(v) for k, v in rows.items()}
    over_cli = med["cli_splice"] / med["cli_hand"] - 1
    work_py = med["py_splice_graph"] + med["py_splice_plan"] + med["py_splice_run"]
    over_py = med["py_splice_total"] / med["py_hand"] - 1
    noop_py = med["py_noop_plan"] + med["py_noop_run"]

    def fmt(x: float) -> str:
        return f"{x:6.2f} s"

    lines = [
        f"splice run on the demo (median of {args.repeat}; load {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} cores)",
        "",
        f"{'measurement':58} {'seconds':>9}",
        f"{'-' * 58} {'-' * 9}",
        f"{'by hand, CLIs: sqlmesh run':58} {fmt(med['cli_hand_sqlmesh'])}",
        f"{'by hand, CLIs: dbt build':58} {fmt(med['cli_hand_dbt'])}",
        f"{'by hand, CLIs: total':58} {fmt(med['cli_hand'])}",
        f"{'splice run (CLI)':58} {fmt(med['cli_splice'])}",
        f"{'  overhead vs the CLIs by hand (target <= 10%)':58} {over_cli * 100:7.1f} %",
        f"{'by hand, in process: Context.run':58} {fmt(med['py_hand_sqlmesh'])}",
        f"{'by hand, in process: dbtRunner build':58} {fmt(med['py_hand_dbt'])}",
        f"{'by hand, in process: total':58} {fmt(med['py_hand'])}",
        f"{'splice.api.run in process: total':58} {fmt(med['py_splice_total'])}",
        f"{'  of which imports':58} {fmt(med['py_splice_imports'])}",
        f"{'  of which graph load (dbt parse, SQLMesh load, join)':58} {fmt(med['py_splice_graph'])}",
        f"{'  of which plan':58} {fmt(med['py_splice_plan'])}",
        f"{'  of which run (lock, journal, both tools, evidence)':58} {fmt(med['py_splice_run'])}",
        f"{'    inside the tools (SQLMesh run, dbt build)':58} {fmt(med['py_splice_tools'])}",
        f"{'    the runner itself (journal, evidence, release)':58} "
        f"{fmt(med['py_splice_run'] - med['py_splice_tools'])}",
        f"{'    of which remembering the no-op plan after the run':58} "
        f"{fmt(med['py_splice_remember'])}",
        f"{'  overhead vs in process by hand':58} {over_py * 100:7.1f} %",
        f"{'no-op splice run (CLI) after the build (target < 2 s)':58} {fmt(med['cli_noop'])}",
        f"{'  in process: total (imports, plan memo, run)':58} {fmt(med['py_noop2_total'])}",
        f"{'no-op splice run --fresh (CLI): plans from scratch':58} {fmt(med['cli_noop_fresh'])}",
        f"{'no-op --fresh in process: total':58} {fmt(med['py_noop_total'])}",
        f"{'  of which graph load':58} {fmt(med['py_noop_graph'])}",
        f"{'  of which plan + run':58} {fmt(noop_py)}",
        "",
        f"same work: by hand {details.get('hand_cli_check')}; splice {details.get('splice_cli_check')}",
        f"splice built {details['splice_work']}; no-op built {details['noop_work']}",
        f"no-op plan phases: {details['noop_plan_timings']}",
        f"(graph+plan+run in process {work_py:.2f} s; workspaces in {root})",
    ]
    print("\n".join(lines))
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
