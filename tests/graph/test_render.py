"""Renderers: JSON shape, golden DOT and Mermaid on a tiny graph, valid Mermaid identifiers.

Golden files live in tests/graph/golden/.  After an intended change to the output, regenerate
them with ``SPLICE_UPDATE_GOLDEN=1 pytest tests/graph/test_render.py`` and read the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from splice.errors import NodeNotFoundError
from splice.graph.model import Edge, Graph, Node, Relation
from splice.graph.render import evidence_label, to_dot, to_json, to_mermaid
from splice.graph.selectors import select

GOLDEN = Path(__file__).parent / "golden"


def rel(schema: str, name: str) -> Relation:
    return Relation("warehouse", schema, name)


@pytest.fixture
def tiny() -> Graph:
    """vendor ingestion -> SQLMesh pricing -> dbt finance -> dashboard, nodes added out of order."""
    g = Graph()
    nodes = [
        Node("finance:gmv_usd", "finance", "gmv_usd", "dashboard", "exposure", tags=["finance"]),
        Node(
            "finance:fct_gmv_qtd",
            "finance",
            "fct_gmv_qtd",
            "model",
            "dbt",
            writes=rel("finance", "fct_gmv_qtd"),
            tags=["finance", "daily"],
        ),
        Node(
            "finance:source:pricing.agg_gmv_daily",
            "finance",
            "source:pricing.agg_gmv_daily",
            "source",
            "dbt",
            reads=[rel("marts", "agg_gmv_daily")],
        ),
        Node(
            "pricing:marts.agg_gmv_daily",
            "pricing",
            "marts.agg_gmv_daily",
            "model",
            "sqlmesh",
            writes=rel("marts", "agg_gmv_daily"),
            reads=[rel("fx", "daily_rates")],
            tags=["daily"],
        ),
        Node(
            "pricing:fx.daily_rates",
            "pricing",
            "fx.daily_rates",
            "model",
            "sqlmesh",
            writes=rel("fx", "daily_rates"),
            reads=[rel("raw", "fx_rates")],
        ),
        Node(
            "ingest:fx_rates_ingest",
            "ingest",
            "fx_rates_ingest",
            "ingestion",
            "dlt",
            writes=rel("raw", "fx_rates"),
        ),
    ]
    for n in nodes:
        g.add_node(n)
    g.add_edge(Edge("finance:fct_gmv_qtd", "finance:gmv_usd"))
    g.add_edge(Edge("finance:source:pricing.agg_gmv_daily", "finance:fct_gmv_qtd"))
    g.add_edge(
        Edge(
            "pricing:marts.agg_gmv_daily",
            "finance:source:pricing.agg_gmv_daily",
            "declared",
            rel("marts", "agg_gmv_daily"),
        )
    )
    g.add_edge(Edge("pricing:fx.daily_rates", "pricing:marts.agg_gmv_daily"))
    g.add_edge(
        Edge("ingest:fx_rates_ingest", "pricing:fx.daily_rates", "matched", rel("raw", "fx_rates"))
    )
    return g


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SPLICE_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs; see the module docstring to regenerate"


# -- JSON -------------------------------------------------------------------------------------


def test_json_nodes_and_edges(tiny: Graph) -> None:
    doc = to_json(tiny)
    assert [n["id"] for n in doc["nodes"]] == sorted(tiny.nodes)
    fct = next(n for n in doc["nodes"] if n["id"] == "finance:fct_gmv_qtd")
    assert fct == {
        "id": "finance:fct_gmv_qtd",
        "project": "finance",
        "name": "fct_gmv_qtd",
        "kind": "model",
        "tool": "dbt",
        "writes": "warehouse.finance.fct_gmv_qtd",
        "reads": [],
        "tags": ["daily", "finance"],
    }
    edges = {(e["upstream"], e["downstream"]): e for e in doc["edges"]}
    assert edges[("ingest:fx_rates_ingest", "pricing:fx.daily_rates")] == {
        "upstream": "ingest:fx_rates_ingest",
        "downstream": "pricing:fx.daily_rates",
        "evidence": "matched",
        "label": "inferred",
        "binding": True,
        "relation": "warehouse.raw.fx_rates",
    }
    declared = edges[("pricing:marts.agg_gmv_daily", "finance:source:pricing.agg_gmv_daily")]
    assert (declared["evidence"], declared["label"]) == ("declared", "declared")
    tool = edges[("pricing:fx.daily_rates", "pricing:marts.agg_gmv_daily")]
    assert (tool["evidence"], tool["binding"], tool["relation"]) == ("tool", False, None)
    assert list(edges) == sorted(edges)


def test_json_is_serialisable_and_deterministic(tiny: Graph) -> None:
    text = json.dumps(to_json(tiny), sort_keys=True)
    shuffled = Graph()
    for nid in sorted(tiny.nodes, reverse=True):
        shuffled.add_node(tiny.nodes[nid])
    for e in reversed(tiny.edges):
        shuffled.add_edge(e)
    assert json.dumps(to_json(shuffled), sort_keys=True) == text
    assert to_dot(shuffled) == to_dot(tiny)
    assert to_mermaid(shuffled) == to_mermaid(tiny)


def test_ids_restrict_nodes_and_edges(tiny: Graph) -> None:
    ids = select(tiny, "pricing:*")
    doc = to_json(tiny, ids)
    assert [n["id"] for n in doc["nodes"]] == [
        "pricing:fx.daily_rates",
        "pricing:marts.agg_gmv_daily",
    ]
    assert [(e["upstream"], e["downstream"]) for e in doc["edges"]] == [
        ("pricing:fx.daily_rates", "pricing:marts.agg_gmv_daily")
    ]
    assert "finance" not in to_dot(tiny, ids)
    assert "finance" not in to_mermaid(tiny, ids)


def test_unknown_ids_are_an_error(tiny: Graph) -> None:
    with pytest.raises(NodeNotFoundError, match="Closest: finance:fct_gmv_qtd"):
        to_json(tiny, ["finance:fct_gmv_qdt"])


def test_evidence_label() -> None:
    assert evidence_label(Edge("a:x", "b:y", "matched")) == "inferred"
    assert evidence_label(Edge("a:x", "b:y", "declared")) == "declared"
    assert evidence_label(Edge("a:x", "a:y")) == "tool"


# -- DOT --------------------------------------------------------------------------------------


def test_dot_golden(tiny: Graph) -> None:
    check_golden("tiny.dot", to_dot(tiny))


def test_dot_clusters_and_binding_styles(tiny: Graph) -> None:
    dot = to_dot(tiny)
    assert dot.count('subgraph "cluster_') == 3
    for line in dot.splitlines():
        if " -> " in line:
            is_binding = "ingest:" in line.split(" -> ")[0] or (
                "pricing:" in line.split(" -> ")[0] and "finance:" in line.split(" -> ")[1]
            )
            assert ("style=dashed" in line) == is_binding, line
    assert 'label="inferred"' in dot and 'label="declared"' in dot


def test_dot_quotes_awkward_names() -> None:
    g = Graph()
    g.add_node(Node('p:we"ird\\name', "p", 'we"ird\\name', "model", "dbt"))
    dot = to_dot(g)
    assert '"p:we\\"ird\\\\name" [label="we\\"ird\\\\name"];' in dot


# -- Mermaid ----------------------------------------------------------------------------------


def test_mermaid_golden(tiny: Graph) -> None:
    check_golden("tiny.mmd", to_mermaid(tiny))


_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_KEYWORDS = (
    "end",
    "graph",
    "subgraph",
    "flowchart",
    "style",
    "class",
    "click",
    "call",
    "href",
    "linkstyle",
    "default",
    "interpolate",
    "direction",
)


def mermaid_identifiers(text: str) -> tuple[list[str], list[str]]:
    """(identifiers defined by subgraph / node lines, identifiers used by edge lines)."""
    defined, used = [], []
    for line in text.splitlines()[1:]:
        line = line.strip()
        if line == "end":
            continue
        if line.startswith("subgraph "):
            defined.append(line[len("subgraph ") :].split("[", 1)[0])
        elif " --> " in line or " -.->" in line:
            words = line.split()
            used += [words[0], words[-1]]
        else:
            defined.append(re.split(r"[\[({]", line, maxsplit=1)[0])
    return defined, used


def test_mermaid_identifiers_are_valid_and_unique() -> None:
    g = Graph()
    awkward = [
        ("end", "end"),  # a Mermaid keyword as a project
        ("end", "style"),
        ("p", "a.b"),
        ("p", "a_b"),  # collides with a.b once escaped
        ("p", "a-b"),
        ("p", "1st model"),
        ("p", "source:other.x"),
        ("p", 'quote"d <b>#1</b>'),
        ("classic", "x"),  # starts with the keyword 'class'
        ("ünï", "çödé"),
    ]
    for project, name in awkward:
        g.add_node(Node(f"{project}:{name}", project, name, "model", "dbt"))
    ids = sorted(g.nodes)
    for up, down in zip(ids, ids[1:], strict=False):
        g.add_edge(Edge(up, down, "declared" if up.split(":")[0] != down.split(":")[0] else "tool"))
    text = to_mermaid(g)
    defined, used = mermaid_identifiers(text)
    assert len(defined) == len(g.nodes) + len({p for p, _ in awkward})
    assert len(set(defined)) == len(defined), "identifiers must be unique"
    for ident in defined + used:
        assert _IDENT.match(ident), ident
        assert not ident.lower().startswith(_KEYWORDS), ident
    assert set(used) <= set(defined)
    # labels keep the real names, with Mermaid's entity codes for the characters it would parse
    assert '["quote#quot;d #lt;b#gt;#35;1#lt;/b#gt;"]' in text
    assert '["source:other.x"]' in text


def test_mermaid_tiny_identifiers_are_valid(tiny: Graph) -> None:
    defined, used = mermaid_identifiers(to_mermaid(tiny))
    assert all(_IDENT.match(i) for i in defined + used)
    assert len(set(defined)) == len(tiny.nodes) + 3
