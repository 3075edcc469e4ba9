"""Which node a semantic-layer metric is about, read from the joined graph: dbt lists its
metrics and semantic models as nodes (``finance:metric:gmv`` <- ``finance:semantic_model:
gmv_daily`` <- ``finance:stg_gmv_daily``), so this needs no MetricFlow.
"""

from __future__ import annotations

from splice.config.workspace import MetricSection
from splice.graph.model import Graph, Node


def declaring_projects(graph: Graph, m: MetricSection) -> list[str]:
    """The projects whose semantic layer declares the entry's metric (only its ``project``,
    when it names one): exactly one for an entry that can be watched."""
    return sorted(n.project for n in graph.nodes.values()
                  if n.kind == "metric" and n.name == f"metric:{m.semantic}"
                  and m.project in (None, n.project))  # fmt: skip


def metric_model(graph: Graph, project: str, metric: str) -> Node | None:
    """The dbt model a semantic metric is computed from (the first, by id, when several)."""
    mid = f"{project}:metric:{metric}"
    if mid not in graph.nodes:
        return None
    stack, seen, models = [mid], set(), []
    while stack:
        nid = stack.pop()
        for p in graph.parents(nid):
            if p in seen:
                continue
            seen.add(p)
            kind = graph.nodes[p].kind
            if kind in ("metric", "semantic_model"):
                stack.append(p)
            elif graph.nodes[p].writes is not None:
                models.append(p)
    return graph.nodes[sorted(models)[0]] if models else None


def metric_node(graph: Graph, m: MetricSection) -> str | None:
    """The node a declared metric is about: its ``node``, or the model its semantic metric is
    computed from (None when the graph has no such metric)."""
    if m.semantic is None:
        return m.node
    projects = declaring_projects(graph, m)
    found = metric_model(graph, projects[0], m.semantic) if len(projects) == 1 else None
    return found.id if found is not None else None
