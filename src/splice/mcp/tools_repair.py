"""The repair tool groups: ``repairs`` (propose and read) and ``decisions`` (a person's).

An agent proposes; a person decides. ``propose_repair`` records the caller as the requester.
``accept_level`` is in ``repairs`` (the library refuses it to every agent, so on stdio, where
the caller is an agent, it is not offered and refused if called; a person's key or token on
``splice serve`` may). The ``decisions`` tools exist only on ``splice serve`` (where callers are
authenticated); they are offered only to callers who may make the decision at all
(:func:`splice.mcp.server.offered`), and the library refuses them to any agent principal, to a
principal without the scope, to the requester and to anyone who is not a named owner of the
proposal's domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context

from splice import api
from splice.mcp.calls import call
from splice.mcp.params import (
    AccessSelector,
    Comment,
    Grantee,
    GrantId,
    Hours,
    IncidentId,
    IncludeClosed,
    MigrationId,
    Note,
    ProposalId,
    Reason,
    SeriesList,
    Why,
)

if TYPE_CHECKING:
    from splice.api import Workspace

Ctx = Context[Any, Any]


# -- repairs --------------------------------------------------------------------------------
def propose_repair(ctx: Ctx, incident_id: IncidentId) -> Any:
    """Draft the narrowest repair of an incident (what to rebuild or reload, and why), capture
    and test its undo, and ask the owners of every domain it touches to approve it. Nothing
    is applied."""
    return call(
        ctx,
        lambda ws, who: _with_status(ws, api.propose(ws, incident_id, principal=who)),
        principal=True,
    )


def _with_status(ws: Workspace, p: Any) -> dict[str, Any]:
    """A proposal as data with the domains that decide it (``waiting_for``: still to approve)."""
    return {**p.as_dict(), **api.approval_status(ws, p)}


def list_proposals(ctx: Ctx, include_closed: IncludeClosed = False) -> Any:
    """Repair proposals, newest first, with their status, the owners asked so far, and the
    domains that still have to approve (``waiting_for``)."""
    return call(
        ctx,
        lambda ws: [
            {**p.as_dict(), "asked": asked, **api.approval_status(ws, p)}
            for p, asked in api.list_proposals(ws, include_closed=include_closed)
        ],
        key="proposals",
    )


def get_proposal(ctx: Ctx, proposal_id: ProposalId) -> Any:
    """One proposal: its scope, the plan it would run, its undo, its decisions so far, and
    the domains that decide it: who approved for each, which still have to (``waiting_for``)."""
    return call(ctx, lambda ws: api.proposal(ws, proposal_id))


def get_receipt(ctx: Ctx, proposal_id: ProposalId) -> Any:
    """The receipt of a repair: cause, scope, who approved and how they were authenticated,
    the runs, the metrics before and after, and the undo."""
    return call(ctx, lambda ws: api.receipt(ws, proposal_id))


def accept_level(
    ctx: Ctx, incident_id: IncidentId, note: Note = None, series: SeriesList = None
) -> Any:
    """Accept an incident's new level as the normal (a person who owns the domain where it
    starts; never an agent): from where each series' fault started it is judged against its
    new level, and the incident closes once every series has one. ``series``: only these
    (``currency=JPY``, or a metric's name); the others stay open."""
    return call(
        ctx,
        lambda ws, who: api.accept_level(ws, incident_id, principal=who, note=note,
                                         series=series),
        principal=True,
    )  # fmt: skip


def verify_audit_log(ctx: Ctx) -> Any:
    """Whether the audit log's hash chain is intact and matches the witness kept outside the
    state (its head, its length, the first break if any)."""
    return call(ctx, lambda ws: api.verify_audit_log(ws))


def request_access(
    ctx: Ctx, selector: AccessSelector, grantee: Grantee, why: Why, hours: Hours
) -> Any:
    """Ask for read access, for the warehouse role ``grantee``, to the relations the nodes
    ``selector`` picks write (one domain's), for ``hours``; an owner of the domain decides.
    Nothing is granted until then."""
    return call(
        ctx,
        lambda ws, who: api.request_access(ws, selector, grantee=grantee, why=why, hours=hours,
                                           principal=who),
        principal=True,
    )  # fmt: skip


def list_access_grants(ctx: Ctx, include_closed: IncludeClosed = False) -> Any:
    """Access grants, newest first: what is granted to whom and until when, and requests
    waiting for an owner (ended, rejected and expired ones with ``include_closed``)."""
    return call(ctx, lambda ws: api.list_access(ws, include_closed=include_closed), key="grants")


def get_access_grant(ctx: Ctx, grant_id: GrantId) -> Any:
    """One access grant: relations, grantee, every decision, the statements run, its receipt."""
    return call(ctx, lambda ws: api.access_grant(ws, grant_id))


def get_migrations(ctx: Ctx, migration_id: MigrationId = None) -> Any:
    """Warehouse migrations (or one): each wave's relations and rows, who approved it, its
    parity checks and what failed, and whether the migration was signed complete."""
    return call(ctx, lambda ws: api.migrate_status(ws, migration_id), key="migrations")


# -- decisions (people only, on splice serve) ----------------------------------------------
def approve_proposal(ctx: Ctx, proposal_id: ProposalId, comment: Comment = None) -> Any:
    """Approve a pending proposal for the domains it touches that you own (a person; never
    its requester). It is approved once an owner of every domain it touches has approved;
    until then it stays pending, and the result says which domains it waits for."""
    return call(
        ctx,
        lambda ws, who: _with_status(
            ws, api.approve(ws, proposal_id, principal=who, comment=comment)
        ),
        principal=True,
    )


def reject_proposal(ctx: Ctx, proposal_id: ProposalId, reason: Reason) -> Any:
    """Reject a proposal (an owner) or withdraw it (its requester)."""
    return call(
        ctx,
        lambda ws, who: api.reject(ws, proposal_id, principal=who, reason=reason),
        principal=True,
    )


def apply_proposal(ctx: Ctx, proposal_id: ProposalId) -> Any:
    """Run an approved proposal as one journaled run, verify it and write its receipt."""
    return call(ctx, lambda ws, who: api.apply(ws, proposal_id, principal=who), principal=True)


def undo_proposal(ctx: Ctx, proposal_id: ProposalId) -> Any:
    """Put back exactly what an applied repair rewrote (an owner)."""
    return call(ctx, lambda ws, who: api.undo(ws, proposal_id, principal=who), principal=True)


def approve_access(ctx: Ctx, grant_id: GrantId, comment: Comment = None) -> Any:
    """Approve a pending access request as a named owner of its domain (never its requester):
    the grant is made on the warehouse now and revoked when its hours are up."""
    return call(
        ctx,
        lambda ws, who: api.approve_access(ws, grant_id, principal=who, comment=comment),
        principal=True,
    )


def reject_access(ctx: Ctx, grant_id: GrantId, reason: Reason) -> Any:
    """Refuse a pending access request (an owner) or withdraw it (its requester)."""
    return call(
        ctx,
        lambda ws, who: api.reject_access(ws, grant_id, principal=who, reason=reason),
        principal=True,
    )


def revoke_access(ctx: Ctx, grant_id: GrantId, reason: Reason) -> Any:
    """End a granted access now, before its time (an owner, or its requester)."""
    return call(
        ctx,
        lambda ws, who: api.revoke_access(ws, grant_id, principal=who, reason=reason),
        principal=True,
    )


def stop_repairs(ctx: Ctx, reason: Reason) -> Any:
    """Halt every approval and apply org-wide until an owner resumes."""
    return call(ctx, lambda ws, who: api.stop(ws, principal=who, reason=reason), principal=True)


def resume_repairs(ctx: Ctx) -> Any:
    """Lift the org-wide stop (a domain owner)."""
    return call(ctx, lambda ws, who: api.resume(ws, principal=who), principal=True)


GROUPS: dict[str, list[Any]] = {
    "repairs": [
        propose_repair,
        list_proposals,
        get_proposal,
        get_receipt,
        verify_audit_log,
        accept_level,
        request_access,
        list_access_grants,
        get_access_grant,
        get_migrations,
    ],
    "decisions": [
        approve_proposal,
        reject_proposal,
        apply_proposal,
        undo_proposal,
        stop_repairs,
        resume_repairs,
        approve_access,
        reject_access,
        revoke_access,
    ],
}

#: Tools that change the warehouse or what runs against it (destructive, for clients' hints).
#: ``accept_level`` moves a baseline: what was an anomaly becomes the normal.
#: ``approve_access`` and ``revoke_access`` change who may read the warehouse.
DESTRUCTIVE = {"apply_proposal", "undo_proposal", "accept_level", "approve_access", "revoke_access"}
#: Tools that write Splice's own state.
WRITES_STATE = {
    "propose_repair",
    "approve_proposal",
    "reject_proposal",
    "stop_repairs",
    "resume_repairs",
    "request_access",
    "reject_access",
}
#: Reads answered from Splice's state alone (see tools_read.FROM_STATE).
FROM_STATE = {
    "list_proposals",
    "get_proposal",
    "get_receipt",
    "list_access_grants",
    "get_access_grant",
    "get_migrations",
}
