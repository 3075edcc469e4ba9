"""The planner's rules and segments on small synthetic graphs (no tools)."""

from __future__ import annotations

import time

from splice.graph.model import Edge, Graph, Node
from splice.plan.evidence import Attempt, BuildRecord
from splice.plan.inputs import PlanInputs
from splice.plan.model import Reason
from splice.plan.planner import plan_from_inputs
from splice.plan.sqlmesh_view import ModelState, NodeView


def _graph(nodes: list[tuple[str, str, str]], edges: list[tuple[str, str]]) -> Graph:
    g = Graph()
    for nid, kind, tool in nodes:
        project, name = nid.split(":", 1)
        g.add_node(Node(nid, project, name, kind, tool))  # type: ignore[arg-type]
    for a, b in edges:
        ev = "tool" if a.split(":")[0] == b.split(":")[0] else "declared"
        g.add_edge(Edge(a, b, ev))  # type: ignore[arg-type]
    return g


def _rec(
    nid: str,
    version: int,
    seq: int,
    fp: dict[str, str] | None = None,
    inputs: dict[str, int] | None = None,
) -> BuildRecord:
    return BuildRecord(
        "prod",
        nid,
        version,
        seq,
        "build",
        "r",
        fp or {"sql": "x"},
        0.0,
        inputs=inputs or {},
        inputs_recorded=inputs is not None,
    )


def _inputs(g: Graph, **kw) -> PlanInputs:  # type: ignore[no-untyped-def]
    fps = {
        n: {"sql": "x"}
        for n, node in g.nodes.items()
        if node.tool == "dbt" and node.kind == "model"
    }
    fps.update(kw.pop("fingerprints", {}))
    return PlanInputs(
        graph=g,
        selected=g.topological_order(),
        target="prod",
        environments={"pricing": "prod", "finance": "prod"},
        formats={"pricing": "sqlmesh", "finance": "dbt"},
        fingerprints=fps,
        **kw,
    )


# pricing:a -> pricing:b (SQLMesh) -> finance:source:b -> finance:stg -> finance:mart (+ test)
NODES = [
    ("pricing:a", "model", "sqlmesh"),
    ("pricing:b", "model", "sqlmesh"),
    ("finance:source:b", "source", "dbt"),
    ("finance:stg", "model", "dbt"),
    ("finance:mart", "model", "dbt"),
    ("finance:test_mart", "test", "dbt"),
]
EDGES = [
    ("pricing:a", "pricing:b"),
    ("pricing:b", "finance:source:b"),
    ("finance:source:b", "finance:stg"),
    ("finance:stg", "finance:mart"),
    ("finance:mart", "finance:test_mart"),
]


def _sqlmesh_reuse(*ids: str) -> dict[str, NodeView]:
    return {
        i: NodeView(
            i, "reuse", [Reason("unchanged", "SQLMesh: no changes")], {"tool": "sqlmesh"}, {}, False
        )
        for i in ids
    }


def test_version_moved_upstream_builds_the_reader_with_the_words() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "pricing:b": _rec("pricing:b", 42, 10),
        "finance:stg": _rec("finance:stg", 3, 5, inputs={"pricing:b": 41}),
        "finance:mart": _rec("finance:mart", 3, 6, inputs={"finance:stg": 3}),
    }
    plan = plan_from_inputs(
        _inputs(g, builds=builds, sqlmesh=_sqlmesh_reuse("pricing:a", "pricing:b"))
    )
    stg = plan.decisions["finance:stg"]
    assert stg.action == "build"
    assert [r.code for r in stg.reasons] == ["upstream_data_changed"]
    assert stg.because == "pricing:b changed: version 41 -> 42"
    mart = plan.decisions["finance:mart"]
    assert mart.action == "build"
    assert mart.because.startswith(
        "finance:stg will change: version 3 -> 4 (it builds in this plan"
    )
    assert plan.decisions["finance:test_mart"].reasons[0].code == "selected_test"
    assert [s.node_ids for s in plan.segments] == [
        ["finance:stg", "finance:mart", "finance:test_mart"]
    ]


def test_history_fallback_when_inputs_were_not_recorded() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "pricing:b": _rec("pricing:b", 7, 20),
        "finance:stg": _rec("finance:stg", 1, 15),  # no inputs recorded: b moved at seq 20
        "finance:mart": _rec("finance:mart", 1, 16),
    }
    inp = _inputs(g, builds=builds, sqlmesh=_sqlmesh_reuse("pricing:a", "pricing:b"))
    inp.seen_before = lambda u, seq: 6 if (u, seq) == ("pricing:b", 15) else -1
    plan = plan_from_inputs(inp)
    assert plan.decisions["finance:stg"].because == "pricing:b changed: version 6 -> 7"


def test_unchanged_is_reused_and_code_change_cascades() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "pricing:b": _rec("pricing:b", 1, 1),
        "finance:stg": _rec("finance:stg", 1, 2, inputs={"pricing:b": 1}),
        "finance:mart": _rec("finance:mart", 1, 3, inputs={"finance:stg": 1}),
    }
    views = _sqlmesh_reuse("pricing:a", "pricing:b")
    plan = plan_from_inputs(_inputs(g, builds=builds, sqlmesh=views))
    assert plan.to_build == [] and plan.segments == []
    plan = plan_from_inputs(
        _inputs(g, builds=builds, sqlmesh=views, fingerprints={"finance:stg": {"sql": "y"}})
    )
    stg, mart = plan.decisions["finance:stg"], plan.decisions["finance:mart"]
    assert stg.reasons[0].code == "code_changed" and stg.reasons[0].components == ("sql",)
    assert mart.reasons[0].code == "upstream_code_changed"
    assert plan.decisions["pricing:b"].action == "reuse"


def test_failed_and_interrupted_build_again() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "pricing:b": _rec("pricing:b", 1, 1),
        "finance:stg": _rec("finance:stg", 1, 2, inputs={"pricing:b": 1}),
        "finance:mart": _rec("finance:mart", 1, 3, inputs={"finance:stg": 1}),
    }
    attempts = {
        "finance:stg": Attempt("prod", "finance:stg", "r9", "failed", "Runtime Error: boom", 0, 1),
        "finance:mart": Attempt("prod", "finance:mart", "r9", "running", None, 0, None),
    }
    plan = plan_from_inputs(
        _inputs(
            g, builds=builds, attempts=attempts, sqlmesh=_sqlmesh_reuse("pricing:a", "pricing:b")
        )
    )
    assert plan.decisions["finance:stg"].reasons[0].code == "failed_last_time"
    assert "boom" in plan.decisions["finance:stg"].because
    assert "interrupted" in plan.decisions["finance:mart"].because


def test_sqlmesh_view_is_not_overridden_and_data_neutral_changes_stop_at_the_binding() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "finance:stg": _rec("finance:stg", 1, 2, inputs={"pricing:b": 0}),
        "finance:mart": _rec("finance:mart", 1, 3, inputs={"finance:stg": 1}),
    }
    views = {
        "pricing:a": NodeView(
            "pricing:a",
            "build",
            [Reason("sqlmesh_change", "SQLMesh: non-breaking change (directly modified)")],
            {"change_category": "non-breaking"},
            {},
            True,
        ),
        "pricing:b": NodeView(
            "pricing:b",
            "build",
            [Reason("sqlmesh_change", "SQLMesh: indirect-non-breaking change, from pricing:a")],
            {"change_category": "indirect-non-breaking"},
            {},
            False,
        ),
    }
    plan = plan_from_inputs(_inputs(g, builds=builds, sqlmesh=views))
    assert plan.decisions["pricing:b"].action == "build"  # SQLMesh's call, not Splice's
    assert plan.decisions["pricing:b"].tool_view["change_category"] == "indirect-non-breaking"
    assert plan.decisions["finance:stg"].action == "reuse"  # its data does not change
    views["pricing:b"] = NodeView(
        "pricing:b",
        "build",
        [Reason("sqlmesh_change", "SQLMesh: breaking change (directly modified)")],
        {"change_category": "breaking"},
        {},
        True,
    )
    plan = plan_from_inputs(_inputs(g, builds=builds, sqlmesh=views))
    assert plan.decisions["finance:stg"].reasons[0].code == "upstream_code_changed"
    assert [s.project for s in plan.segments] == ["pricing", "finance"]
    assert plan.segments[1].depends_on == ["s1"]


def test_incomplete_upstream_intervals_are_said() -> None:
    g = _graph(NODES, EDGES)
    builds = {
        "finance:stg": _rec("finance:stg", 1, 2, inputs={"pricing:b": 0}),
        "finance:mart": _rec("finance:mart", 1, 3, inputs={"finance:stg": 1}),
    }
    day = 86_400_000
    state = ModelState(
        "pricing:b",
        "b",
        "id",
        {},
        [[0, day]],
        None,
        [[1790812800000, 1790812800000 + day]],
        1,
        "INCREMENTAL_BY_TIME_RANGE",
        "@daily",
        None,
    )
    inp = _inputs(g, builds=builds, sqlmesh_states={"pricing:b": state})
    inp.selected = [n for n in inp.selected if n.startswith("finance:")]
    plan = plan_from_inputs(inp)
    stg = plan.decisions["finance:stg"]
    assert stg.action == "reuse"
    assert [r.code for r in stg.reasons] == ["unchanged", "incomplete_upstream_intervals"]
    assert "2026-10-01" in stg.reasons[1].text
    assert any("pricing:b has 1 interval missing" in w for w in plan.warnings)


def test_segments_split_when_a_path_leaves_the_project_and_comes_back() -> None:
    # finance:x -> pricing:p -> finance:z, and finance:x -> finance:z directly;
    # finance:w and pricing:q stand alone
    g = _graph(
        [
            ("finance:x", "model", "dbt"),
            ("pricing:p", "model", "dbt"),
            ("finance:z", "model", "dbt"),
            ("finance:w", "model", "dbt"),
            ("pricing:q", "model", "dbt"),
        ],
        [("finance:x", "pricing:p"), ("pricing:p", "finance:z"), ("finance:x", "finance:z")],
    )
    inp = _inputs(g)
    inp.formats = {"pricing": "dbt", "finance": "dbt"}
    plan = plan_from_inputs(inp)
    segs = [(s.id, s.project, s.node_ids, s.depends_on) for s in plan.segments]
    assert segs == [
        # w and x are not connected, but need nothing: one invocation builds both
        ("s1", "finance", ["finance:w", "finance:x"], []),
        ("s2", "pricing", ["pricing:p"], ["s1"]),  # not merged with q: it waits for s1
        ("s3", "finance", ["finance:z"], ["s1", "s2"]),
        ("s4", "pricing", ["pricing:q"], []),  # depends on nothing: may run beside s1
    ]


def test_two_thousand_nodes_plan_quickly() -> None:
    g = Graph()
    n = 2000
    for i in range(n):
        project = "pricing" if i < 400 else "finance"
        tool = "sqlmesh" if project == "pricing" else "dbt"
        g.add_node(Node(f"{project}:m{i}", project, f"m{i}", "model", tool))
    ids = list(g.nodes)
    for i in range(1, n):
        for j in {i - 1, i // 2, i // 3}:
            ev = "tool" if ids[i].split(":")[0] == ids[j].split(":")[0] else "matched"
            g.add_edge(Edge(ids[j], ids[i], ev))  # type: ignore[arg-type]
    builds = {nid: _rec(nid, 1, k) for k, nid in enumerate(ids)}
    views = _sqlmesh_reuse(*ids[:400])
    views[ids[399]] = NodeView(
        ids[399], "build", [Reason("sqlmesh_change", "SQLMesh: breaking change")], {}, {}, True
    )
    t0 = time.perf_counter()
    plan = plan_from_inputs(_inputs(g, builds=builds, sqlmesh=views))
    elapsed = time.perf_counter() - t0
    assert plan.decisions[ids[399]].action == "build"
    assert sum(d.action == "build" for d in plan.decisions.values()) > 1000
    assert elapsed < 5  # generous: the figure is reported by bench, not asserted here
