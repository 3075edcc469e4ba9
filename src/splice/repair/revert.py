"""``splice undo``: an owner of the domain puts an applied repair's rows back.

The undo itself (the rows copied aside, the checks that it is the one recorded, the restore
in one warehouse transaction) is :mod:`splice.repair.undo`; this is the decision around it:
a person owning the proposal's domain, never during an org-wide stop
(:func:`splice.repair.approvals.check_may_undo`), killed applies recovered first; then the
proposal is ``undone``, its incident reopens and its metrics are measured again
(:func:`splice.repair.remeasure.remeasure_after_undo`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.approvals import auditlog
from splice.approvals.access import require
from splice.errors import RepairError
from splice.repair import store
from splice.repair.approvals import check_may_undo
from splice.repair.recovery import recover_interrupted_applies
from splice.repair.remeasure import remeasure_after_undo
from splice.repair.undo import check_as_requested, restore
from splice.support.principals import Principal
from splice.watch.incidents import reopen_incident

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def undo(
    ws: Workspace,
    proposal_id: str,
    *,
    principal: Principal,
    now: float | None = None,
    progress: Any = None,
) -> Any:
    """``splice undo``: restore an applied (or failed) proposal's undo and record it.
    ``principal``: a :class:`~splice.support.principals.Principal`, a person owning the domain.
    ``progress(message)`` is told when the restore starts (every check passed)."""
    require(
        principal, "undo", ws.config.policy, where=ws.config.serve.resource_url
    )  # who: before anything is recovered
    recover_interrupted_applies(ws)
    p = store.load(ws.state, proposal_id)
    check_may_undo(ws, p, principal)
    if p.status not in ("applied", "failed", "interrupted"):
        raise RepairError(
            f"proposal {p.proposal_id} is {p.status}; only an applied, failed or interrupted "
            "repair is undone.",
            fix="splice proposals shows every proposal's status",
        )
    if not p.undo:
        raise RepairError(f"proposal {p.proposal_id} has no undo recorded.",
                          fix="restore by hand; splice receipt shows what it touched")  # fmt: skip
    check_as_requested(ws, p)
    if progress is not None:
        progress(f"Restoring the undo of {p.proposal_id} in one warehouse transaction")
    started = time.perf_counter()
    after = restore(ws, p.undo)
    seconds = round(time.perf_counter() - started, 3)
    p = store.transition(
        ws.state, p.proposal_id, "undone", principal=principal, now=now,
        comment=f"restored {len(p.undo)} relation(s), checksums equal",
        payload={"restored": [{"relation": e.relation, "rows": e.rows, "checksum": c}
                              for e, c in zip(p.undo, after, strict=True)],
                 "seconds": seconds},
    )  # fmt: skip
    with ws.state.transaction() as conn:  # its data is back as it was: so is the incident
        reopen_incident(conn, p.incident_id, f"reopened: {p.proposal_id} was undone")
    problem = remeasure_after_undo(ws, p.incident_id)
    if problem:  # the undo stands; say that the measurements lag behind it
        auditlog.record(ws.state, kind="status", principal=principal, proposal_id=p.proposal_id,
                        payload={"comment": f"the metrics were not measured again after the "
                                 f"undo: {problem}; the next splice watch measures them"})  # fmt: skip
    return p
