"""Benchmark: column lineage of a federated workspace of 2,000 models (1,500 dbt, 500 SQLMesh).

    python bench/lineage.py                 # generate into a temporary directory, print figures
    python bench/lineage.py --dir /tmp/ws   # keep the generated workspace
    python bench/lineage.py --engine-only   # skip the graph-join step (see measure_graph_join)

What it measures, in one run:

1. engine cold: full column lineage of every model (content keys + analysis on the process pool
   + the cross-model index), from SQL the bench renders itself (``{{ ref() }}`` /
   ``{{ source() }}`` resolved, SQLMesh macros ``@start_ds``/``@end_ds`` replaced);
2. engine after one model changes: every key recomputed, only the changed model re-analysed
   (the content-hash cache is simulated with a dict), the index rebuilt;
3. peak memory (max RSS of this process and of the pool's workers);
4. the peer way, ``sqlglot.lineage.lineage(column, sql, schema=..., dialect=...)`` called column
   by column (as SQLMesh's column lineage does), timed on a sample of models and scaled to all;
   the same sample through the engine serially, for a like-for-like ratio; and how often the two
   agree on a column's upstream columns;
5. graph join through Splice's workspace loader: the hook :func:`measure_graph_join`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _gen import CATALOG, DBT_SCHEMA, GeneratedWorkspace, GenModel, generate_federated_workspace  # noqa: E402
from splice.graph.model import Relation  # noqa: E402
from splice.lineage import LineageIndex, LineageRequest, ModelLineage, analyse_many  # noqa: E402
from splice.lineage.parallel import available_cores  # noqa: E402

TARGET_COLD_S = 20.0
TARGET_RATIO = 20.0
TARGET_CHANGE_S = 1.0


# -- rendering the generated SQL (engine-only: no dbt, no SQLMesh) -------------------------------
_REF = re.compile(r"\{\{\s*ref\(\s*'([^']+)'\s*\)\s*\}\}")
_SOURCE = re.compile(r"\{\{\s*source\(\s*'([^']+)'\s*,\s*'([^']+)'\s*\)\s*\}\}")
_MODEL_BLOCK = re.compile(r"^\s*MODEL\s*\(.*?\);", re.S)
_SM_NAME = re.compile(r"(?<![\w.])(sm_stg|sm_int|sm_marts|raw)\.(\w+)")


def render(ws: GeneratedWorkspace, m: GenModel) -> str:
    """The SQL a tool would hand the engine: dbt compiled SQL / SQLMesh rendered SQL, roughly."""
    text = (ws.root / m.path).read_text()
    if m.tool == "dbt":
        text = _REF.sub(lambda g: f"{CATALOG}.{DBT_SCHEMA}.{g.group(1)}", text)
        return _SOURCE.sub(lambda g: f"{CATALOG}.{g.group(1)}.{g.group(2)}", text).strip()
    text = _MODEL_BLOCK.sub("", text).strip().rstrip(";")
    text = text.replace("@start_ds", "'2024-01-01'").replace("@end_ds", "'2024-12-31'")
    return _SM_NAME.sub(
        lambda g: f"{CATALOG}.{g.group(1)}.{g.group(2)}", text
    )  # SQLMesh renders fqns


def _relation(key: str) -> Relation:
    cat, schema, name = key.split(".")
    return Relation(cat, schema, name)


@dataclass
class BenchModel:
    node_id: str
    request: LineageRequest


def engine_inputs(ws: GeneratedWorkspace) -> list[BenchModel]:
    out = []
    for m in ws.models:
        schema: dict[str, Any] = {}
        for rel in m.inputs:
            cat, sch, tab = rel.split(".")
            schema.setdefault(cat, {}).setdefault(sch, {})[tab] = ws.columns_of(rel)
        project = "dbt_proj" if m.tool == "dbt" else "sqlmesh_proj"
        req = LineageRequest(
            render(ws, m), "duckdb", schema, _relation(m.relation), default_catalog=CATALOG
        )
        out.append(BenchModel(f"{project}:{m.name}", req))
    return out


# -- measurements ------------------------------------------------------------------------------
def full_lineage(
    models: list[BenchModel], cache: dict[str, dict[str, Any]], workers: int | None
) -> tuple[dict[str, ModelLineage], dict[str, float]]:
    """Lineage of every model, analysing only cache misses.  Returns results and timings."""
    t0 = time.perf_counter()
    keys = [bm.request.key() for bm in models]
    t1 = time.perf_counter()
    results: dict[str, ModelLineage] = {}
    todo: list[int] = []
    for i, (bm, key) in enumerate(zip(models, keys, strict=True)):
        hit = cache.get(key)
        if hit is None:
            todo.append(i)
        else:
            results[bm.node_id] = ModelLineage.from_dict(hit)
    pool: dict[str, Any] = {}
    fresh = analyse_many([models[i].request for i in todo], workers=workers, stats=pool)
    for i, ml in zip(todo, fresh, strict=True):
        results[models[i].node_id] = ml
        cache[keys[i]] = ml.to_dict()
    t2 = time.perf_counter()
    return results, {
        "keys_s": t1 - t0,
        "analyse_s": t2 - t1,
        "analysed": float(len(todo)),
        "total_s": t2 - t0,
        "pool": pool,
    }


def build_index(results: dict[str, ModelLineage]) -> tuple[LineageIndex, float]:
    """The cross-model index, with its reader side built (the first downstream walk does it)."""
    t0 = time.perf_counter()
    idx = LineageIndex(results)
    first = next(nid for nid in results if results[nid].columns)
    idx.downstream(first, next(iter(results[first].columns)), depth=1)
    return idx, time.perf_counter() - t0


def time_walks(
    idx: LineageIndex, results: dict[str, ModelLineage], n_models: int = 50
) -> dict[str, float]:
    """Upstream walks from every column of the last ``n_models`` models, downstream walks from
    every column of the first ``n_models``: unlimited depth, indirect edges included."""
    ids = [nid for nid in results if results[nid].columns]
    walks = hops = 0
    worst = 0.0
    t0 = time.perf_counter()
    for direction, chosen in (("up", ids[-n_models:]), ("down", ids[:n_models])):
        for nid in chosen:
            for col in results[nid].columns:
                t = time.perf_counter()
                found = idx.upstream(nid, col) if direction == "up" else idx.downstream(nid, col)
                worst = max(worst, time.perf_counter() - t)
                walks += 1
                hops += len(found)
    total = time.perf_counter() - t0
    return {
        "walks": float(walks),
        "ms_per_walk": total / walks * 1000,
        "worst_ms": worst * 1000,
        "hops_per_walk": hops / walks,
    }


def change_one(models: list[BenchModel]) -> BenchModel:
    """Edit one staging-shaped model in the middle of the dbt graph (same columns, new SQL)."""
    for bm in models[len(models) // 2 :]:
        if "LOWER(region) AS region" in (bm.request.sql or ""):
            bm.request.sql = bm.request.sql.replace(  # type: ignore[union-attr]
                "LOWER(region) AS region", "UPPER(region) AS region"
            )
            return bm
    bm = models[len(models) // 2]
    bm.request.sql = (bm.request.sql or "") + "\n-- edited"
    return bm


def peer_sample(
    models: list[BenchModel], results: dict[str, ModelLineage], n: int
) -> dict[str, float]:
    """sqlglot.lineage.lineage per column on ``n`` models spread over the list, and the engine
    serially on the same models; plus the agreement on each column's upstream columns."""
    from sqlglot import exp
    from sqlglot.lineage import lineage

    step = max(1, len(models) // n)
    sample = models[::step][:n]
    peer_s = engine_s = 0.0
    columns = agree = errors = 0
    for bm in sample:
        req = bm.request
        t0 = time.perf_counter()
        mine = req.run()
        engine_s += time.perf_counter() - t0
        for col in results[bm.node_id].columns:
            t0 = time.perf_counter()
            try:
                node = lineage(col, req.sql, schema=req.schema, dialect=req.dialect)
            except Exception:  # noqa: BLE001 - count, keep going
                errors += 1
                peer_s += time.perf_counter() - t0
                continue
            peer_s += time.perf_counter() - t0
            theirs = set()
            for leaf in node.walk():
                if not leaf.downstream and isinstance(leaf.source, exp.Table):
                    t = leaf.source
                    theirs.add((f"{t.catalog}.{t.db}.{t.name}".lower(), leaf.name.split(".")[-1]))
            ours = {(r.relation.key, r.column) for r in mine.columns[col].sources}
            columns += 1
            agree += ours == theirs
    return {
        "models": float(len(sample)),
        "columns": float(columns),
        "peer_s": peer_s,
        "engine_serial_s": engine_s,
        "agree": agree / columns if columns else 0.0,
        "errors": float(errors),
    }


def measure_graph_join(root: Path, through_tools: bool = False) -> dict[str, float] | None:
    """Join the two projects into one graph through Splice's workspace loader.

    The tools' own parse (dbt's manifest, SQLMesh's Context load) is timed apart from Splice's
    join (normalising relations, bindings, ambiguities).  With ``through_tools`` also time the
    whole Splice path of ``splice lineage``: the tools render every model (dbt compile,
    SQLMesh render), then analysis, cold and again with everything cached.
    """
    from splice.workspace.core import Workspace

    out: dict[str, float] = {}
    with Workspace.open(root) as ws:
        t0 = time.perf_counter()
        g = ws.graph()
        out["graph_total_s"] = time.perf_counter() - t0
        out["tools_parse_s"] = sum(v for k, v in ws.timings.phases.items() if k.startswith("load:"))
        out["join_s"] = ws.timings.phases.get("join", 0.0)
        out["nodes"] = len(g.nodes)
        out["bindings"] = len(g.bindings)
        out["ambiguous"] = len(g.ambiguities)
        if through_tools:
            from splice.lineage.service import workspace_lineage

            t0 = time.perf_counter()
            wl = workspace_lineage(ws)
            out["e2e_cold_s"] = time.perf_counter() - t0
            out["e2e_render_s"] = float(wl.stats["render_seconds"])
    if through_tools:
        with Workspace.open(root) as ws:
            ws.graph()
            from splice.lineage.service import workspace_lineage

            t0 = time.perf_counter()
            wl = workspace_lineage(ws)
            out["e2e_warm_s"] = time.perf_counter() - t0
            out["e2e_warm_analysed"] = float(wl.stats["analysed"])
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the run -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, help="where to generate (default: a temporary directory)")
    ap.add_argument("--n-dbt", type=int, default=1500)
    ap.add_argument("--n-sqlmesh", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="pool size (default: every core)")
    ap.add_argument("--peer-sample", type=int, default=40, help="models timed the peer way")
    ap.add_argument("--engine-only", action="store_true", help="skip the graph join step")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    ap.add_argument(
        "--through-tools",
        action="store_true",
        help="also time the whole `splice lineage` path with the tools rendering every model",
    )
    args = ap.parse_args(argv)

    tmp = None
    if args.dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="splice-bench-")
        root = Path(tmp.name)
    else:
        root = args.dir
        root.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str]] = []
    figures: dict[str, Any] = {}

    t0 = time.perf_counter()
    ws = generate_federated_workspace(root, args.n_dbt, args.n_sqlmesh, args.seed)
    figures["generate_s"] = time.perf_counter() - t0
    models = engine_inputs(ws)
    n = len(models)
    n_cols = sum(len(m.columns) for m in ws.models)
    rows.append(
        (
            "workspace",
            f"{n} models ({args.n_dbt} dbt, {args.n_sqlmesh} SQLMesh), {n_cols} columns",
            f"generated in {figures['generate_s']:.2f} s",
        )
    )

    load_before = os.getloadavg()[0]
    cache: dict[str, dict[str, Any]] = {}
    results, cold = full_lineage(models, cache, args.workers)
    idx, index_s = build_index(results)
    walks = time_walks(idx, results)
    cold_total = cold["total_s"] + index_s
    figures.update(
        {"cold": cold, "cold_index_s": index_s, "cold_total_s": cold_total, "walks": walks}
    )
    opaque = sum(1 for r in results.values() if r.opaque_reason)
    opaque_cols = sum(len(r.opaque_columns) for r in results.values())
    rows.append(
        (
            "engine cold, full lineage",
            f"{cold_total:.2f} s",
            f"keys {cold['keys_s']:.2f} s + analyse {cold['analyse_s']:.2f} s ({cold['pool'].get('mode')}, {cold['pool'].get('workers')} workers, {cold['pool'].get('worker_cpu_s', 0):.1f} CPU s) + index {index_s:.3f} s",
        )
    )
    rows.append(
        (
            "  opaque",
            f"{opaque} models, {opaque_cols} columns",
            "of the generated shapes, none should be",
        )
    )

    changed = change_one(models)
    results2, warm = full_lineage(models, cache, args.workers)
    _idx2, index2_s = build_index(results2)
    change_total = warm["total_s"] + index2_s
    figures.update(
        {
            "change": warm,
            "change_index_s": index2_s,
            "change_total_s": change_total,
            "changed": changed.node_id,
        }
    )
    rows.append(
        (
            "engine after one model changes",
            f"{change_total:.3f} s",
            f"{int(warm['analysed'])} re-analysed ({changed.node_id}); keys {warm['keys_s']:.3f} s, index {index2_s:.3f} s",
        )
    )

    me = peak_rss_mb()
    kids = float(cold["pool"].get("worker_max_rss_mb", 0.0))
    figures.update({"rss_mb": me, "rss_workers_mb": kids})
    rows.append(
        (
            "peak memory (max RSS)",
            f"{me:.0f} MB",
            f"this process (holding every result); each of {cold['pool'].get('workers', 1)} pool workers at most {kids:.0f} MB",
        )
    )

    peer = peer_sample(models, results, args.peer_sample)
    per_model_peer = peer["peer_s"] / peer["models"]
    peer_est = per_model_peer * n
    per_model_engine = peer["engine_serial_s"] / peer["models"]
    ratio_wall = peer_est / cold_total
    ratio_serial = per_model_peer / per_model_engine
    figures.update(
        {
            "peer": peer,
            "peer_est_s": peer_est,
            "ratio_wall": ratio_wall,
            "ratio_serial": ratio_serial,
        }
    )
    rows.append(
        (
            "peer: sqlglot.lineage per column",
            f"~{peer_est:.0f} s (est.)",
            f"measured on {int(peer['models'])} models / {int(peer['columns'])} columns ({peer['peer_s']:.1f} s), scaled to {n}; serial, one process",
        )
    )
    rows.append(
        (
            "  speed-up vs peer, wall clock",
            f"{ratio_wall:.0f}x",
            "engine cold (pool) vs peer estimate (serial)",
        )
    )
    rows.append(
        (
            "  speed-up vs peer, per model",
            f"{ratio_serial:.0f}x",
            f"both serial on the sample: {per_model_engine * 1000:.1f} ms vs {per_model_peer * 1000:.0f} ms",
        )
    )
    rows.append(
        (
            "  agreement with peer",
            f"{peer['agree'] * 100:.1f}% of columns",
            f"same upstream columns (direct + column-level indirect; the engine also counts a scalar subquery's WHERE); peer errors {int(peer['errors'])}",
        )
    )
    rows.append(
        (
            "cross-model column walks",
            f"{walks['ms_per_walk']:.2f} ms per walk",
            f"{int(walks['walks'])} walks (up from the last 50 models' columns, down from the first 50's), "
            f"{walks['hops_per_walk']:.0f} hops each on average, worst {walks['worst_ms']:.1f} ms",
        )
    )

    if args.engine_only:
        rows.append(("graph join (workspace loader)", "skipped", "--engine-only"))
    else:
        g = measure_graph_join(root, through_tools=args.through_tools)
        assert g is not None
        figures["graph_join"] = g
        rows.append(
            (
                "graph join (Splice, excluding the tools' parse)",
                f"{g['join_s']:.3f} s",
                f"{int(g['nodes'])} nodes, {int(g['bindings'])} bindings, {int(g['ambiguous'])} ambiguous;"
                f" the tools' own parse took {g['tools_parse_s']:.1f} s (dbt manifest + SQLMesh load)",
            )
        )
        if args.through_tools:
            rows.append(
                (
                    "splice lineage path, cold (tools render + analyse)",
                    f"{g['e2e_cold_s']:.1f} s",
                    f"of which the tools rendered SQL for {g['e2e_render_s']:.1f} s (dbt compile, SQLMesh render)",
                )
            )
            rows.append(
                (
                    "splice lineage path, unchanged workspace",
                    f"{g['e2e_warm_s']:.2f} s",
                    f"{int(g['e2e_warm_analysed'])} models re-analysed, rendered SQL from Splice's cache",
                )
            )

    rows.append(
        (
            "machine",
            f"{available_cores()} cores",
            f"1-min load average {load_before:.1f} before the cold run, {os.getloadavg()[0]:.1f} at the end"
            " (other processes share these cores: wall-clock figures move with the load)",
        )
    )

    checks = [
        ("cold full lineage <= 20 s", cold_total <= TARGET_COLD_S),
        (f">= {TARGET_RATIO:.0f}x faster than the peer (wall clock)", ratio_wall >= TARGET_RATIO),
        ("< 1 s after one model changes", change_total < TARGET_CHANGE_S),
    ]
    _print_table(rows)
    print()
    for label, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")
    if args.json:
        print(json.dumps(figures, indent=2, default=float))
    if tmp is not None:
        tmp.cleanup()
    return 0 if all(ok for _, ok in checks) else 1


def _print_table(rows: list[tuple[str, str, str]]) -> None:
    w1 = max(len(r[0]) for r in rows)
    w2 = max(len(r[1]) for r in rows)
    print(f"{'figure':<{w1}}  {'value':<{w2}}  notes")
    print(f"{'-' * w1}  {'-' * w2}  {'-' * 40}")
    for a, b, c in rows:
        print(f"{a:<{w1}}  {b:<{w2}}  {c}")


if __name__ == "__main__":
    raise SystemExit(main())
