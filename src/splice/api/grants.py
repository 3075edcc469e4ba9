"""Access grants (:mod:`splice.grants`): request, decide, list, revoke; every decision takes the
authenticated Principal behind it, and the rules are enforced below this layer."""

from __future__ import annotations

from typing import Any

from splice.support.principals import Principal
from splice.workspace.core import Workspace


def request_access(ws: Workspace, selector: str, *, grantee: str, why: str, hours: float,
                   principal: Principal) -> dict[str, Any]:  # fmt: skip
    """Ask for read access to the relations ``selector``'s nodes write in the target, for the
    warehouse role ``grantee``, for ``hours``; routed to the owners of their domain."""
    from splice.grants import asked, request

    g = request(ws, selector, grantee=grantee, why=why, hours=hours, principal=principal)
    return {**g.as_dict(), "asked": asked(ws, g)}


def approve_access(ws: Workspace, grant_id: str, *, principal: Principal,
                   comment: str | None = None) -> dict[str, Any]:  # fmt: skip
    """A named owner of the domain (not the requester) approves: granted on the warehouse now."""
    from splice.grants import approve

    return approve(ws, grant_id, principal=principal, comment=comment).as_dict()


def reject_access(ws: Workspace, grant_id: str, *, principal: Principal,
                  reason: str) -> dict[str, Any]:  # fmt: skip
    """An owner refuses a pending request, or its requester withdraws it."""
    from splice.grants import reject

    return reject(ws, grant_id, principal=principal, reason=reason).as_dict()


def revoke_access(ws: Workspace, grant_id: str, *, principal: Principal,
                  reason: str) -> dict[str, Any]:  # fmt: skip
    """End a granted access early (an owner of the domain, or its requester)."""
    from splice.grants import revoke

    return revoke(ws, grant_id, principal=principal, reason=reason).as_dict()


def list_access(ws: Workspace, *, include_closed: bool = False) -> list[dict[str, Any]]:
    """The target's access grants, newest first (what is due applied first): pending requests
    with the owners asked, grants held with their end; ended ones with ``include_closed``."""
    from splice.grants import asked, end_due
    from splice.grants.store import list_grants

    end_due(ws)
    out = []
    for g in list_grants(ws.state, target=ws.target):
        if g.status in ("rejected", "expired", "ended", "failed") and not include_closed:
            continue
        out.append({**g.as_dict(), "asked": asked(ws, g) if g.status == "pending" else []})
    return out


def access_grant(ws: Workspace, grant_id: str) -> dict[str, Any]:
    """One grant with its decisions in order and its receipt."""
    from splice.grants import asked, refresh
    from splice.grants.receipt import build
    from splice.grants.store import load

    g = refresh(ws, load(ws.state, grant_id))
    receipt = build(ws, g)
    return {**g.as_dict(), "asked": asked(ws, g) if g.status == "pending" else [],
            "decisions": receipt["decisions"], "receipt": receipt}  # fmt: skip


def end_due_access(ws: Workspace, *, now: float | None = None) -> list[str]:
    """Revoke the grants whose time is up (and expire unanswered requests) when any are due;
    a line per revoke that failed. Cheap when nothing is due; nothing on a warehouse without
    grants, or before the workspace has a state."""
    from splice.warehouse.engines import capabilities as warehouse_capabilities

    if not warehouse_capabilities(ws.config.warehouse.type).grants or not ws.state_exists:
        return []
    from splice.grants import due_count, end_due

    if not due_count(ws, now):
        return []
    return end_due(ws, now=now)


def access_options(ws: Workspace, grant_id: str, principal: Principal) -> dict[str, str | None]:
    """What ``principal`` may do to a grant now (approve, reject, revoke): None when it may,
    else why not. For showing buttons only: every decision is checked again."""
    from splice.grants.service import options
    from splice.grants.store import load

    return options(ws, load(ws.state, grant_id), principal)


def keep_access(ws: Workspace) -> list[str]:
    """After a build: grant again what every held grant holds (a rebuilt relation lost its
    privileges). A line per grant that could not be kept whole; never raises for the build."""
    from splice.errors import SpliceError
    from splice.warehouse.engines import capabilities as warehouse_capabilities

    if not warehouse_capabilities(ws.config.warehouse.type).grants or not ws.state_exists:
        return []
    from splice.grants.service import reassert

    try:
        return reassert(ws)
    except SpliceError as e:
        return [f"access grants could not be granted again after the build: {e.one_line()}"]
