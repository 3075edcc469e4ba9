"""Closing an incident Splice repaired by itself: at L3 a person closes it, at L4 Splice does.

A repair a person approved closes its incident when its verification passes (the person was
in the loop). A repair Splice approved and applied by itself at L3 (:mod:`splice.operator.
ladder`) leaves its incident **repaired**: verified, no longer open to new anomalies or new
proposals, and waiting for a named owner of the domain where it starts to read the receipt and
close it (``splice incident close INC-N``), a decision like every other: authenticated,
refused during an org-wide stop, and an entry in the audit log. At L4 Splice closes it itself.

An undo of the repair opens the incident again, as it opens a resolved one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice.errors import ApprovalError
from splice.state.sql import statement

if TYPE_CHECKING:
    from splice.support.principals import Principal
    from splice.workspace.core import Workspace

#: The status of an incident Splice repaired by itself at L3, until a person closes it.
REPAIRED = "repaired"
#: The decision (and its audit-log kind).
KIND = "close"

_AWAIT = statement(
    "UPDATE incidents SET status = 'repaired', resolution = ?, updated_at = ? "
    "WHERE incident_id = ? AND status = 'resolved'"
)


@dataclass
class Closed:
    incident_id: str
    status: str
    resolution: str
    closed_by: str

    def as_dict(self) -> dict[str, Any]:
        return {"incident_id": self.incident_id, "status": self.status,
                "resolution": self.resolution, "closed_by": self.closed_by}  # fmt: skip


def await_close(ws: Workspace, incident_id: str, proposal_id: str, domain: str | None) -> bool:
    """The incident a verified L3 repair resolved becomes ``repaired``, waiting for an owner to
    close it; returns whether it did (False: the verification left it open)."""
    why = (f"repaired by {proposal_id} and verified, by Splice at L3; an owner of domain "
           f"{domain or '?'} closes it: splice incident close {incident_id}")  # fmt: skip
    with ws.state.transaction() as conn:
        cur = conn.execute(_AWAIT, (why, time.time(), incident_id))
        return bool(getattr(cur, "rowcount", 0))


def close_options(ws: Workspace, incident_id: str, principal: Principal) -> str | None:
    """None when ``principal`` may close the incident now, else why not, in words (the rules
    :func:`close_incident` enforces, checked without writing). For showing the button only."""
    from splice.approvals.access import require
    from splice.approvals.rules import refuse_during_stop
    from splice.errors import SpliceError
    from splice.repair.accept import check_may_accept
    from splice.watch.incidents import get_incident

    try:
        name = require(principal, KIND, ws.config.policy, where=ws.config.serve.resource_url).name
        inc = get_incident(ws.state.conn, incident_id)
        if inc.status != REPAIRED:
            return f"{inc.incident_id} is {inc.status}"
        check_may_accept(ws, inc, name, what="close", command="incident close")
        refuse_during_stop(ws, "closed")
        return None
    except SpliceError as e:
        return e.message


def close_incident(
    ws: Workspace, incident_id: str, *, principal: Principal, note: str | None = None,
    now: float | None = None,
) -> Closed:  # fmt: skip
    """``splice incident close``: a named owner of the origin's domain closes an incident Splice
    repaired by itself (status ``repaired``), in one transaction, with its audit-log entry."""
    from splice.approvals import auditlog
    from splice.approvals.access import require
    from splice.approvals.rules import refuse_during_stop
    from splice.repair.accept import check_may_accept, how_authenticated, incident_of_target
    from splice.repair.store import list_proposals
    from splice.watch.incidents import get_incident, resolve_incident

    name = require(principal, KIND, ws.config.policy, where=ws.config.serve.resource_url).name
    note = (note or "").strip() or None
    inc = incident_of_target(ws, incident_id)
    dom = check_may_accept(ws, inc, name, what="close", command="incident close")
    refuse_during_stop(ws, "closed")
    at = time.time() if now is None else float(now)
    with ws.state.transaction() as conn:
        inc = get_incident(conn, inc.incident_id)
        if inc.status != REPAIRED:
            raise ApprovalError(
                f"incident {inc.incident_id} is {inc.status}"
                + (f" ({inc.resolution})" if inc.resolution else "")
                + "; a person closes only an incident Splice repaired by itself.",
                fix=(f"splice incident show {inc.incident_id}; an open one is repaired (splice "
                     "propose) or its new level accepted (splice incident accept-level)"),
            )  # fmt: skip
        repairs = [q.proposal_id for q in list_proposals(ws.state, target=ws.target,
                                                          statuses={"applied"})
                   if q.incident_id == inc.incident_id]  # fmt: skip
        resolution = (f"closed by {how_authenticated(principal)} after Splice's verified repair"
                      + (f" {repairs[0]}" if repairs else "") + (f": {note}" if note else ""))  # fmt: skip
        resolve_incident(conn, inc.incident_id, resolution, now=at)
        auditlog.append(
            conn, kind=KIND, principal=principal, proposal_id=None, at=at,
            payload={"incident_id": inc.incident_id, "target": ws.target,
                     "origin": inc.origin_node, "domain": dom.name, "comment": note},
        )  # fmt: skip
    return Closed(inc.incident_id, "resolved", resolution, name)
