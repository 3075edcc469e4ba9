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
from splice.web.lists import POLL_MS, filtered, partial, poll_url

#: How often the progress of an apply is fetched again, in milliseconds.
APPLY_POLL_MS = 1000


def proposal_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    rows = []
    for p, asked in api.list_proposals(ctx.ws, include_closed=True):
        rows.append({**p.as_dict(), "asked": asked, **api.approval_status(ctx.ws, p)})
    kept, filters = filtered(ctx, rows, [
        ("status", "Status", lambda p: p["status"]),
        ("domain", "Domain", lambda p: p.get("domain")),
    ])  # fmt: skip
    data = {
        "title": "Proposals",
        "proposals": kept,
        "filters": filters,
        "filtered_out": bool(rows) and not kept,
        "stop": api.active_stop(ctx.ws),
        "poll": poll_url(ctx, "/proposals", any(p["status"] == "applying" for p in kept)),
        "poll_ms": POLL_MS,
    }
    return ("proposals_list.html" if partial(ctx) else "proposals.html"), data


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


def apply(web: Web) -> Any:
    """Apply, in the background: refused at once (403, nothing written) when the rules would
    not offer it; otherwise the apply starts (or, already running, is joined) and the browser
    is sent to its progress. The library decides again when the apply runs."""

    def handler(ctx: Ctx) -> tuple[str, dict[str, Any]]:
        pid = ctx.params["proposal_id"]
        job = web.applies.get(pid)
        if job is None or not job.running:
            why_not = api.decision_options(ctx.ws, pid, ctx.principal).get("apply")
            if why_not is not None:
                raise PageError(f"{pid} cannot be applied by {ctx.principal.name}: {why_not}",
                                status=403)  # fmt: skip
            web.applies.start(pid, ctx.principal)
        raise Redirect(f"/proposals/{pid}/applying")

    return handler


def applying(web: Web) -> Any:
    """The progress of an apply: its steps and the run's events as they come, refreshed by the
    page's script until the apply ends (then on to the proposal)."""

    def handler(ctx: Ctx) -> tuple[str, dict[str, Any]]:
        pid = ctx.params["proposal_id"]
        p = api.proposal(ctx.ws, pid)  # an unknown proposal: 404
        job = web.applies.get(pid)
        # another server (or one restarted) applies it: its status says while it runs
        running = job.running if job is not None else p["status"] == "applying"
        data = {
            "title": f"Applying {pid}",
            "p": p,
            "job": job,
            "running": running,
            "poll": poll_url(ctx, f"/proposals/{pid}/applying", running),
            "poll_ms": APPLY_POLL_MS,
            "done_url": f"/proposals/{pid}" if job is None or not job.error else None,
        }
        return ("apply_progress.html" if partial(ctx) else "proposal_applying.html"), data

    return handler


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
        Route("/proposals/{proposal_id}/apply", web.page(apply(web), post=True), methods=post),
        Route("/proposals/{proposal_id}/applying", web.page(applying(web)), methods=["GET"]),
        Route("/proposals/{proposal_id}/undo", web.page(undo, post=True), methods=post),
        Route("/incidents/{incident_id}/propose", web.page(propose, post=True), methods=post),
        Route("/stop", web.page(stop, post=True), methods=post),
        Route("/resume", web.page(resume, post=True), methods=post),
    ]
