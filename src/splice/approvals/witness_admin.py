"""What only an owner does to the audit log's witness, each recorded in the log itself:

- ``accept-divergence``: the log no longer extends what the witness recorded (a state restored
  from an older backup, say) and an owner accepts the log as it is now: an entry records who,
  why, the head the witness had and what broke; the witness moves to the new head and keeps
  the same record (``divergences``); every anchor gets the new head marked as a divergence;
- ``rewitness``: the witness file is gone and an owner re-creates it from the state (recorded);
- ``anchor``: send the witnessed head again to anchors that did not take it.

None of these repairs a chain that is broken *inside* (an entry that no longer hashes to what
it records): that state is restored from a backup.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.approvals import auditlog
from splice.approvals.access import require
from splice.approvals.rules import is_owner
from splice.errors import ApprovalError, StateError
from splice.state import witness
from splice.state.chain import divergence
from splice.support.principals import Principal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def _require_owner(ws: Workspace, principal: Principal, action: str) -> None:
    """A person with the approve scope, and an owner of a domain when domains are declared.
    (Not sent to the server under ``[policy] decisions = "server"``: a broken log must be
    recoverable where the workspace is; the record is in the log, the witness and the anchors.)"""
    require(principal, action, None)  # a person, with the approve scope
    domains = ws.config.domains
    if domains and not any(is_owner(principal.name, d) for d in domains):
        owners = sorted({o for d in domains for o in d.owners})
        raise ApprovalError(
            f"{principal.name} may not {action}: only an owner of a domain may "
            f"({', '.join(owners)}).",
            fix=f"one of them runs splice audit-log {action} --as NAME --reason ...",
        )


def _guard(ws: Workspace) -> Any:
    from splice.state.witnessed import guard_of

    g = guard_of(ws.state)
    if g is None:
        raise StateError("this state is not opened under a witness.")
    return g


def _whole_chain(ws: Workspace) -> None:
    report = auditlog.verify(ws.state)
    if not report.intact:
        raise StateError(
            f"the audit log is broken inside (entry {report.seq}: {report.detail}); no owner "
            "can accept a chain that does not hold together.",
            fix="restore the state from a backup",
        )


def accept_divergence(ws: Workspace, *, principal: Principal, reason: str) -> dict[str, Any]:
    """Accept the log as it is although it no longer extends the witness (see module)."""
    if not reason.strip():
        raise ApprovalError("accepting a divergence needs a reason.", fix="pass --reason TEXT")
    _require_owner(ws, principal, "accept-divergence")
    w = witness.read(ws.witness_path)
    if w is None:
        raise StateError(
            f"there is no witness at {ws.witness_path} to diverge from.",
            fix="splice audit-log rewitness --as OWNER --reason ... re-creates it",
        )
    _whole_chain(ws)
    guard = _guard(ws)
    found = divergence(ws.state.conn, w.audit_seq, w.audit_hash)
    head = ws.state.audit_head() or (0, None)
    if found is None and w.audit_seq > head[0]:
        found = f"entries {head[0] + 1}..{w.audit_seq} are gone"
    if found is None:
        raise StateError(
            "the audit log extends what the witness recorded: there is no divergence to accept.",
            fix="splice audit-log verify",
        )
    record = {"kind": "accept-divergence", "at": time.time(), "by": principal.record(),
              "reason": reason.strip(), "from_seq": w.audit_seq, "from_hash": w.audit_hash,
              "found": found}  # fmt: skip
    with guard.overriding(record), ws.state.transaction() as conn:
        entry = auditlog.append(conn, kind="accept-divergence", principal=principal,
                                proposal_id=None,
                                payload={"reason": reason.strip(), "found": found,
                                         "witnessed": {"seq": w.audit_seq, "hash": w.audit_hash}})  # fmt: skip
    return {"seq": entry.seq, "hash": entry.hash, "found": found,
            "from": {"seq": w.audit_seq, "hash": w.audit_hash}}  # fmt: skip


def rewitness(ws: Workspace, *, principal: Principal, reason: str) -> dict[str, Any]:
    """Re-create a lost witness from the state's log (recorded)."""
    if not reason.strip():
        raise ApprovalError("re-creating the witness needs a reason.", fix="pass --reason TEXT")
    _require_owner(ws, principal, "rewitness")
    if witness.read(ws.witness_path) is not None:
        raise StateError(
            f"the witness {ws.witness_path} is there; it is not re-created over itself.",
            fix="splice audit-log verify; a log that diverged from it is accept-divergence's",
        )
    _whole_chain(ws)
    guard = _guard(ws)
    record = {"kind": "rewitness", "at": time.time(), "by": principal.record(),
              "reason": reason.strip()}  # fmt: skip
    with guard.overriding(record), ws.state.transaction() as conn:
        entry = auditlog.append(conn, kind="rewitness", principal=principal, proposal_id=None,
                                payload={"reason": reason.strip(),
                                         "witness": str(ws.witness_path)})  # fmt: skip
    return {"seq": entry.seq, "hash": entry.hash, "witness": str(ws.witness_path)}


def reanchor(ws: Workspace) -> dict[str, Any]:
    """Send the witnessed head again to every anchor (after one did not answer)."""
    guard = _guard(ws)
    w = witness.read(ws.witness_path)
    head = ws.state.audit_head()
    if w is None or head is None:
        raise StateError("there is no witnessed head to send.", fix="splice audit-log verify")
    reason = guard.check(ws.state, w, head)
    if reason:
        from splice.state.witnessed import FIX_DIVERGED, diverged_message

        raise StateError(diverged_message(ws.witness_path, w, reason), fix=FIX_DIVERGED)
    guard.send_to_anchors(ws.state.state_id(), (w.audit_seq, str(w.audit_hash)), divergence=False)
    return {"seq": w.audit_seq, "hash": w.audit_hash, "anchors": [a.name for a in guard.anchors]}


def receipt_standing(ws: Workspace, proposal_id: str) -> dict[str, Any] | None:
    """Whether the head the proposal's recorded receipt names is still in the verified chain
    (None when no receipt was recorded)."""
    recorded = [e for e in auditlog.entries(ws.state, proposal_id) if e.kind == "receipt"]
    if not recorded:
        return None
    last = recorded[-1]
    head = last.as_dict()["payload"].get("audit_head")
    report = verify_workspace(ws)
    in_chain = auditlog.head_in_chain(ws.state, head)
    return {"entry": last.seq, "head": head, "in_chain": in_chain,
            "chain_intact": report.intact, "verified": in_chain and report.intact,
            "detail": report.detail}  # fmt: skip


def verify_workspace(ws: Workspace) -> auditlog.AuditReport:
    """The workspace's log checked end to end: chain, witness, signatures, receipts, anchors."""
    from splice.state.anchors import build

    policy = ws.config.policy
    keys = list(policy.server_keys) if policy.decisions == "server" else None
    if policy.decisions == "server" and not keys:
        raise StateError(
            '[policy] decisions = "server" but [policy] server_keys lists no key, so no decision '
            "can be checked.",
            fix="add the server's key (splice audit-log server-key prints it) to [policy] server_keys",
        )
    return auditlog.verify(
        ws.state,
        witness.read(ws.witness_path),
        witness_path=ws.witness_path,
        anchors=build(ws.config.audit.anchors, ws.root),
        server_keys=keys,
    )
