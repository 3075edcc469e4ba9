"""Which domain a node belongs to (``[[domains]]``), its owners, and the checks doctor can show.

A node is in every domain one of whose selectors matches it; when several do, the **most
specific** wins: the domain whose matching selector matches the fewest nodes (a selector
naming one node beats ``pricing:*``), and on a tie the domain written first in splice.toml.
A selector that matches no node is skipped here and reported by :func:`domain_checks`.

>>> from splice.config.workspace import WorkspaceConfig
>>> from splice.graph.model import Graph, Node
>>> g = Graph()
>>> for nid in ("pricing:fx.daily_rates", "pricing:marts.agg_gmv_daily", "ingestion:fx_rates_ingest"):
...     project, name = nid.split(":", 1)
...     g.add_node(Node(nid, project, name, "model", "sqlmesh"))
>>> cfg = WorkspaceConfig.model_validate({"domains": [
...     {"name": "pricing", "nodes": ["pricing:*", "ingestion:fx_rates_ingest"], "owners": ["maria", "sam"]},
...     {"name": "fx", "nodes": ["pricing:fx.*"], "owners": ["ana"]}]})
>>> [domain_for(g, cfg, n).name for n in sorted(g.nodes)]
['pricing', 'fx', 'pricing']
>>> owners_of(domain_for(g, cfg, "pricing:marts.agg_gmv_daily"))
['maria', 'sam']
"""

from __future__ import annotations

from typing import Any

from splice.config.workspace import DomainSection, WorkspaceConfig
from splice.doctor.checks import Check
from splice.errors import SelectorError
from splice.graph.model import Graph
from splice.graph.selectors import select


def _matches(graph: Graph, selector: str) -> set[str] | None:
    try:
        return set(select(graph, selector))
    except SelectorError:
        return None


def _all_matches(graph: Graph, config: WorkspaceConfig) -> list[list[set[str]]]:
    return [[m for s in d.nodes if (m := _matches(graph, s))] for d in config.domains]


def _pick(
    config: WorkspaceConfig, matches: list[list[set[str]]], node_id: str
) -> DomainSection | None:
    best: tuple[int, int] | None = None
    for i, sets in enumerate(matches):
        sizes = [len(m) for m in sets if node_id in m]
        if sizes and (best is None or (min(sizes), i) < best):
            best = (min(sizes), i)
    return config.domains[best[1]] if best else None


def domain_for(graph: Graph, config: WorkspaceConfig, node_id: str) -> DomainSection | None:
    """The domain ``node_id`` belongs to (see the module docstring), or None."""
    return _pick(config, _all_matches(graph, config), node_id)


def domains_touched(
    graph: Graph, config: WorkspaceConfig, node_ids: list[str], *, first: str | None = None
) -> tuple[list[DomainSection], list[str]]:
    """The domains of ``node_ids`` (each once; ``first``'s domain, the origin's, first, then in
    the order the nodes come) and the nodes in no domain.

    >>> from splice.config.workspace import WorkspaceConfig
    >>> from splice.graph.model import Graph, Node
    >>> g = Graph()
    >>> for nid in ("pricing:fx.daily_rates", "finance:fct_gmv_qtd", "shop:orders"):
    ...     project, name = nid.split(":", 1)
    ...     g.add_node(Node(nid, project, name, "model", "dbt"))
    >>> cfg = WorkspaceConfig.model_validate({"domains": [
    ...     {"name": "pricing", "nodes": ["pricing:*"], "owners": ["maria"]},
    ...     {"name": "finance", "nodes": ["finance:*"], "owners": ["lee"]}]})
    >>> doms, unowned = domains_touched(g, cfg, sorted(g.nodes), first="pricing:fx.daily_rates")
    >>> [d.name for d in doms], unowned
    (['pricing', 'finance'], ['shop:orders'])
    """
    matches = _all_matches(graph, config)
    out: list[DomainSection] = []
    unowned: list[str] = []
    for nid in ([first] if first else []) + [n for n in node_ids if n != first]:
        d = _pick(config, matches, nid)
        if d is None:
            if nid not in unowned:
                unowned.append(nid)
        elif all(x.name != d.name for x in out):
            out.append(d)
    return out, unowned


def domain_named(config: WorkspaceConfig, name: str) -> DomainSection | None:
    return next((d for d in config.domains if d.name == name), None)


def owners_of(domain: DomainSection) -> list[str]:
    """The domain's owners in escalation order (a copy)."""
    return list(domain.owners)


def domain_checks(graph: Graph, config: WorkspaceConfig) -> list[Check]:
    """Doctor findings about ``[[domains]]``: selectors that match nothing, metrics naming an
    unknown domain, and models no domain covers (when domains are declared at all)."""
    out: list[Check] = []
    for i, d in enumerate(config.domains):
        for s in d.nodes:
            if _matches(graph, s) is None:
                out.append(Check("SPL401", "warning", None,
                                 f"domain {d.name!r}: selector {s!r} matches no node",
                                 f"correct domains[{i}].nodes in splice.toml (splice ls -s '{s}')"))  # fmt: skip
    names = {d.name for d in config.domains}
    for m in config.metrics:
        if m.domain and config.domains and m.domain not in names:
            out.append(Check("SPL402", "warning", m.node or m.semantic,
                             f"metric {m.name!r} names domain {m.domain!r}, which is not declared",
                             "add it to [[domains]] or correct the metric's domain"))  # fmt: skip
    if config.domains:
        matches = _all_matches(graph, config)
        for nid, node in sorted(graph.nodes.items()):
            if node.kind in ("model", "ingestion") and _pick(config, matches, nid) is None:
                out.append(Check("SPL403", "info", nid,
                                 f"{nid} is in no domain: nobody can approve a repair of it",
                                 "add a selector matching it to a [[domains]] entry"))  # fmt: skip
    return out


def describe(domain: DomainSection) -> dict[str, Any]:
    return {"name": domain.name, "owners": owners_of(domain), "autonomy": domain.autonomy,
            "nodes": list(domain.nodes)}  # fmt: skip
