"""Benchmark: planning time on a 2,000-node federated graph, after the graph is loaded.

    python bench/plan_scale.py                    # 1,500 dbt + 500 SQLMesh models, 5 repeats
    python bench/plan_scale.py --n-dbt 3000 --n-sqlmesh 1000

The graph is the generated federated workspace of bench/lineage.py (``bench/_gen.py``): SQLMesh
models on raw tables, dbt models reading SQLMesh's relations through dbt sources, one test per
dbt model; Splice's evidence says every node was built once.  What is timed is the planner's
own work (:func:`splice.plan.planner.plan_from_inputs`: decisions with reasons, checks,
segments), the part that grows with the graph; loading the graph (dbt parse, SQLMesh load) and
SQLMesh's own plan are the tools' and are measured in bench/run.py.  Three plans:

1. nothing changed: every node REUSE;
2. one SQLMesh staging model changed (SQLMesh says breaking): it and everything downstream of it
   in both projects BUILD, with the upstream version that moved;
3. one dbt staging model's SQL changed: it and its dbt downstream BUILD.

Target: each under 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _gen import generate_federated_workspace  # noqa: E402
from splice.graph.model import Edge, Graph, Node  # noqa: E402
from splice.plan.evidence import BuildRecord  # noqa: E402
from splice.plan.inputs import PlanInputs  # noqa: E402
from splice.plan.model import Reason  # noqa: E402
from splice.plan.planner import plan_from_inputs  # noqa: E402
from splice.plan.sqlmesh_view import NodeView  # noqa: E402

TARGET_S = 0.5


def build_graph(n_dbt: int, n_sqlmesh: int) -> tuple[Graph, dict[str, str]]:
    """The generated workspace as Splice's graph: ``pricing:`` SQLMesh, ``finance:`` dbt."""
    ws = generate_federated_workspace(
        tempfile.mkdtemp(prefix="splice-plan-scale-"), n_dbt, n_sqlmesh
    )
    g = Graph()
    by_rel: dict[str, str] = {}
    for m in ws.models:
        project = "pricing" if m.tool == "sqlmesh" else "finance"
        nid = f"{project}:{m.name}"
        g.add_node(Node(nid, project, m.name, "model", m.tool))  # type: ignore[arg-type]
        by_rel[m.relation] = nid
    for rel in ws.raw:
        nid = f"pricing:{rel}"
        g.add_node(Node(nid, "pricing", rel, "external", "sqlmesh"))  # type: ignore[arg-type]
        by_rel[rel] = nid
    sources: dict[str, str] = {}
    for m in ws.models:
        me = by_rel[m.relation]
        for rel in m.inputs:
            up = by_rel[rel]
            if m.tool == "dbt" and up.startswith("pricing:"):
                src = sources.get(rel)
                if src is None:
                    src = f"finance:source:{rel}"
                    g.add_node(Node(src, "finance", rel, "source", "dbt"))  # type: ignore[arg-type]
                    g.add_edge(Edge(up, src, "declared"))  # type: ignore[arg-type]
                    sources[rel] = src
                g.add_edge(Edge(src, me, "tool"))  # type: ignore[arg-type]
            else:
                g.add_edge(Edge(up, me, "tool"))  # type: ignore[arg-type]
        if m.tool == "dbt":
            t = f"finance:test_not_null_{m.name}_id"
            g.add_node(Node(t, "finance", t.split(":", 1)[1], "test", "dbt"))  # type: ignore[arg-type]
            g.add_edge(Edge(me, t, "tool"))  # type: ignore[arg-type]
    return g, by_rel


def inputs(g: Graph, change: str | None = None, dbt_change: str | None = None) -> PlanInputs:
    models = [n for n, node in g.nodes.items() if node.kind == "model"]
    fps = {n: {"sql": "x", "config": "c"} for n in models if g.nodes[n].tool == "dbt"}
    if dbt_change:
        fps[dbt_change] = {"sql": "y", "config": "c"}
    builds = {
        n: BuildRecord("prod", n, 1, i, "build", "r1", {"sql": "x", "config": "c"}, 0.0)
        for i, n in enumerate(models)
    }
    views = {}
    # SQLMesh's own view: the changed model is breaking, its SQLMesh downstream indirect-breaking
    indirect = (
        {d for d in g.descendants(change) if g.nodes[d].tool == "sqlmesh"} if change else set()
    )
    for n in models:
        if g.nodes[n].tool != "sqlmesh":
            continue
        if n in indirect:
            views[n] = NodeView(n, "build", [Reason("sqlmesh_change", "SQLMesh: indirect breaking")],
                                {"tool": "sqlmesh", "change_category": "indirect breaking"}, {}, True)  # fmt: skip
        elif n == change:
            views[n] = NodeView(n, "build", [Reason("sqlmesh_change", "SQLMesh: breaking change")],
                                {"tool": "sqlmesh", "change_category": "breaking"}, {}, True)  # fmt: skip
        else:
            views[n] = NodeView(n, "reuse", [Reason("unchanged", "SQLMesh: no changes")],
                                {"tool": "sqlmesh"}, {}, False)  # fmt: skip
    return PlanInputs(
        graph=g,
        selected=g.topological_order(),
        target="prod",
        environments={"pricing": "prod", "finance": "prod"},
        formats={"pricing": "sqlmesh", "finance": "dbt"},
        fingerprints=fps,
        builds=builds,
        sqlmesh=views,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-dbt", type=int, default=1500)
    ap.add_argument("--n-sqlmesh", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    g, _ = build_graph(args.n_dbt, args.n_sqlmesh)
    print(f"graph: {len(g.nodes):,} nodes ({args.n_dbt + args.n_sqlmesh:,} models), "
          f"{len(g.edges):,} edges, made in {time.perf_counter() - t0:.2f} s")  # fmt: skip
    # the staging models with the widest downstream: the plans that have the most to say
    sm_stg = max(sorted(n for n in g.nodes if n.startswith("pricing:sm_stg.")),
                 key=lambda n: len(g.descendants(n)))  # fmt: skip
    dbt_stg = max(sorted(n for n in g.nodes if n.startswith("finance:stg_")),
                  key=lambda n: len(g.descendants(n)))  # fmt: skip
    cases = [
        ("nothing changed", {}),
        (f"SQLMesh {sm_stg} changed (breaking)", {"change": sm_stg}),
        (f"dbt {dbt_stg} SQL changed", {"dbt_change": dbt_stg}),
    ]
    print(f"\n{'plan':58} {'median s':>9} {'BUILD':>6} {'segments':>8}")
    worst = 0.0
    for label, kw in cases:
        times, plan = [], None
        for _ in range(args.repeat):
            inp = inputs(g, **kw)
            t = time.perf_counter()
            plan = plan_from_inputs(inp)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        worst = max(worst, med)
        assert plan is not None
        models = [n for n in plan.to_build if g.nodes[n].kind == "model"]
        print(f"{label:58} {med:9.3f} {len(models):6,} {len(plan.segments):8}")
        if kw.get("change"):
            reader = next((n for n in models if n.startswith("finance:")), None)
            if reader:
                print(f"  e.g. {reader}: {plan.decisions[reader].because[:110]}")
    verdict = "met" if worst < TARGET_S else "MISSED"
    print(
        f"\nslowest plan {worst:.3f} s (target < {TARGET_S} s after the graph is loaded): {verdict}"
    )


if __name__ == "__main__":
    main()
