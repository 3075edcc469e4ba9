"""``splice verify PR-N``: a repair's verification run again, with the same rules.

A kill during verification leaves a proposal ``applied`` with its incident open and no verdict;
an owner may also ask again later (after a follow-up repair of what the first verification found,
or to see that the repaired intervals still hold).  The verification is the one
:func:`splice.repair.flow.apply` runs (:mod:`splice.repair.verify`), told that the stored
points may already be the repaired ones: "a value in the scope changed" is not asked of them,
and the fault's own test judges against the values recorded when the repair began.  The result
goes into the audit log and a new receipt is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.errors import RepairError
from splice.support.principals import Principal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def verify_again(ws: Workspace, proposal_id: str, *, principal: Principal,
                 progress: Any = None) -> Any:  # fmt: skip
    """Verify an applied proposal again; returns :class:`splice.repair.flow.Applied` (no run)."""
    from splice.approvals import auditlog
    from splice.approvals.access import require
    from splice.repair import store
    from splice.repair.flow import Applied, write_receipt
    from splice.repair.recovery import recover_interrupted_applies
    from splice.repair.verify import verify
    from splice.watch.incidents import get_incident

    require(principal, "apply", ws.config.policy, where=ws.config.serve.resource_url)
    say = progress or (lambda _m: None)
    for note in recover_interrupted_applies(ws):
        say(note)
    p = store.load(ws.state, proposal_id)
    if p.status != "applied":
        fix = {
            "approved": f"splice apply {p.proposal_id} runs it (and verifies it)",
            "pending": f"an owner approves it (splice approve {p.proposal_id}), then splice apply",
            "undone": "its undo was restored: propose again (splice propose INCIDENT)",
        }.get(p.status, f"splice audit-log show lists what happened to {p.proposal_id}")
        raise RepairError(
            f"proposal {p.proposal_id} is {p.status}: only an applied repair is verified.",
            fix=fix,
        )
    inc = get_incident(ws.state.conn, p.incident_id)
    say(f"Verifying {p.proposal_id} again: the incident's metrics measured afresh, its nodes "
        "recomputed from the repaired inputs, the fault's own test on every repaired interval")  # fmt: skip
    v = verify(ws, inc, proposal_id=p.proposal_id, again=True)
    auditlog.record(ws.state, kind="verify", principal=principal, proposal_id=p.proposal_id,
                    payload={**v.as_dict(), "again": True})  # fmt: skip
    result = Applied(p, None, v)
    result.receipt = write_receipt(ws, p.proposal_id, principal=principal)
    return result
