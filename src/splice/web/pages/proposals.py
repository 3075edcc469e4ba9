"""Proposals: the list; one proposal's steps, hand commands, cost, undo table and audit diff;
and the decisions on it (approve, reject, apply, undo) and the org-wide stop and resume.

The buttons are shown from :func:`splice.api.decision_options` (a named owner who is not the
requester sees Approve); every POST is decided again by the library, so a forged request from
anyone else is refused (403) and writes nothing.
"""

from __future__ import annotations

from typing import Any

from splice import api
from splice.errors import AccessError, ApprovalError
from splice.web.core import Ctx, PageError, Redirect, Web


def proposal_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    rows = []
    for p, asked in api.list_proposals(ctx.ws, include_closed=True):
        rows.append({**p.as_dict(), "asked": asked, **api.approval_status(ctx.ws, p)})
    return "proposals.html", {
        "title": "Proposals",
        "proposals": rows,
        "stop": api.active_stop(ctx.ws),
    }


def proposal_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    pid = ctx.params["proposal_id"]
    p = api.proposal(ctx.ws, pid)
    return "proposal.html", {
        "title": f"{p['proposal_id']} {p['title']}",
        "p": p,
        "can": api.decision_options(ctx.ws, pid, ctx.principal),
        "stop": api.active_stop(ctx.ws),
        "diff": _diff_lines(p.get("audit_diff")),
    }


def _diff_lines(diff: str | None) -> list[tuple[str, str]]:
    """A unified diff as (css class, line) pairs.

    >>> _diff_lines("+a\\n-b\\n c")
    [('add', '+a'), ('del', '-b'), ('', ' c')]
    """
    out = []
    for line in (diff or "").splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        out.append((cls, line))
    return out


def _decided(fn: Any) -> Any:
    """A decision: a refusal by the library is a 403 page (nothing written)."""

    def handler(ctx: Ctx) -> tuple[str, dict[str, Any]]:
        try:
            fn(ctx)
        except (AccessError, ApprovalError) as e:
            raise PageError(e.message, status=403, fix=e.fix) from e
        raise Redirect(f"/proposals/{ctx.params['proposal_id']}")

    return handler


@_decided
def approve(ctx: Ctx) -> None:
    comment = ctx.form.get("comment", "").strip() or None
    api.approve(ctx.ws, ctx.params["proposal_id"], principal=ctx.principal, comment=comment)


@_decided
def reject(ctx: Ctx) -> None:
    reason = ctx.form.get("comment", "").strip()
    if not reason:
        raise PageError("a rejection needs a reason: write it in the comment box.", status=400)
    api.reject(ctx.ws, ctx.params["proposal_id"], principal=ctx.principal, reason=reason)


@_decided
def apply(ctx: Ctx) -> None:
    api.apply(ctx.ws, ctx.params["proposal_id"], principal=ctx.principal)


@_decided
def undo(ctx: Ctx) -> None:
    api.undo(ctx.ws, ctx.params["proposal_id"], principal=ctx.principal)


def stop(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    reason = ctx.form.get("reason", "").strip()
    if not reason:
        raise PageError("the stop needs a reason.", status=400)
    try:
        api.stop(ctx.ws, principal=ctx.principal, reason=reason)
    except (AccessError, ApprovalError) as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    raise Redirect("/proposals")


def resume(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    try:
        api.resume(ctx.ws, principal=ctx.principal)
    except (AccessError, ApprovalError) as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    raise Redirect("/proposals")


def propose(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    try:
        p = api.propose(ctx.ws, ctx.params["incident_id"], principal=ctx.principal)
    except AccessError as e:
        raise PageError(e.message, status=403, fix=e.fix) from e
    raise Redirect(f"/proposals/{p.proposal_id}")


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    post = ["POST"]
    return [
        Route("/proposals", web.page(proposal_list), methods=["GET"]),
        Route("/proposals/{proposal_id}", web.page(proposal_page), methods=["GET"]),
        Route("/proposals/{proposal_id}/approve", web.page(approve, post=True), methods=post),
        Route("/proposals/{proposal_id}/reject", web.page(reject, post=True), methods=post),
        Route("/proposals/{proposal_id}/apply", web.page(apply, post=True), methods=post),
        Route("/proposals/{proposal_id}/undo", web.page(undo, post=True), methods=post),
        Route("/incidents/{incident_id}/propose", web.page(propose, post=True), methods=post),
        Route("/stop", web.page(stop, post=True), methods=post),
        Route("/resume", web.page(resume, post=True), methods=post),
    ]
