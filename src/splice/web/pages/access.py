"""Access grants: the list with a request form; one grant with its decisions, the statements
run and its receipt; approve, reject and revoke.

The buttons are shown from :func:`splice.api.access_options`; every POST is decided again by
the library, so a forged request is refused (403) and writes nothing.
"""

from __future__ import annotations

from typing import Any

from splice import api
from splice.errors import AccessError, ApprovalError, GrantError, InputError, SelectorError
from splice.web.core import Ctx, PageError, Redirect, Web
from splice.web.lists import POLL_MS, filtered, partial, poll_url


def access_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    rows = api.list_access(ctx.ws, include_closed=True)
    kept, filters = filtered(ctx, rows, [
        ("status", "Status", lambda g: g["status"]),
        ("domain", "Domain", lambda g: g.get("domain")),
    ])  # fmt: skip
    data = {
        "title": "Access",
        "grants": kept,
        "filters": filters,
        "filtered_out": bool(rows) and not kept,
        "poll": poll_url(ctx, "/access", any(g["status"] == "granting" for g in kept)),
        "poll_ms": POLL_MS,
        "max_hours": ctx.ws.config.access.max_hours,
    }
    return ("access_list.html" if partial(ctx) else "access.html"), data


def access_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    gid = ctx.params["grant_id"]
    g = api.access_grant(ctx.ws, gid)
    return "access_grant.html", {
        "title": f"{g['grant_id']} {g['grantee']}",
        "g": g,
        "can": api.access_options(ctx.ws, gid, ctx.principal),
    }


def request(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    f = {k: ctx.form.get(k, "").strip() for k in ("selector", "grantee", "why", "hours")}
    try:
        hours = float(f["hours"])
    except ValueError:
        raise PageError(f"hours {f['hours']!r} is not a number.", status=400,
                        fix="write how many hours access lasts, e.g. 8") from None  # fmt: skip
    try:
        g = api.request_access(ctx.ws, f["selector"], grantee=f["grantee"], why=f["why"],
                               hours=hours, principal=ctx.principal)  # fmt: skip
    except AccessError as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    except (GrantError, InputError, SelectorError) as e:
        raise PageError(e.message, status=400, fix=e.fix) from e
    raise Redirect(f"/access/{g['grant_id']}")


def _decided(fn: Any) -> Any:
    """A decision: a refusal by the library is a 403 page (nothing written)."""

    def handler(ctx: Ctx) -> tuple[str, dict[str, Any]]:
        reason = ctx.form.get("comment", "").strip()
        try:
            fn(ctx, reason)
        except (AccessError, ApprovalError) as e:
            raise PageError(e.message, status=403, fix=e.fix) from e
        except GrantError as e:
            raise PageError(e.message, status=502, fix=e.fix) from e
        raise Redirect(f"/access/{ctx.params['grant_id']}")

    return handler


def _need(reason: str, what: str) -> str:
    if not reason:
        raise PageError(f"{what} needs a reason: write it in the comment box.", status=400)
    return reason


@_decided
def approve(ctx: Ctx, comment: str) -> None:
    api.approve_access(ctx.ws, ctx.params["grant_id"], principal=ctx.principal,
                       comment=comment or None)  # fmt: skip


@_decided
def reject(ctx: Ctx, comment: str) -> None:
    api.reject_access(ctx.ws, ctx.params["grant_id"], principal=ctx.principal,
                      reason=_need(comment, "a rejection"))  # fmt: skip


@_decided
def revoke(ctx: Ctx, comment: str) -> None:
    api.revoke_access(ctx.ws, ctx.params["grant_id"], principal=ctx.principal,
                      reason=_need(comment, "ending access early"))  # fmt: skip


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    post = ["POST"]
    return [
        Route("/access", web.page(access_list), methods=["GET"]),
        Route("/access/request", web.page(request, post=True), methods=post),
        Route("/access/{grant_id}", web.page(access_page), methods=["GET"]),
        Route("/access/{grant_id}/approve", web.page(approve, post=True), methods=post),
        Route("/access/{grant_id}/reject", web.page(reject, post=True), methods=post),
        Route("/access/{grant_id}/revoke", web.page(revoke, post=True), methods=post),
    ]
