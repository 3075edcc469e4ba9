"""Incidents: open and past, newest first; one incident's diagnosis, charts and lineage."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.web import svg
from splice.web.core import Ctx, Web


def incident_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    rows = [
        i.as_dict() if hasattr(i, "as_dict") else i for i in api.list_incidents(ctx.ws, status=None)
    ]
    rows.sort(key=lambda i: i.get("opened_at") or 0, reverse=True)
    return "incidents.html", {
        "title": "Incidents",
        "open": [i for i in rows if i.get("status") == "open"],
        "past": [i for i in rows if i.get("status") != "open"],
    }


def incident_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    inc = api.incident(ctx.ws, ctx.params["incident_id"])
    data = inc.as_dict() if hasattr(inc, "as_dict") else dict(inc)
    proposals = [
        p.as_dict() for p, _who in api.list_proposals(ctx.ws, include_closed=True)
        if p.incident_id == data["id"]
    ]  # fmt: skip
    d = data.get("diagnosis") or {}
    charts = []
    for c in api.incident_charts(ctx.ws, d):
        name = c["metric"] if c["series"] == "(all)" else f"{c['metric']} ({c['series']})"
        marks = ", ".join(c["intervals"])
        desc = (
            f"{name}, {len(c['points'])} intervals from {c['points'][0]['interval']} to "
            f"{c['points'][-1]['interval']}, with its baseline band; anomalous: {marks}"
            if c["points"]
            else name
        )
        charts.append(
            {**c, "name": name, "svg": svg.metric_chart(c["points"], title=name, desc=desc)}
        )
    lineage = api.incident_lineage(ctx.ws, d)
    groups: dict[str, list[dict[str, Any]]] = {}
    for n in (d.get("blast_radius") or {}).get("nodes") or []:
        groups.setdefault(n["project"], []).append(n)
    return "incident.html", {
        "title": f"{data['id']} {data.get('title', '')}",
        "inc": data,
        "d": d,
        "charts": charts,
        "lineage": lineage,
        "lineage_svg": svg.lineage_path(
            lineage, title=f"Lineage of {data['id']}: from the source to the dashboards"
        ),
        "blast_groups": sorted((k, sorted(v, key=lambda n: n["node"])) for k, v in groups.items()),
        "proposals": proposals,
        "may_propose": ctx.principal.may("propose"),
    }


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/", web.page(incident_list), methods=["GET"]),
        Route("/incidents", web.page(incident_list), methods=["GET"]),
        Route("/incidents/{incident_id}", web.page(incident_page), methods=["GET"]),
    ]
