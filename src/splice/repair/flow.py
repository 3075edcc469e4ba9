"""Propose and apply: an incident becomes one scoped proposal; an approved proposal runs.

:func:`propose` drafts the narrowest repair (:mod:`splice.repair.draft`), stores it as a draft,
copies aside every row the repair will rewrite (:mod:`splice.repair.undo`), checks that copy
restores, and only then asks for approval (status ``pending``).

:func:`apply` runs an approved proposal (or, at L3/L4, one Splice may approve itself) as one
journaled run through the runner (:mod:`splice.repair.apply_plan`), then verifies it
(:mod:`splice.repair.verify`): the incident is resolved only when its metrics are back within
their baseline and nothing outside the scope moved.  The receipt goes into the audit log.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from splice.approvals import auditlog
from splice.errors import ApprovalError, RepairError
from splice.repair import store
from splice.repair.model import Proposal, Step
from splice.support.numbers import count
from splice.support.principals import SYSTEM, Principal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

Progress = Callable[[str], None]
#: Proposal statuses in which an incident already has its repair under way.
ACTIVE = ("draft", "pending", "approved", "applying")


@dataclass
class Applied:
    proposal: Proposal
    run: Any  # RunReport
    verification: Any  # Verification | None
    receipt: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "proposal": self.proposal.as_dict(),
            "run": self.run.to_dict() if self.run is not None else None,
            "verification": self.verification.as_dict() if self.verification else None,
            "receipt": self.receipt,
        }


def _domain(ws: Workspace, node_id: str) -> Any:
    from splice.approvals.domains import domain_for

    return domain_for(ws.graph(), ws.config, node_id)


def _touched(ws: Workspace, draft: Any) -> tuple[list[Any], list[str]]:
    """Every domain whose relations the draft's steps rewrite or reload (the ingestion job
    reloaded, every SQLMesh model restated, every dbt model rebuilt), the origin's first; and
    the nodes it rewrites that no domain covers."""
    from splice.approvals.domains import domains_touched

    nodes = [n for s in draft.steps for n in s["nodes"]]
    return domains_touched(ws.graph(), ws.config, nodes, first=draft.origin)


def propose(
    ws: Workspace,
    incident_id: str,
    *,
    principal: Principal,
    execution_time: datetime | None = None,
    now: float | None = None,
    progress: Progress | None = None,
) -> Proposal:
    """Draft, store, capture the undo, verify it restores, and request approval.  The
    ``principal`` (a person or an agent with the ``propose`` scope) is its requester."""
    from splice.approvals.access import require
    from splice.config.durations import parse_duration
    from splice.repair import undo
    from splice.repair.draft import draft_repair
    from splice.repair.recovery import recover_interrupted_applies
    from splice.watch.incidents import get_incident

    require(principal, "propose", ws.config.policy)
    say = progress or (lambda _m: None)
    for note in recover_interrupted_applies(ws):
        say(note)
    state = ws.state
    inc = get_incident(state.conn, incident_id)
    for p in store.list_proposals(state, target=ws.target, statuses=set(ACTIVE)):
        if p.incident_id == inc.incident_id:
            raise RepairError(
                f"incident {inc.incident_id} already has proposal {p.proposal_id} ({p.status}).",
                fix=f"splice proposals shows it; splice reject {p.proposal_id} "
                "--reason ... to propose again",
            )
    if inc.status == "open":  # the scope as the data is now, not as it was first seen
        from splice.errors import WarehouseError
        from splice.watch.rederive import rederive

        try:
            if rederive(ws, ws.graph(), inc) is not None:
                say(f"Re-derived {inc.incident_id}'s scope from the data as it is now")
        except WarehouseError as e:  # the stored scope stands; the undo capture says the rest
            say(f"{inc.incident_id}'s scope could not be derived again ({e.message}): "
                "drafting from the scope last derived")  # fmt: skip
    say(f"Drafting the narrowest repair of {inc.incident_id}")
    draft = draft_repair(ws, inc, execution_time=execution_time)
    dom = _domain(ws, draft.origin)
    if dom is None:
        raise RepairError(
            f"no [[domains]] entry covers {draft.origin}, so nobody could approve a repair of it.",
            fix=f"add a [[domains]] whose nodes select {draft.origin}, with named owners",
        )
    touched, unowned = _touched(ws, draft)
    now = time.time() if now is None else now
    expiry = parse_duration(ws.config.policy.approval_expiry)
    proposal = Proposal(
        proposal_id=store.new_proposal_id(state),
        incident_id=inc.incident_id,
        target=ws.target,
        domain=dom.name,
        domains=[d.name for d in touched],
        unowned=unowned,
        change_class=draft.change_class,  # type: ignore[arg-type]
        title=draft.title,
        cause=draft.cause,
        scope_start=draft.scope_start,
        scope_end=draft.scope_end,
        steps=[
            Step(
                s["kind"],
                s["project"],
                list(s["nodes"]),
                s["start"],
                s["end"],
                list(s["command"]),
                dict(s["detail"]),
            )
            for s in draft.steps
        ],  # fmt: skip
        commands=draft.commands,
        cost={
            **draft.cost,
            "environments": draft.environments,
            "audit": (
                {
                    "name": draft.audit.name,
                    "project": draft.audit.project,
                    "path": draft.audit.audit_path,
                    "model": draft.audit.model_path,
                    "why": draft.audit.why,
                }
                if draft.audit
                else None
            ),
        },  # fmt: skip
        audit_diff=draft.audit.diff if draft.audit else None,
        scope=draft.scope,
        created_by=principal.name,
        created_at=now,
        expires_at=now + expiry,
    )
    store.save(state, proposal, principal=principal, now=now)
    say(
        f"Copying aside the {count(draft.cost.get('rows_scoped', 0))} rows the repair will rewrite (undo)"
    )
    targets = [(t.node_id, t.relation, t.time_column, t.start, t.end) for t in draft.touches]
    t0 = time.perf_counter()
    entries = undo.capture(ws, proposal.proposal_id, targets)
    t1 = time.perf_counter()
    undo.verify_restorable(ws, entries)
    t2 = time.perf_counter()
    return request_approval(ws, proposal.proposal_id, entries, principal=principal, now=now,
                            timings={"undo_capture_s": round(t1 - t0, 3),
                                     "undo_restore_test_s": round(t2 - t1, 3)})  # fmt: skip


def request_approval(
    ws: Workspace,
    proposal_id: str,
    entries: list[Any],
    *,
    principal: Principal,
    now: float | None = None,
    timings: dict[str, float] | None = None,
) -> Proposal:
    """A proposal whose undo was captured and tested asks for approval: it becomes pending, and
    the audit log records each undo entry (relation, rows, checksum), which every later use of
    the undo is checked against (:func:`splice.repair.undo.check_as_requested`)."""
    at = time.time() if now is None else now

    def with_undo(p: Proposal) -> None:
        p.undo = entries
        p.requested_at = at
        if timings:  # what the safety steps cost (the undo capture and its restore test)
            p.cost = {**p.cost, **timings}

    return store.transition(
        ws.state, proposal_id, "pending", principal=principal, now=at, update=with_undo,
        comment="undo captured and verified restorable; approval requested",
        payload={"undo": [{"relation": e.relation, "rows": e.rows, "checksum": e.checksum}
                          for e in entries]},
    )  # fmt: skip


def apply(
    ws: Workspace,
    proposal_id: str,
    *,
    principal: Principal,
    execution_time: datetime | str | None = None,
    progress: Progress | None = None,
    run_progress: Any = None,
    now: float | None = None,
) -> Applied:
    """Run an approved proposal as one journaled run, then verify it and write the receipt.

    A person with the ``approve`` scope applies; Splice itself (:data:`~splice.support.principals.SYSTEM`)
    applies only a pending proposal that the autonomy rules let it approve itself."""
    from splice.approvals.access import require
    from splice.repair import undo
    from splice.repair.apply_plan import repair_plan
    from splice.repair.approvals import check_may_apply, refresh
    from splice.repair.recovery import recover_in_session, recover_interrupted_applies
    from splice.repair.verify import verify
    from splice.watch.incidents import get_incident

    require(
        principal, "apply", ws.config.policy, where=ws.config.serve.resource_url
    )  # who: before anything is read or recovered
    say = progress or (lambda _m: None)
    state = ws.state
    for note in recover_interrupted_applies(ws):
        say(note)
    p = refresh(ws, store.load(state, proposal_id), now=now)
    if p.status in ("applied", "applying"):
        raise RepairError(f"proposal {p.proposal_id} is already {p.status}; it runs once.",
                          fix=f"splice receipt {p.proposal_id} shows what it did")  # fmt: skip
    if principal.auth == "system" and p.status != "pending":
        raise ApprovalError(
            f"proposal {p.proposal_id} is {p.status}; Splice applies by itself only a pending "
            "proposal it may approve itself.",
            fix=f"an owner of {p.domain} runs splice apply {p.proposal_id}",
        )
    if p.status != "approved":  # Splice's own principal (the operator's) approves, or SYSTEM
        p = _approve_autonomously(ws, p, now=now,
                                  approver=principal if principal.auth == "system" else SYSTEM)  # fmt: skip
    check_may_apply(ws, principal)
    _check_orchestrators(ws, p)  # unreachable or unknown job: refused before anything changes
    say("Checking the warehouse still holds what the undo recorded")
    undo.check_as_requested(ws, p)
    undo.check_unchanged(ws, p.undo)
    from splice.repair.fault_test import found
    from splice.run.journal import this_host

    # the origin's values as found: the fault's own test judges the repair against them
    cases = [c.as_dict() for c in found(ws, p.incident_id)]
    p = store.transition(state, p.proposal_id, "applying", principal=principal, now=now,
                         payload={"pid": os.getpid(), "host": this_host(),
                                  "fault_cases": cases})  # fmt: skip
    plan = repair_plan(ws, p)
    say(f"Running the repair: {', '.join(s.kind for s in p.steps)}")
    from splice.run.runner import run_plan

    report = run_plan(ws, plan, progress=run_progress, execution_time=execution_time,
                      command=f"splice apply {p.proposal_id}", recover=recover_in_session)  # fmt: skip
    done = "applied" if report.ok else "failed"
    p = store.transition(
        state, p.proposal_id, done, principal=principal,
        comment=f"run {report.run_id}: {report.status}",
        payload={"run_id": report.run_id, "status": report.status, "counts": report.counts()},
    )  # fmt: skip
    from splice.support.faults import pause

    pause(ws.splice_dir, "verify")
    verification = None
    if not report.ok and p.undo:
        say("The run failed: putting back what the undo recorded")
        _restore_after_failure(ws, p, report.run_id)
        p = store.load(state, p.proposal_id)
    if report.ok:
        say("Verifying: the incident's metrics measured afresh")
        verification = verify(ws, get_incident(state.conn, p.incident_id),
                              proposal_id=p.proposal_id)  # fmt: skip
        auditlog.record(state, kind="verify", principal=principal, proposal_id=p.proposal_id,
                        payload=verification.as_dict())  # fmt: skip
    result = Applied(p, report, verification)
    result.receipt = write_receipt(ws, p.proposal_id, principal=principal)
    return result


def _check_orchestrators(ws: Workspace, p: Proposal) -> None:
    """Every orchestrator a reload step queues in answers and still knows its job."""
    from splice.orchestrators import for_step

    for step in p.steps:
        spec = step.detail.get("orchestrator")
        if step.kind == "reload" and spec:
            for_step(ws.config.ingestion, ws.root, step.nodes[0], spec).check()


def _restore_after_failure(ws: Workspace, p: Proposal, run_id: str) -> None:
    """A failed repair never leaves half its work behind: the undo is restored at once."""
    from splice.repair import undo

    after = undo.restore(ws, p.undo)
    store.transition(
        ws.state, p.proposal_id, "undone", principal=SYSTEM,
        comment=f"run {run_id} failed; the warehouse was restored from the undo (checksums equal)",
        payload={"run_id": run_id, "restored": [{"relation": e.relation, "checksum": c}
                                                for e, c in zip(p.undo, after, strict=True)]},
    )  # fmt: skip


def _approve_autonomously(
    ws: Workspace, p: Proposal, *, now: float | None, approver: Principal = SYSTEM
) -> Proposal:
    """At L3/L4, a proven change class may be approved by Splice itself, only when every
    domain still waiting for an approval allows it (each at L3/L4 with its own proven
    record); otherwise refuse, naming the domain that does not."""
    from splice.approvals.autonomy import active_stop, autonomy_decision
    from splice.repair.approvals import declared_domains, waiting_for

    doms = declared_domains(ws, p) if p.status == "pending" else []
    if not doms:
        raise ApprovalError(
            f"proposal {p.proposal_id} is {p.status}; only an approved proposal is applied.",
            fix=f"a named owner runs splice approve {p.proposal_id}",
        )
    waiting = set(waiting_for(p, store.decisions(ws.state, p.proposal_id)))
    stop = active_stop(ws.state)
    whys = []
    for dom in [d for d in doms if d.name in waiting]:
        ok, why = autonomy_decision(
            dom, p.change_class, store.clean_record(ws.state, dom.name, p.change_class),
            policy=ws.config.policy, stop=stop,
        )  # fmt: skip
        if not ok:
            owners = ", ".join(dom.owners)
            raise ApprovalError(
                f"proposal {p.proposal_id} is not approved, and Splice may not approve it "
                f"itself: {why}.",
                fix=f"an owner of {dom.name} ({owners}) runs splice approve {p.proposal_id}",
            )
        whys.append(why if len(waiting) == 1 else f"{dom.name}: {why}")
    mine = [d.name for d in doms if d.name in waiting]
    return store.approve(
        ws.state, p.proposal_id, principal=approver, now=now,
        comment=f"approved autonomously: {'; '.join(whys)}",
        decide=lambda cur, ds: (mine, [d for d in waiting_for(cur, ds) if d not in mine]),
    )  # fmt: skip


def receipt(ws: Workspace, proposal_id: str) -> dict[str, Any]:
    """The receipt of a proposal as data (see :mod:`splice.repair.receipt`)."""
    from splice.repair.receipt import build_receipt
    from splice.run.journal import Journal
    from splice.watch.incidents import get_incident

    state = ws.state
    p = store.load(state, proposal_id)
    decisions = [d.as_dict() for d in store.decisions(state, p.proposal_id)]
    run_ids: list[str] = []
    verification = None
    for e in auditlog.entries(state, p.proposal_id):
        payload = e.as_dict().get("payload") or {}
        rid = payload.get("run_id")
        if rid and rid not in run_ids:
            run_ids.append(rid)
        if e.kind == "verify":
            verification = payload  # the latest one
    runs = []
    with Journal.for_workspace(ws) as j:
        for rid in run_ids:
            r = j.run(rid)
            rec: dict[str, Any] = {"run_id": rid, "status": r.status, "duration": r.duration}
            external = [x for e in j.events(rid) if e.kind == "node_finished"
                        for x in (e.data or {}).get("external") or []]  # fmt: skip
            if external:  # the orchestrator's runs (a reload queued through Dagster)
                rec["orchestrator_runs"] = [
                    {k: x.get(k) for k in ("system", "job", "run_id", "status", "url",
                                           "partition", "started", "ended")}
                    for x in external
                ]  # fmt: skip
            runs.append(rec)
    inc = get_incident(state.conn, p.incident_id)
    return build_receipt(p.as_dict(), inc.as_dict(with_diagnosis=False), decisions, runs,
                         verification, audit_head=state.audit_head())  # fmt: skip


def write_receipt(ws: Workspace, proposal_id: str, *, principal: Principal) -> dict[str, Any]:
    """Build the receipt and append it to the audit log (hash-chained)."""
    r = receipt(ws, proposal_id)
    auditlog.record(ws.state, kind="receipt", principal=principal, proposal_id=r["proposal"],
                    payload=r)  # fmt: skip
    return r
