"""The graph: find a node, see its upstream and downstream across tools, the column lineage of
a column, and doctor's findings."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.web.core import Ctx, Web


def graph_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    q = ctx.query.get("q", "").strip()
    found = api.search_nodes(ctx.ws, q, limit=50) if q else []
    return "graph.html", {"title": "Graph", "q": q, "found": found}


def node_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    node = api.node_details(ctx.ws, ctx.params["node_id"])
    return "node.html", {"title": ctx.params["node_id"], "n": node}


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/graph", web.page(graph_page), methods=["GET"]),
        Route("/graph/node/{node_id:path}", web.page(node_page), methods=["GET"]),
    ]
