"""Benchmark: `splice review` of a one-model change on the generated federated workspace,
against doing the same review by hand with the tools, in the same run.

    python bench/review.py                         # 200 dbt + 100 SQLMesh models
    python bench/review.py --n-dbt 400 --n-sqlmesh 200 --rows 5000

The workspace is bench/_gen.py's (as bench/run_federated.py fills it), made reviewable: dbt's
sources follow the target into SQLMesh's environments, a ``review`` target (SQLMesh environment
``review``, dbt schema ``analytics_review``) and a ``hand`` one for the manual review, and
``plan.include_unmodified``.  Prod is built once (SQLMesh's prod plan and ``dbt build``, at
2024-04-01), committed to git, and one SQLMesh staging model gets a one-column change (its
first measure times 1.01) in a second commit.

Both reviews run in a fresh Python process each (tool imports included):

- **Splice**: ``splice review --base main --json`` (what changed in both tools, the column
  impact, the changed models and their downstream built in ``review`` and compared with prod,
  then the environment dropped).
- **By hand**, as an expert would: ``sqlmesh plan hand`` (auto-applied: SQLMesh builds what the
  change needs in its environment); ``dbt parse`` of prod for ``--state``; ``dbt build`` in the
  ``hand`` target of every model downstream of the SQLMesh models the plan changed
  (``source:SCHEMA.TABLE+`` for each), deferring to prod; then SQLMesh's ``table_diff`` of every
  changed SQLMesh model (environments prod vs hand) and of every dbt model built (prod table vs
  hand table, on ``id``); then the environment invalidated and the dbt schema dropped.

Both must build the same dbt models (checked), and agree on the rows of the changed model
(checked).  The by-hand way does not give column lineage, metrics or dashboards.
"""

from __future__ import annotations

import argparse
import json
import re
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


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args],
        cwd=ws, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def make_reviewable(ws: Path) -> None:
    """Targets, target-following sources, and SQLMesh views of every model in an environment."""
    src = ws / "dbt_proj" / "models" / "sources.yml"
    src.write_text(
        re.sub(
            r"^    schema: (sm_\w+)$",
            lambda m: (
                f"    schema: \"{{{{ '{m.group(1)}' if target.name == 'prod' "
                f"else '{m.group(1)}__' ~ target.name }}}}\""
            ),
            src.read_text(),
            flags=re.M,
        )
    )
    prof = ws / "dbt_proj" / "profiles.yml"
    text = prof.read_text()
    prod = text.split("    prod:\n", 1)[1]
    for name in ("review", "hand"):
        text += f"    {name}:\n" + prod.replace("schema: analytics", f"schema: analytics_{name}")
    prof.write_text(text)
    cfg = ws / "sqlmesh_proj" / "config.yaml"
    cfg.write_text(cfg.read_text() + "plan:\n  include_unmodified: true\n")
    toml = ws / "splice.toml"
    toml.write_text(
        toml.read_text()
        + '\n[targets.prod.environments]\nsqlmesh_proj = "prod"\ndbt_proj = "prod"\n'
        + '\n[targets.review.environments]\nsqlmesh_proj = "review"\ndbt_proj = "review"\n'
        + '\n[review]\ntarget = "review"\nmax_models = 1000\n'
    )
    (ws / ".gitignore").write_text(
        "warehouse.duckdb\nwarehouse.duckdb.wal\n.splice/\nsplice-witness.json\n"
        ".splice-witness.json.lock\ndbt_proj/target/\ndbt_proj/logs/\nsqlmesh_proj/.cache/\n"
        "sqlmesh_proj/logs/\nlogs/\n__pycache__/\nhand-state/\n"
    )


def pick_change(ws: Path) -> tuple[str, str, int]:
    """A SQLMesh staging model with a few dozen models downstream, and the file to change."""
    paths: dict[str, str] = {}  # SQLMesh model relation -> its file
    readers: dict[str, set[str]] = {}
    for path in (ws / "sqlmesh_proj" / "models").rglob("*.sql"):
        text = path.read_text()
        me = "warehouse." + re.search(r"name ([\w.]+),", text).group(1)  # type: ignore[union-attr]
        paths[me] = str(path.relative_to(ws))
        for ref in re.findall(r"\b(sm_\w+\.m_\d+)\b", text.split(");", 1)[1]):
            readers.setdefault(f"warehouse.{ref}", set()).add(me)
    for path in (ws / "dbt_proj" / "models").rglob("*.sql"):
        text, me = path.read_text(), f"dbt:{path.stem}"
        for sch, tab in re.findall(r"source\('(\w+)', '(\w+)'\)", text):
            readers.setdefault(f"warehouse.{sch}.{tab}", set()).add(me)
        for ref in re.findall(r"ref\('(\w+)'\)", text):
            readers.setdefault(f"dbt:{ref}", set()).add(me)

    def down(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for r in readers.get(stack.pop(), ()):
                if r not in seen:
                    seen.add(r)
                    stack.append(r)
        return seen

    staging = [k for k in paths if ".sm_stg." in k]
    best = min(staging, key=lambda k: (abs(len(down(k)) - 40), k))
    return best, paths[best], len(down(best))


def _worker_hand(ws: Path) -> dict[str, Any]:
    """The review by hand, in this (fresh) process."""
    from datetime import datetime

    import duckdb

    t0 = time.perf_counter()
    from sqlmesh import Context

    ctx = Context(paths=str(ws / "sqlmesh_proj"))
    plan = ctx.plan(
        "hand", auto_apply=True, no_prompts=True, execution_time=datetime.fromisoformat(FIRST)
    )
    changed = sorted(
        {s.name for s in plan.directly_modified}
        | {c.name for cs in plan.indirectly_modified.values() for c in cs}
    )
    t_sqlmesh = time.perf_counter()
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner

    d = str(ws / "dbt_proj")
    state = ws / "hand-state"
    base = ["--project-dir", d, "--profiles-dir", d, "--log-level", "none"]
    res = dbtRunner().invoke(["parse", *base, "--target", "prod", "--target-path", str(state)])
    if not res.success:
        raise SystemExit(f"dbt parse failed: {res.exception}")
    selectors = []
    for fqn in changed:
        _cat, sch, tab = (p.strip('"') for p in fqn.split("."))
        selectors.append(f"source:{sch}.{tab}+")
    res = dbtRunner().invoke(
        ["build", *base, "--target", "hand", "--select", *selectors, "--exclude",
         "resource_type:source", "--defer", "--state", str(state)]
    )  # fmt: skip
    DuckDBConnectionManager.close_all_connections()
    if not res.success:
        raise SystemExit(f"dbt build failed: {res.exception}")
    built_dbt = sorted(
        r.node.name for r in res.result.results if r.node.resource_type.value == "model"
    )
    t_dbt = time.perf_counter()
    diffs: dict[str, Any] = {}
    for fqn in changed:
        name = ".".join(p.strip('"') for p in fqn.split(".")[1:])
        (td,) = ctx.table_diff("prod", "hand", select_models=[name], on=["id"], show=False)
        rd = td.row_diff()
        diffs[name] = {"s_only": rd.s_only_count, "t_only": rd.t_only_count,
                       "joined": rd.join_count, "stats": {k: int(v) for k, v in rd.stats.items()
                                                           if isinstance(v, (int, float))}}  # fmt: skip
    for m in built_dbt:
        td = ctx.table_diff(f"analytics.{m}", f"analytics_hand.{m}", on=["id"], show=False)
        rd = td[0].row_diff() if isinstance(td, list) else td.row_diff()
        diffs[f"dbt:{m}"] = {"s_only": rd.s_only_count, "t_only": rd.t_only_count}
    t_diff = time.perf_counter()
    ctx.invalidate_environment("hand", sync=True)
    ctx.close()
    con = duckdb.connect(str(ws / "warehouse.duckdb"))
    con.execute("DROP SCHEMA IF EXISTS analytics_hand CASCADE")
    con.close()
    shutil.rmtree(state, ignore_errors=True)
    return {
        "changed_sqlmesh": changed,
        "built_dbt": built_dbt,
        "diffs": diffs,
        "sqlmesh": t_sqlmesh - t0,
        "dbt": t_dbt - t_sqlmesh,
        "diff": t_diff - t_dbt,
        "total": time.perf_counter() - t0,
    }


def _env(ws: Path) -> dict[str, str]:
    from run_federated import _env as fed_env

    return fed_env(ws)


def _hand(ws: Path) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, __file__, "--worker", str(ws)],
        env=_env(ws), capture_output=True, text=True, cwd=ws,
    )  # fmt: skip
    if res.returncode != 0:
        raise SystemExit(f"by-hand review failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _splice(ws: Path) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "splice", "-w", str(ws), "review", "--base", "main", "--json",
         "--execution-time", FIRST],
        env=_env(ws), capture_output=True, text=True, cwd=ws,
    )  # fmt: skip
    took = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"splice review failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return json.loads(res.stdout), took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-dbt", type=int, default=200)
    ap.add_argument("--n-sqlmesh", type=int, default=100)
    ap.add_argument("--rows", type=int, default=2000, help="rows per raw table")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker_hand(Path(args.worker))))
        return
    from run_federated import _in_process, generate

    root = args.dir or Path(tempfile.mkdtemp(prefix="splice-bench-review-"))
    if root.exists():
        shutil.rmtree(root)
    ws = root / "ws"
    t0 = time.perf_counter()
    n = generate(ws, args.n_dbt, args.n_sqlmesh, args.rows)
    make_reviewable(ws)
    print(f"generated {n} models; building prod ...", file=sys.stderr)
    _in_process("hand-first", ws, FIRST)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "prod")
    _git(ws, "switch", "-q", "-c", "change")
    model, path, reach = pick_change(ws)
    sql = (ws / path).read_text()
    changed = re.sub(r" AS m01,", " * 1.01 AS m01,", sql, count=1)
    assert changed != sql
    (ws / path).write_text(changed)
    _git(ws, "commit", "-q", "-am", f"{model}: m01 times 1.01")
    print(f"ready in {time.perf_counter() - t0:.1f} s; changed {model} ({reach} models "
          "downstream, by the SQL)", file=sys.stderr)  # fmt: skip

    print("splice review ...", file=sys.stderr)
    review, t_splice = _splice(ws)
    print("by hand ...", file=sys.stderr)
    hand = _hand(ws)

    data = review.get("data") or {}
    built = data.get("run", {}).get("built", [])
    splice_dbt = sorted(b.split(":", 1)[1] for b in built if b.startswith("dbt_proj:"))
    models = {m["node"]: m for m in data.get("models", [])}
    short = model.split(".", 1)[1]
    mine = models.get(f"sqlmesh_proj:{short}", {})
    theirs = hand["diffs"].get(short, {})
    print()
    print(f"| review of a one-model change ({n} models; {args.rows} rows per raw table) | time |")
    print("| --- | --- |")
    print(f"| splice review (one process: both tools, column impact, build, compare, drop) | "
          f"{t_splice:.1f} s |")  # fmt: skip
    print(f"| by hand: sqlmesh plan in an environment | {hand['sqlmesh']:.1f} s |")
    print(
        f"| by hand: dbt parse (prod state) + dbt build downstream, deferred | {hand['dbt']:.1f} s |"
    )
    print(f"| by hand: SQLMesh table_diff of each changed model | {hand['diff']:.1f} s |")
    print(f"| by hand, total (one process) | {hand['total']:.1f} s |")
    print()
    print(f"Splice: {len(review['changes'])} change(s) reported, {len(review['impact']['columns'])} "
          f"downstream column(s), {len(built)} model(s) built and compared; "
          f"timings {review['timings']}")  # fmt: skip
    print(f"by hand: {len(hand['changed_sqlmesh'])} SQLMesh model(s) changed, "
          f"{len(hand['built_dbt'])} dbt model(s) built, {len(hand['diffs'])} diffed")  # fmt: skip
    same_dbt = set(splice_dbt) == set(hand["built_dbt"])
    print(f"same dbt models built: {same_dbt} (splice {len(splice_dbt)}, hand "
          f"{len(hand['built_dbt'])})")  # fmt: skip
    print(f"{short}: splice changed {mine.get('changed')} of {mine.get('rows', {}).get('prod')} rows; "
          f"table_diff joined {theirs.get('joined')}, s_only {theirs.get('s_only')}, "
          f"t_only {theirs.get('t_only')}")  # fmt: skip


if __name__ == "__main__":
    main()
