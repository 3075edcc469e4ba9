"""Tests and audits in a plan: those of the nodes that build join them (``selected_test``),
and a selected check whose code is new or changed since it last passed runs on its own
(``check_changed``), as ``dbt build --select state:modified+`` runs a new test of an unchanged
model. Which checks passed, with the digest of their code, is kept per target by the runner
(:func:`splice.plan.evidence.record_checks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph
from splice.plan.fingerprint import dbt_fingerprint, digest
from splice.plan.inputs import PASS_THROUGH, PlanInputs
from splice.plan.model import NodeDecision, Reason

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: reason codes of a check's decision (a test or audit, not a node that builds a relation)
CHECK_CODES = frozenset({"selected_test", "check_changed"})


def attach_checks(inp: PlanInputs, decisions: dict[str, NodeDecision]) -> None:
    """Add the checks of the plan to ``decisions`` (see the module docstring)."""
    g = inp.graph
    selected = set(inp.selected)
    for t, why in inp.sqlmesh_audits.items():  # SQLMesh applies and runs a changed one
        if t in selected and t not in inp.excluded:
            decisions[t] = NodeDecision(
                t,
                g.nodes[t].project,
                "build",
                [why],
                {},
                {"tool": "sqlmesh", "check": True, **why.data},
            )
    building = {n for n, d in decisions.items() if d.action == "build"}
    fed_sources: dict[str, set[str]] = {}
    for nid in building:
        for p in g.parents(nid):
            if g.nodes[p].kind in PASS_THROUGH and g.nodes[p].project == g.nodes[nid].project:
                fed_sources.setdefault(p, set()).add(nid)
    candidates: set[str] = set()
    for nid in building | set(fed_sources):
        candidates |= {c for c in g.children(nid) if g.nodes[c].kind in ("test", "audit")}
    for t in candidates:
        if t in inp.excluded or t in decisions:
            continue
        checked = sorted(p for p in g.parents(t) if p in building)
        via = sorted(p for p in g.parents(t) if p in fed_sources)
        if not checked and not via:
            continue
        what = (
            ", ".join(checked)
            if checked
            else f"{', '.join(via)}, read by {', '.join(sorted(set().union(*(fed_sources[v] for v in via))))}"
        )
        decisions[t] = NodeDecision(
            t,
            g.nodes[t].project,
            "build",
            [Reason("selected_test", f"checks {what}", upstream=(checked or via)[0])],
            dict(inp.check_fingerprints.get(t, {})),
            {},
            sorted(checked or via),
        )
    _changed_checks(inp, decisions)


def _changed_checks(inp: PlanInputs, decisions: dict[str, NodeDecision]) -> None:
    """A selected check whose code is new or changed since it last passed runs on its own,
    though the node it checks is reused (``dbt build --select state:modified+`` runs it)."""
    if inp.checks_seen is None:
        return
    g = inp.graph
    selected = set(inp.selected)
    for t, fp in sorted(inp.check_fingerprints.items()):
        if t in decisions or t in inp.excluded or t not in selected:
            continue
        before = inp.checks_seen.get(t)
        if before == check_digest(fp):
            continue
        text = (
            f"a new check: it never passed in target {inp.target!r}"
            if before is None
            else "its code changed since it last passed"
        )
        parents = sorted(g.parents(t))
        decisions[t] = NodeDecision(
            t,
            g.nodes[t].project,
            "build",
            [Reason("check_changed", text, upstream=parents[0] if parents else None)],
            dict(fp),
            {},
            parents,
        )


def check_digest(fingerprint: dict[str, str]) -> str:
    """The digest of a check's fingerprint, as :func:`splice.plan.evidence.record_checks`
    keeps it."""
    return digest(fingerprint)


def is_check(decision: NodeDecision) -> bool:
    """Whether ``decision`` runs a test or audit (SQLMesh's standalone audits included)."""
    return bool(decision.tool_view.get("check")) or (
        bool(decision.reasons) and decision.reasons[0].code in CHECK_CODES
    )


def check_fingerprints(
    ws: Workspace, g: Graph, selected: list[str], excluded: set[str]
) -> dict[str, dict[str, str]]:
    """The fingerprint of each selected dbt test (its SQL, config and macros, and what its
    generic test is given), from the manifest already parsed with the graph."""
    out: dict[str, dict[str, str]] = {}
    by_name: dict[str, dict[str, dict[str, str]]] = {}  # project -> its generic tests' macros
    for n in selected:
        node = g.nodes[n]
        if node.kind != "test" or node.tool != "dbt" or n in excluded:
            continue
        manifest = ws.provider(node.project)._parse()
        mnode = manifest.nodes.get(str(node.meta.get("unique_id")))
        if mnode is None:
            continue  # a unit test: it runs with the model it tests
        meta = getattr(mnode, "test_metadata", None)
        given = meta.to_dict() if meta is not None and hasattr(meta, "to_dict") else None
        depends = sorted(getattr(mnode.depends_on, "nodes", None) or [])
        # a generic test's macro (and its dispatched variants) by their text: the macros a
        # test depends on are not used, dbt adds to them as it runs the test
        tests_by_name = by_name.get(node.project)
        if tests_by_name is None:
            tests_by_name = by_name[node.project] = _test_macros(manifest)
        macros = tests_by_name.get(f"test_{meta.name}", {}) if meta is not None else {}
        out[n] = {
            **dbt_fingerprint(mnode, manifest),
            "macros": digest(macros),
            "test": digest([given, depends]),
        }
    return out


def _test_macros(manifest: Any) -> dict[str, dict[str, str]]:
    """``test_NAME`` -> {macro id: text} of that generic test's macro and its dispatched
    variants (``default__test_NAME``, ``duckdb__test_NAME``, ...)."""
    out: dict[str, dict[str, str]] = {}
    for uid, m in sorted(manifest.macros.items()):
        name = str(m.name)
        base = name.split("__", 1)[1] if "__" in name else name
        if base.startswith("test_"):
            out.setdefault(base, {})[uid] = str(m.macro_sql or "")
    return out
