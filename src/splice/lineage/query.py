"""Column lineage of one column (or node), up or down, across projects: what `splice lineage`
and the MCP tools ask (the whole-workspace pass is :mod:`splice.lineage.service`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from splice.errors import NodeNotFoundError
from splice.graph.model import Graph
from splice.lineage.service import WorkspaceLineage, workspace_lineage, writers_map
from splice.lineage.tool_columns import tool_column_note
from splice.lineage.types import ModelLineage
from splice.workspace.core import Workspace


def resolve_column_ref(graph: Graph, ref: str) -> tuple[str, str | None]:
    """``NODE[.COLUMN]`` -> (node id, column or None). Node names may contain dots.

    Accepts a full id (``pricing:fx.daily_rates.rate_to_usd``) or a name unique across projects
    (``fct_gmv_qtd.gmv_usd_qtd``), in any case when only one node matches that way.
    """
    from splice.graph.suggest import closest

    def node_for(text: str) -> str | None:
        if text in graph.nodes:
            return text
        hits = [n.id for n in graph.nodes.values() if n.name == text]
        if not hits:  # a Snowflake project's SQLMesh names are upper case: billing:BILLING.X
            low = text.lower()
            hits = [n.id for n in graph.nodes.values() if low in (n.id.lower(), n.name.lower())]
        # a versioned dbt model's own name is its latest version, as ref('m') is
        return hits[0] if len(hits) == 1 else graph.latest_version(text)

    nid = node_for(ref)
    if nid:
        return nid, None
    if "." in ref:
        head, col = ref.rsplit(".", 1)
        nid = node_for(head)
        if nid:
            return nid, col
    near = closest(ref, list(graph.nodes)) or closest(ref.rsplit(".", 1)[0], list(graph.nodes))
    hint = f" Closest: {', '.join(near)}." if near else ""
    raise NodeNotFoundError(
        f"no node {ref!r} in the graph.{hint}",
        fix="name a node as `splice ls` prints it, optionally followed by .COLUMN",
    )


def _hop_record(graph: Graph, hop: Any, lineages: dict[str, ModelLineage]) -> dict[str, Any]:
    node = graph.nodes.get(hop.node_id) if hop.node_id else None
    via_node = graph.nodes.get(hop.via[0]) if hop.via and hop.via[0] else None
    rec: dict[str, Any] = {
        "node": hop.node_id or (hop.relation.key if hop.relation else None),
        "column": hop.column,
        "kind": hop.kind,
        "depth": hop.depth,
        "relation": hop.relation.key if hop.relation else None,
        "project": node.project if node else None,
        "node_kind": node.kind if node else "external",
        "tool": node.tool if node else None,
        "via": f"{hop.via[0]}.{hop.via[1]}" if hop.via else None,
        "across_binding": bool(node and via_node and node.project != via_node.project),
        "self_ref": bool(getattr(hop, "self_ref", False)),
    }
    if rec["self_ref"]:
        rec["note"] = "previous state: the model reads its own table"
    ml = lineages.get(hop.node_id) if hop.node_id else None
    if ml is not None:
        col = ml.columns.get(hop.column)
        reason = ml.opaque_reason or (col.opaque_reason if col is not None else None)
        if reason:
            rec["opaque_reason"] = reason
    if hop.column == "*":
        rec["opaque_reason"] = "an opaque model: which columns flow is unknown"
    return rec


def _merge_hops(hops: list[Any]) -> list[Any]:
    best: dict[tuple[Any, Any, str, bool], Any] = {}
    for h in hops:
        key = (h.node_id, h.relation.key if h.relation else None, h.column, h.self_ref)
        prev = best.get(key)
        if (
            prev is None
            or (h.kind == "direct" and prev.kind != "direct")
            or (h.kind == prev.kind and h.depth < prev.depth)
        ):
            best[key] = h
    return sorted(best.values(), key=lambda h: (h.depth, h.node_id or "~", h.column, h.self_ref))


def column_lineage(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> dict[str, Any]:
    """Column lineage of ``NODE[.COLUMN]`` upstream and/or downstream, across projects.

    A node without a column walks every column it has; a dashboard walks everything it reads;
    an ingestion job walks everything downstream of the relations it loads. Dashboards that read
    a reached node are listed at the end of a downstream walk.
    """
    from splice.lineage import LineageIndex

    graph = ws.graph()
    nid, column = resolve_column_ref(graph, ref)
    ws.open_state_for_caches()  # the lineage is kept there: the graph then is too
    wl = workspace_lineage(ws)
    writers = writers_map(graph, ws.dialect)
    idx = LineageIndex({k: (v, graph.nodes[k].writes) for k, v in wl.models.items()}, writers)
    node = graph.nodes[nid]
    starts: list[tuple[str, str]] = []  # (node id, column)
    parents_as_start = node.kind == "dashboard" or node.kind in ("test", "audit")
    if parents_as_start:
        for p in sorted(graph.parents(nid)):
            cols = [column] if column else _columns_of(graph, wl, p)
            starts.extend((p, c) for c in cols)
    else:
        if column:
            column = _own_column(ws, graph, wl, idx, nid, column)
        cols = [column] if column else _columns_of(graph, wl, nid)
        if (
            column
            and nid in wl.models
            and not wl.models[nid].opaque_reason
            and column not in wl.models[nid].columns
        ):
            from splice.graph.suggest import closest

            near = closest(column, list(wl.models[nid].columns))
            raise NodeNotFoundError(
                f"{nid} has no column {column!r}."
                + (f" Closest: {', '.join(near)}." if near else ""),
                fix=f"name one of its columns: {', '.join(list(wl.models[nid].columns)[:10])}",
            )
        if not cols and nid in wl.models and wl.models[nid].opaque_reason:
            cols = ["(opaque)"]  # an opaque model still names what it reads, as '*' hops
        starts.extend((nid, c) for c in cols)
    out: dict[str, Any] = {
        "root": ref,
        "node": nid,
        "column": column,
        "node_kind": node.kind,
        "stats": wl.stats,
    }
    if node.kind in ("model", "snapshot") and nid in wl.models:
        ml = wl.models[nid]
        out["opaque_reason"] = ml.opaque_reason
    if direction in (None, "upstream"):
        hops: list[Any] = []
        for s_node, s_col in starts:
            if s_node in idx.lineages:
                hops += idx.upstream(s_node, s_col, depth=depth)
            # a start that is itself a source / ingestion node has no lineage of its own
        extra = []
        if parents_as_start:
            from splice.lineage.walk import Hop

            extra = [Hop(s, graph.nodes[s].writes, c, "direct", 1, (nid, "")) for s, c in starts]
            hops = [dataclasses.replace(h, depth=h.depth + 1) for h in hops]
        out["upstream"] = [_hop_record(graph, h, wl.models) for h in _merge_hops(extra + hops)]
        out["upstream_origins"] = _origins(graph, out["upstream"])
        if not out["upstream"]:
            note = tool_column_note(node, column)  # a column the tool adds (SCD type 2)
            if note:
                out["why_empty"] = {"upstream": note}
    if direction in (None, "downstream") and not parents_as_start:
        hops = []
        for s_node, s_col in starts:
            if node.kind in ("source", "external", "ingestion"):
                for r in node.all_writes or node.reads:
                    hops += idx.downstream(None, s_col, depth=depth, relation=r)
            else:
                hops += idx.downstream(s_node, s_col, depth=depth)
        records = [_hop_record(graph, h, wl.models) for h in _merge_hops(hops)]
        out["downstream"] = records
        reached = {nid} | {r["node"] for r in records if r["node"]}
        out["dashboards"] = sorted(
            {c for n in reached for c in graph.children(n) if graph.nodes[c].kind == "dashboard"}
        )
    from splice.lineage.explain import add_why_empty

    add_why_empty(out, graph, wl.models)  # keeps a reason already given (a tool's column)
    return out


def _own_column(
    ws: Workspace, graph: Graph, wl: WorkspaceLineage, idx: Any, nid: str, column: str
) -> str:
    """``column`` as the lineage names it (``customerNumber`` is ``customernumber`` on DuckDB).

    A source (or external table, seed, ingestion job) that declares no columns is checked
    against what is known of it: the warehouse's columns of its relation and the columns
    models read from it; a column none of them has is a :class:`NodeNotFoundError`."""
    from splice.graph.relations import normalise_identifier
    from splice.graph.suggest import closest

    node = graph.nodes[nid]
    ml = wl.models.get(nid)
    known = list(ml.columns) if ml is not None and not ml.opaque_reason else []
    known += [c.lower() for c in node.columns]

    def match(names: list[str]) -> str | None:
        if column in names:
            return column
        same = sorted({n for n in names if n.lower() == column.lower()})
        return same[0] if len(same) == 1 else None

    found = match(known)
    if found:
        return found
    if node.kind in ("source", "external", "seed", "ingestion") and not node.columns:
        from splice.lineage.service import warehouse_columns

        rels = node.all_writes or node.reads
        seen: set[str] = set()
        wh = warehouse_columns(ws) if rels else {}
        for r in rels:
            seen |= set(wh.get(r, {})) | idx.columns_read(r)
        found = match(sorted(seen))
        if found:
            return found
        if seen:
            near = closest(column, sorted(seen)) or closest(column.lower(), sorted(seen))
            raise NodeNotFoundError(
                f"{nid} has no column {column!r}: it declares none, and neither the warehouse "
                "nor any model that reads it has one by that name."
                + (f" Closest: {', '.join(near)}." if near else ""),
                fix=f"name one of its columns: {', '.join(sorted(seen)[:10])}",
            )
    return normalise_identifier(column, ws.dialect)


def _columns_of(graph: Graph, wl: WorkspaceLineage, nid: str) -> list[str]:
    if nid in wl.models and wl.models[nid].columns:
        return list(wl.models[nid].columns)
    return [c.lower() for c in graph.nodes[nid].columns]


def _origins(graph: Graph, hops: list[dict[str, Any]]) -> list[str]:
    """The farthest nodes reached upstream: ingestion jobs, unbound sources, external tables."""
    origins = set()
    for h in hops:
        nid = h["node"]
        n = graph.nodes.get(nid) if nid else None
        if n is None or n.kind in ("ingestion", "source", "external"):
            origins.add(nid)
    return sorted(o for o in origins if o)


def openlineage_for(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> list[dict[str, Any]]:
    """The OpenLineage column-lineage facet of each model reached from ``ref`` (itself included)."""
    from splice.lineage import to_openlineage_facet

    res = column_lineage(ws, ref, direction=direction, depth=depth)
    wl = workspace_lineage(ws)
    graph = ws.graph()
    namespace = f"{ws.config.warehouse.type}://{ws.default_catalog or ws.warehouse_path.stem}"
    ids = [res["node"]] + [h["node"] for h in res.get("upstream", []) + res.get("downstream", [])]
    out = []
    seen: set[str] = set()
    for nid in ids:
        if nid in seen or nid not in wl.models:
            continue
        seen.add(nid)
        node = graph.nodes[nid]
        out.append(
            {
                "namespace": namespace,
                "name": node.writes.key if node.writes else nid,
                "node": nid,
                "facets": {"columnLineage": to_openlineage_facet(wl.models[nid], namespace)},
            }
        )
    return out


def lineage_chain(ws: Workspace, ref: str) -> list[str]:
    """The direct upstream path of one column, nearest first, one hop per depth (preferring a
    rate over an amount where a value has two direct inputs; a model's own previous state is
    not a hop). The demo's tour shows the Q3 close figure back to the rates vendor's job."""
    res = column_lineage(ws, ref, direction="upstream")
    chain = [ref]
    want = ref.rsplit(".", 1)[-1]
    by_depth: dict[int, list[dict[str, Any]]] = {}
    for h in res["upstream"]:
        if h["kind"] == "direct" and not h.get("self_ref"):  # not a model's own previous state
            by_depth.setdefault(h["depth"], []).append(h)
    current = f"{res['node']}.{want}"
    for depth in sorted(by_depth):
        nxt = [h for h in by_depth[depth] if h["via"] == current]
        # prefer the rate over the amount when a value has two direct inputs
        nxt.sort(
            key=lambda h: (not str(h["column"]).startswith("rate"), h["node"] or "", h["column"])
        )
        if not nxt:
            break
        current = f"{nxt[0]['node']}.{nxt[0]['column']}"
        chain.append(current + ("  (across binding)" if nxt[0]["across_binding"] else ""))
    return chain
