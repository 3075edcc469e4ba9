"""Incidents: open and past, newest first; one incident's diagnosis in words, a chart per
anomalous metric, the lineage drawn from the ingestion job to the dashboards, the blast radius
and the scope; and the decision to accept its new level (shown to those
:func:`splice.api.incident_options` says may make it)."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.errors import AccessError, ApprovalError
from splice.web import svg
from splice.web.core import Ctx, PageError, Redirect, Web
from splice.web.lists import POLL_MS, filtered, partial, poll_url


def incident_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    rows = [i.as_dict(with_diagnosis=False) for i in api.list_incidents(ctx.ws, status=None)]
    rows.sort(key=lambda i: (i.get("opened_at") or 0, i["id"]), reverse=True)
    domains = api.node_domains(ctx.ws, [i["origin"] for i in rows if i.get("origin")])
    for i in rows:
        i["domain"] = domains.get(i.get("origin") or "")
        i["project"] = str(i.get("origin") or "").split(":", 1)[0] or None
    kept, filters = filtered(ctx, rows, [
        ("status", "Status", lambda i: i["status"]),
        ("domain", "Domain", lambda i: i["domain"]),
        ("project", "Project", lambda i: i["project"]),
    ])  # fmt: skip
    # an incident changes while its repair is applied: refresh until the apply ends
    applying = any(
        p.status == "applying" for p, _who in api.list_proposals(ctx.ws, include_closed=False)
    )
    data = {
        "title": "Incidents",
        "open": [i for i in kept if i.get("status") in ("open", "repaired")],
        "past": [i for i in kept if i.get("status") not in ("open", "repaired")],
        "filters": filters,
        "poll": poll_url(ctx, "/incidents", applying),
        "poll_ms": POLL_MS,
    }
    return ("incidents_list.html" if partial(ctx) else "incidents.html"), data


def _blast(b: dict[str, Any]) -> dict[str, Any]:
    """The blast radius grouped for reading: nodes per project, dashboards, metrics."""
    projects: dict[str, list[dict[str, Any]]] = {}
    for n in b.get("nodes") or []:
        projects.setdefault(n.get("project") or "?", []).append(n)
    return {
        "projects": sorted(projects.items()),
        "dashboards": b.get("dashboards") or [],
        "charts": b.get("charts") or [],
        "metrics": b.get("metrics") or [],
        "environments": b.get("environments") or [],
        "count": len(b.get("nodes") or []),
    }


def incident_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    inc = api.incident(ctx.ws, ctx.params["incident_id"])
    data = inc.as_dict()
    d = data.get("diagnosis") or {}
    metric, series = ctx.query.get("metric"), ctx.query.get("series")
    picks = {metric: series} if metric and series else None
    charts = api.incident_charts(ctx.ws, data["id"], picks)
    for i, c in enumerate(charts, 1):
        c["svg"] = svg.metric_chart(c, uid=f"chart-{i}")
        c["words"] = [api.detector_words(x) for x in c["detectors"]]
    charted = {c["metric"] for c in charts}
    uncharted = list(dict.fromkeys(
        e["metric"] for e in d.get("evidence") or [] if e["metric"] not in charted
    ))  # fmt: skip
    drawing = api.incident_lineage(ctx.ws, data["id"])
    proposals = [
        p.as_dict() for p, _who in api.list_proposals(ctx.ws, include_closed=True)
        if p.incident_id == data["id"]
    ]  # fmt: skip
    levels = api.incident_levels(ctx.ws, data["id"])
    return "incident.html", {
        "title": f"{data['id']} {data.get('title', '')}",
        "levels": levels,
        "can": {
            **api.incident_options(ctx.ws, data["id"], ctx.principal),
            "close": api.close_options(ctx.ws, data["id"], ctx.principal),
        },
        "inc": data,
        "d": d,
        "charts": charts,
        # the as-of check's rule, drawn: how far behind its interval the payload is
        "lag_charts": [
            (p, svg.lag_chart(_lateness(p, charts), uid=f"lag-{i}"))
            for i, p in enumerate((d.get("source") or {}).get("payload_dates") or [], 1)
        ],
        "uncharted": uncharted,
        "lineage_svg": svg.lineage(drawing),
        "drawing": drawing,
        "blast": _blast(d.get("blast_radius") or {}),
        "proposals": proposals,
        # a proposal still open (drafted, awaiting an owner, approved) is the one to act on
        "may_propose": ctx.principal.may("propose")
        and not any(p["status"] in ("draft", "pending", "approved") for p in proposals),
    }


#: Intervals of as-of lag drawn before the stale ones.
LAG_HISTORY = 28


def _lateness(payload: dict[str, Any], charts: list[dict[str, Any]]) -> dict[str, Any]:
    """The payload's as-of lag per interval, with the history before the stale intervals taken
    from the lag monitor of the same column when it is charted (the diagnosis keeps only the
    intervals around the fault).

    >>> p = {"column": "as_of", "usual_lag_days": 0, "days": [
    ...     {"interval": "2026-09-28", "lag_days": 3, "stale": True}]}
    >>> c = {"kind": "lag", "metric": "p:fx/lag_days(as_of)", "points": [
    ...     {"interval": "2026-09-27", "value": 0.0}, {"interval": "2026-09-28", "value": 3.0}]}
    >>> [(d["interval"], d["lag_days"], d["stale"]) for d in _lateness(p, [c])["days"]]
    [('2026-09-27', 0.0, False), ('2026-09-28', 3, True)]
    """
    own = {d["interval"]: d for d in payload.get("days") or []}
    lag = next((c for c in charts if c.get("kind") == "lag"
                and str(c.get("metric", "")).endswith(f"lag_days({payload.get('column')})")),
               None)  # fmt: skip
    if lag is None or not own:
        return payload
    first = min(own)
    before = [p for p in lag.get("points") or [] if p["interval"] < first][-LAG_HISTORY:]
    days = [{"interval": p["interval"], "lag_days": p["value"], "stale": False} for p in before]
    return {**payload, "days": days + [own[k] for k in sorted(own)]}


def accept_level(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    """An owner accepts the incident's new level (decided again by the library: a forged
    request from anyone else is refused, 403, and writes nothing)."""
    note = ctx.form.get("note", "").strip() or None
    try:
        api.accept_level(ctx.ws, ctx.params["incident_id"], principal=ctx.principal, note=note)
    except (AccessError, ApprovalError) as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    raise Redirect(f"/incidents/{ctx.params['incident_id']}")


def close(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    """An owner closes an incident Splice repaired by itself (decided again by the library)."""
    note = ctx.form.get("note", "").strip() or None
    try:
        api.close_incident(ctx.ws, ctx.params["incident_id"], principal=ctx.principal, note=note)
    except (AccessError, ApprovalError) as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    raise Redirect(f"/incidents/{ctx.params['incident_id']}")


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/", web.page(incident_list), methods=["GET"]),
        Route("/incidents", web.page(incident_list), methods=["GET"]),
        Route("/incidents/{incident_id}", web.page(incident_page), methods=["GET"]),
        Route(
            "/incidents/{incident_id}/accept-level",
            web.page(accept_level, post=True),
            methods=["POST"],
        ),
        Route("/incidents/{incident_id}/close", web.page(close, post=True), methods=["POST"]),
    ]
