"""The receipt of an access grant: who asked, who approved, what was granted, until when, and
how it ended, with the audit log's head at its time. Written to the audit log when a grant ends
(``access-receipt``) and shown by ``splice access show``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.grants import store
from splice.grants.model import Grant
from splice.support.principals import SYSTEM

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def build(ws: Workspace, g: Grant) -> dict[str, Any]:
    """The receipt as data (stable keys)."""
    from splice.state.store import read_audit_head

    decisions = store.decisions(ws.state, g.grant_id)
    approvals = [d for d in decisions if d["decision"] == "approve"]
    top = read_audit_head(ws.state.conn)
    return {
        "grant": g.grant_id,
        "target": g.target,
        "domain": g.domain,
        "status": g.status,
        "grantee": g.grantee,
        "relations": g.relations,
        "nodes": g.nodes,
        "why": g.why,
        "hours": g.hours,
        "requested_by": g.requester or {"name": g.created_by},
        "approved_by": [
            {
                "by": a["actor"],
                "kind": a["principal_kind"],
                "auth": a["principal_auth"],
                "credential": a["principal_credential"],
                "at": a["at"],
                "comment": a["comment"],
            }
            for a in approvals
        ],  # fmt: skip
        "role": g.role,
        "granted": g.statements,
        "granted_at": g.granted_at,
        "until": g.until,
        "ended_at": g.ended_at,
        "ended": g.end_reason,
        "revoked": g.revoke_statements if g.status in ("ended", "failed") else [],
        "decisions": decisions,
        "audit_head": {"seq": top[0], "hash": top[1]} if top else None,
    }


def record_receipt(ws: Workspace, g: Grant) -> dict[str, Any]:
    """Write the receipt of an ended grant to the audit log; returns it."""
    from splice.approvals.auditlog import record

    data = build(ws, g)
    record(ws.state, kind="access-receipt", principal=SYSTEM, proposal_id=g.grant_id,
           payload={"receipt": data})  # fmt: skip
    return data
