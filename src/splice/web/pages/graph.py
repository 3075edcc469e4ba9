"""The graph: find a node, see its upstream and downstream across tools, the column lineage of
a column, and doctor's findings.

``/graph`` (search and the projects joined) and a node's page read the graph the server keeps
warm and stay fast on a large workspace; a column's lineage (``?column=NAME`` on a node's page)
and ``/graph/doctor`` need the workspace's column lineage, computed once and cached by content
(the first time on a large workspace takes a while: doctor has its own page for that reason).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from splice import api
from splice.errors import SpliceError
from splice.support import numbers
from splice.web import svg
from splice.web.core import Ctx, PageError, Web

#: Severity order on the doctor page.
SEVERITIES = ("error", "warning", "info")
#: At most this many nodes are listed for a kind chosen without words.
LIST_LIMIT = 200


def node_url(node_id: str, column: str | None = None) -> str:
    """A node's page (and one of its columns' lineage).

    >>> node_url("pricing:marts.agg_gmv_daily", "gmv_usd")
    '/graph/node/pricing:marts.agg_gmv_daily?column=gmv_usd'
    >>> node_url("finance:source:pricing.agg gmv")
    '/graph/node/finance:source:pricing.agg%20gmv'
    """
    url = "/graph/node/" + quote(str(node_id), safe=":/.@-_")
    return url + (f"?column={quote(column, safe='')}" if column else "")


def register_filters(web: Web) -> None:
    """What the graph's and the runs' templates call: ``node_url(id, column=None)``, the
    ``seconds`` and ``count`` filters."""
    web.templates.env.globals["node_url"] = node_url
    web.templates.env.filters["seconds"] = numbers.duration
    web.templates.env.filters["count"] = numbers.count


def graph_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    q = ctx.query.get("q", "").strip()
    summary = api.graph_summary(ctx.ws)
    kinds = sorted({k for p in summary["projects"] for k, _c in p["kinds"]})
    kind = ctx.query.get("kind", "").strip() or None
    if kind is not None and kind not in kinds:
        raise PageError(
            f"no node kind {kind!r} in this graph.", status=400,
            fix=f"choose one of: {', '.join(kinds)}",
        )  # fmt: skip
    found: list[dict[str, Any]] = []
    if q:
        found = api.search_nodes(ctx.ws, q, kind=kind, limit=50)
    elif kind:  # every node of that kind, by id
        found = [
            {**r, "relation": r.get("writes")}
            for r in sorted(api.list_nodes(ctx.ws), key=lambda r: r["id"])
            if r["kind"] == kind
        ][:LIST_LIMIT]
    return "graph.html", {
        "title": "Graph: " + " ".join(x for x in (kind, q) if x) if q or kind else "Graph",
        "q": q,
        "kind": kind,
        "kinds": kinds,
        "found": found,
        "summary": summary,
        "limit": LIST_LIMIT,
    }


def whole_graph_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    checks = ctx.query.get("checks") == "1"
    project = ctx.query.get("project", "").strip() or None
    projects = [p["project"] for p in api.graph_summary(ctx.ws, bindings=0)["projects"]]
    drawing = api.graph_drawing(ctx.ws, checks=checks, project=project)
    if project is not None and not drawing["nodes"]:
        raise PageError(f"no node in a project {project!r}.", status=400,
                        fix=f"choose one of: {', '.join(projects)}")  # fmt: skip
    return "graph_all.html", {
        "title": "The whole graph" + (f": {project}" if project else ""),
        "drawing": drawing,
        "svg": svg.lineage(drawing, uid="whole", title="The whole graph"),
        "checks": checks,
        "project": project,
        "projects": projects,
    }


def node_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    node = api.node_details(ctx.ws, ctx.params["node_id"])
    around = api.node_neighbourhood(ctx.ws, node["id"])
    column = ctx.query.get("column", "").strip() or None
    lineage: dict[str, Any] | None = None
    lineage_error: SpliceError | None = None
    took = None
    if column:
        t0 = time.perf_counter()
        try:
            lineage = api.lineage(ctx.ws, f"{node['id']}.{column}")
        except SpliceError as e:  # an unknown column: said on the page, the rest still shown
            lineage_error = e
        took = time.perf_counter() - t0
        if lineage is not None:
            for h in lineage.get("upstream", []) + lineage.get("downstream", []):
                h["via_node"], h["via_column"] = _via(h.get("via"), node["id"], column)
    sql = api.node_sql(ctx.ws, node["id"], render=ctx.query.get("render") == "1")
    return "node.html", {
        "title": node["id"] + (f".{column}" if column else ""),
        "sql": sql,
        "n": node,
        "around": around,
        "column": column,
        "lineage": lineage,
        "lineage_error": lineage_error,
        "lineage_seconds": took,
        "up_by_project": _by_project(around["upstream"]),
        "down_by_project": _by_project(around["downstream"]),
    }


def doctor_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    t0 = time.perf_counter()
    checks = [c.to_dict() for c in api.doctor(ctx.ws)]
    took = time.perf_counter() - t0
    counts = {s: sum(1 for c in checks if c["severity"] == s) for s in SEVERITIES}
    return "graph_doctor.html", {
        "title": "Doctor",
        "groups": [(s, [c for c in checks if c["severity"] == s]) for s in SEVERITIES],
        "counts": counts,
        "seconds": took,
    }


def _via(via: str | None, node_id: str, column: str) -> tuple[str | None, str | None]:
    """The (node, column) a lineage hop was reached from; a walk that starts at a relation (an
    ingestion job's table) names no node: the page's own node is meant.

    >>> _via("pricing:fx.daily_rates.rate_to_usd", "x:y", "c")
    ('pricing:fx.daily_rates', 'rate_to_usd')
    >>> _via("None.rate_to_usd", "ingestion:fx", "rate_to_usd"), _via("finance:exposure:q3.", "x", "c")
    (('ingestion:fx', 'rate_to_usd'), ('finance:exposure:q3', None))
    """
    if not via:
        return None, None
    head, _, col = via.rpartition(".")
    if not head:
        head, col = via, ""
    if head == "None":
        return node_id, col or column
    return head, col or None


def _by_project(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows grouped by project, projects in the order first reached (nearest first).

    >>> _by_project([{"project": "a"}, {"project": "b"}, {"project": "a"}])
    [('a', [{'project': 'a'}, {'project': 'a'}]), ('b', [{'project': 'b'}])]
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r["project"]), []).append(r)
    return list(out.items())


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    register_filters(web)
    return [
        Route("/graph", web.page(graph_page), methods=["GET"]),
        Route("/graph/doctor", web.page(doctor_page), methods=["GET"]),
        Route("/graph/all", web.page(whole_graph_page), methods=["GET"]),
        Route("/graph/node/{node_id:path}", web.page(node_page), methods=["GET"]),
    ]
