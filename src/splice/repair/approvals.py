"""A proposal's approvals: who may approve or reject it, its escalation and expiry.

The rules every request follows are :mod:`splice.approvals.rules`; what is a proposal's own:

- Only a **named owner** of a domain the proposal touches (``[[domains]].owners``) may approve,
  and **every domain it touches decides**: the proposal records each domain whose relations
  its steps rewrite or reload (the origin's first), and it is ``approved`` only once an owner
  of each has approved it.  Each approval is a decision naming the domains it is for (all the
  waiting domains its principal owns: one person who owns two approves for both); until the
  last one the proposal stays ``pending``.  Nodes it rewrites that no domain covers are listed
  in the proposal (``unowned``); nobody approves for them.
- The identity that **created or requested** a proposal never approves it: no agent promotes
  its own work, and no person approves what they asked for.
- Only a ``pending`` proposal is approved: its undo was captured and tested to restore.
- A request unanswered for ``[policy].escalate_after`` (default: the expiry divided by the
  number of owners) **escalates**: the next owner in the domain's order is asked as well;
  each domain still waiting escalates through its own owners, counted from the request.
  Past ``[policy].approval_expiry`` (default 4 hours) it **expires**; nothing is ever granted
  by waiting.  Expiry and escalation are applied whenever a proposal is read
  (:func:`refresh`), so they hold without a daemon.
- While an **org-wide stop** is active (``splice stop``) nothing is approved or applied, by
  Splice or by anyone, until a domain owner runs ``splice resume``.
- The proposer may withdraw (reject) their own proposal; otherwise only an owner of a domain
  it touches rejects (or revokes an approval not applied yet).  An undo is decided by an
  owner of the proposal's primary domain (the origin's).

Every decision takes the authenticated :class:`~splice.support.principals.Principal` behind it; the
rules of :mod:`splice.approvals.access` come first (a person decides, with the scope the decision
needs, where ``[policy]`` lets it).  Splice's own bookkeeping is recorded under
:data:`splice.support.principals.SYSTEM`.

Every decision is one state transaction with its decision row and its audit-log entry
(:mod:`splice.repair.store`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.approvals.domains import domain_named
from splice.approvals.rules import (
    as_owner,
    declared_domain,
    escalations,
    expired_comment,
    is_owner,
    may_decide,
    owners_asked,
    refuse_during_stop,
    refuse_not_owner,
    refuse_own,
)
from splice.config.durations import parse_duration
from splice.errors import ApprovalError
from splice.repair import store
from splice.repair.model import EXPIRING, OPEN, Proposal
from splice.support.names import name_key
from splice.support.principals import SYSTEM, Principal, same_identity

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def _recover(ws: Workspace) -> None:
    """A proposal stuck in applying by a dead process is recovered first."""
    from splice.repair.recovery import recover_interrupted_applies

    recover_interrupted_applies(ws)


def _domain(ws: Workspace, p: Proposal) -> Any:
    return declared_domain(ws.config, p.domain, subject=f"proposal {p.proposal_id}",
                           fix=f"declare [[domains]] {p.domain!r} with its owners again, or "
                           "propose anew")  # fmt: skip


def declared_domains(ws: Workspace, p: Proposal) -> list[Any]:
    """Every domain ``p`` touches, as splice.toml declares it now (the primary first)."""
    out = [_domain(ws, p)]
    for name in p.touched_domains[1:]:
        dom = domain_named(ws.config, name)
        if dom is None:
            raise ApprovalError(
                f"proposal {p.proposal_id} rewrites relations of domain {name!r}, which "
                "splice.toml no longer declares, so nobody can approve it for that domain.",
                fix=f"declare [[domains]] {name!r} with its owners again, or propose anew",
            )
        out.append(dom)
    return out


def approved_for(p: Proposal, decisions: list[Any]) -> dict[str, list[str]]:
    """Who approved ``p`` for which of its domains so far: ``{domain: [names]}`` (an approval
    recorded before proposals had several domains is for the proposal's domain)."""
    out: dict[str, list[str]] = {}
    for d in decisions:
        if d.decision == "approve":
            for name in d.domains or [p.domain]:
                out.setdefault(name, []).append(d.actor)
    return out


def waiting_for(p: Proposal, decisions: list[Any]) -> list[str]:
    """The domains of ``p`` no owner has approved yet (none once it is approved or closed)."""
    if p.status not in OPEN:
        return []
    done = approved_for(p, decisions)
    return [d for d in p.touched_domains if d not in done]


def approval_status(ws: Workspace, p: Proposal) -> dict[str, Any]:
    """Which domains decide ``p``, who approved for each, which still have to (with their
    owners and the ones asked so far), and the nodes it rewrites that no domain covers."""
    ds = store.decisions(ws.state, p.proposal_id)
    done = approved_for(p, ds)
    waiting = waiting_for(p, ds)
    per = _asked_by_domain(ws, p, ds)
    return {
        "domains": p.touched_domains,
        "approved_for": done,
        "waiting_for": [
            {"domain": d, "owners": list(dom.owners) if dom else [], "asked": per.get(d, [])}
            for d in waiting
            for dom in [domain_named(ws.config, d)]
        ],  # fmt: skip
        "unowned": list(p.unowned),
    }


def _asked_by_domain(ws: Workspace, p: Proposal, decisions: list[Any]) -> dict[str, list[str]]:
    """Per domain ``p`` touches, the owners asked so far: the first, plus one per escalation of
    that domain (an escalation recorded without a domain is of the proposal's domain)."""
    out: dict[str, list[str]] = {}
    for name in p.touched_domains:
        dom = domain_named(ws.config, name)
        if dom is None:
            continue
        n = sum(1 for d in decisions
                if d.decision == "escalate" and name in (d.domains or [p.domain]))  # fmt: skip
        out[name] = owners_asked(dom, n)
    return out


def asked(ws: Workspace, p: Proposal) -> list[str]:
    """The owners asked so far, over every domain the proposal touches: the first owner of
    each, plus one per escalation."""
    _domain(ws, p)  # the primary domain must still be declared
    out: list[str] = []
    for names in _asked_by_domain(ws, p, store.decisions(ws.state, p.proposal_id)).values():
        out += [n for n in names if n not in out]
    return out


def refresh(ws: Workspace, p: Proposal, *, now: float | None = None) -> Proposal:
    """Apply expiry and escalation to an open (or approved, not applied) proposal as of
    ``now``; returns it as stored."""
    if p.status not in EXPIRING:
        return p
    now = time.time() if now is None else now
    policy = ws.config.policy
    if now >= p.expires_at:
        if p.status == "approved":
            comment = (f"approved but not applied within {policy.approval_expiry}; the approval "
                       "expired (propose again)")  # fmt: skip
        else:
            comment = expired_comment(policy, now - (p.requested_at or p.created_at))
        return store.transition(
            ws.state, p.proposal_id, "expired", principal=SYSTEM, now=now, comment=comment
        )
    if p.status != "pending" or p.requested_at is None:
        return p
    ds = store.decisions(ws.state, p.proposal_id)
    per = _asked_by_domain(ws, p, ds)
    several = len(p.touched_domains) > 1
    due_all = []
    for name in waiting_for(p, ds):
        dom = domain_named(ws.config, name)
        if dom is None:
            continue
        for at, comment, payload in escalations(policy, list(dom.owners), p.requested_at,
                                                len(per.get(name, [])), now):  # fmt: skip
            if several:
                comment = f"{comment} for domain {name}"
            due_all.append((at, comment, {**payload, "domain": name}, name))
    if due_all:
        with ws.state.transaction() as conn:
            for at, comment, payload, name in sorted(due_all, key=lambda x: x[0]):
                store.note(conn, p, "escalate", principal=SYSTEM, at=at, comment=comment,
                           payload=payload, domains=[name])  # fmt: skip
    return store.load(ws.state, p.proposal_id)


def refresh_all(ws: Workspace, *, now: float | None = None) -> None:
    """Apply expiry and escalation to every open or approved proposal of the target."""
    for p in store.list_proposals(ws.state, target=ws.target, statuses=set(EXPIRING)):
        refresh(ws, p, now=now)


def _requesters(ws: Workspace, p: Proposal) -> list[dict[str, Any]]:
    """Who created or requested ``p``, as recorded principals (a name alone, for what was
    recorded before principals: compared by name, :func:`splice.support.principals.same_identity`)."""
    out: list[dict[str, Any]] = [p.requester or {"name": p.created_by, "kind": None}]
    out += [d.principal for d in store.decisions(ws.state, p.proposal_id)
            if d.decision == "request"]  # fmt: skip
    return out


def is_requester(ws: Workspace, p: Proposal, principal: Principal) -> bool:
    """Whether ``principal`` is the one who created or requested ``p``: the same principal
    (kind, name and how authenticated), not merely the same name: an agent over stdio whose
    client calls itself "maria" is not maria the person."""
    return any(same_identity(principal, r) for r in _requesters(ws, p))


def _owners_text(doms: list[Any], but: str | None = None) -> str:
    """``finance (lee)``, or ``pricing (maria, sam); finance (lee)``, leaving out ``but``."""
    return "; ".join(
        f"{d.name} ({', '.join(o for o in d.owners if but is None or name_key(o) != name_key(but)) or 'no other owner'})"
        for d in doms
    )


def _check_approve(ws: Workspace, cur: Proposal, who: Principal, doms: list[Any]) -> list[str]:
    """Why ``who`` may not approve ``cur`` now (an ApprovalError); else the domains this
    approval is for (the waiting ones ``who`` owns)."""
    name = who.name
    refuse_during_stop(ws, "approved")
    ds = store.decisions(ws.state, cur.proposal_id)
    waiting = waiting_for(cur, ds) if cur.status == "pending" else [d.name for d in doms]
    open_doms = [d for d in doms if d.name in waiting] or doms
    if is_requester(ws, cur, who):
        dom = open_doms[0]
        others = ", ".join(o for o in dom.owners if name_key(o) != name_key(name))
        where = (f"another owner of {dom.name} ({others})" if len(open_doms) == 1
                 else f"another owner of each domain ({_owners_text(open_doms, but=name)})")  # fmt: skip
        refuse_own(name, f"created or requested {cur.proposal_id}", fix=f"{where} approves it")
    if not any(is_owner(name, d) for d in doms):
        if len(doms) == 1:
            refuse_not_owner(
                name, doms[0],
                fix=f"one of them runs splice approve {cur.proposal_id}{as_owner(ws, doms[0])} "
                "(or add the owner to [[domains]] in splice.toml)",
            )  # fmt: skip
        raise ApprovalError(
            f"{name} is not an owner of any domain {cur.proposal_id} rewrites "
            f"({', '.join(d.name for d in doms)}); its owners are: {_owners_text(doms)}.",
            fix=f"an owner of each runs splice approve {cur.proposal_id}{as_owner(ws, doms[0])} "
            "(or add the owner to [[domains]] in splice.toml)",
        )
    if cur.status == "expired":
        raise ApprovalError(
            f"proposal {cur.proposal_id} expired unanswered; it can no longer be approved.",
            fix=f"propose again: splice propose {cur.incident_id}",
        )
    if cur.status == "draft":
        raise ApprovalError(
            f"proposal {cur.proposal_id} has no tested undo yet, so it cannot be approved.",
            fix=f"propose again: splice propose {cur.incident_id}",
        )
    if cur.status != "pending":
        raise ApprovalError(
            f"proposal {cur.proposal_id} is {cur.status}; only a pending proposal is approved.",
            fix="splice proposals shows every proposal's status",
        )
    mine = [d.name for d in doms if d.name in waiting and is_owner(name, d)]
    if not mine:
        done = approved_for(cur, ds)
        had = ", ".join(f"{d} ({', '.join(done.get(d, []))})" for d in done)
        raise ApprovalError(
            f"{cur.proposal_id} is already approved for the domains {name} owns ({had}); it "
            f"waits for {_owners_text([d for d in doms if d.name in waiting])}.",
            fix=f"an owner of {', '.join(waiting)} runs splice approve {cur.proposal_id}",
        )
    return mine


def _check_reject(cur: Proposal, who: Principal, doms: list[Any]) -> None:
    """Why ``who`` may not reject ``cur`` now (an ApprovalError), or nothing: an owner of any
    domain it touches, or its proposer (while it is not approved)."""
    name = who.name
    owners = {name_key(o) for d in doms for o in d.owners}
    listed = ", ".join(f"{d.name} ({', '.join(d.owners)})" for d in doms)
    if cur.status == "approved":  # revoking an approval: owners only
        if name_key(name) not in owners:
            raise ApprovalError(
                f"{name} may not revoke the approval of {cur.proposal_id}: only an owner of "
                f"{listed} may.",
                fix=f"one of them runs splice reject {cur.proposal_id} --reason ...",
            )
        return
    proposer = cur.requester or {"name": cur.created_by, "kind": None}
    if name_key(name) not in owners and not same_identity(who, proposer):
        raise ApprovalError(
            f"{name} may not reject {cur.proposal_id}: only an owner of {listed} "
            f"or its proposer ({cur.created_by}) may.",
            fix=f"one of them runs splice reject {cur.proposal_id} --reason ...",
        )
    if cur.status not in OPEN:
        raise ApprovalError(
            f"proposal {cur.proposal_id} is {cur.status}; only a draft, pending or approved "
            "(not yet applied) proposal is rejected.",
            fix=f"splice undo {cur.proposal_id} reverts an applied repair",
        )


def approve(
    ws: Workspace,
    proposal_id: str,
    *,
    principal: Principal,
    comment: str | None = None,
    now: float | None = None,
) -> Proposal:
    """``splice approve``: a named owner, not the requester, approves a pending proposal for
    every domain it touches that they own and that still waits; the last domain's approval
    makes it ``approved``, until then it stays ``pending``."""
    may_decide(ws, principal, "approve")
    _recover(ws)
    p = refresh(ws, store.load(ws.state, proposal_id), now=now)
    doms = declared_domains(ws, p)

    def decide(cur: Proposal, ds: list[Any]) -> tuple[list[str], list[str]]:
        mine = _check_approve(ws, cur, principal, doms)
        return mine, [d for d in waiting_for(cur, ds) if d not in mine]

    at = time.time() if now is None else now
    expiry = parse_duration(ws.config.policy.approval_expiry)

    def valid_for(cur: Proposal) -> None:  # an approval is good for the expiry window
        cur.expires_at = at + expiry

    return store.approve(ws.state, p.proposal_id, principal=principal, now=at, comment=comment,
                         decide=decide, update=valid_for)  # fmt: skip


def reject(
    ws: Workspace, proposal_id: str, *, principal: Principal, reason: str, now: float | None = None
) -> Proposal:
    """``splice reject``: an owner rejects, or the proposer withdraws, an open proposal; an
    owner revokes an approval that was not applied yet."""
    may_decide(ws, principal, "reject")
    if not reason.strip():
        raise ApprovalError("a rejection needs a reason.", fix="pass --reason TEXT")
    _recover(ws)
    p = refresh(ws, store.load(ws.state, proposal_id), now=now)
    doms = declared_domains(ws, p)

    def check(cur: Proposal) -> None:
        _check_reject(cur, principal, doms)

    return store.transition(ws.state, p.proposal_id, "rejected", principal=principal, now=now,
                            comment=reason.strip(), check=check)  # fmt: skip


def check_may_undo(ws: Workspace, p: Proposal, principal: Principal) -> Principal:
    """An undo rewrites production rows: only a person, a named owner of the proposal's
    domain, and never during an org-wide stop. Returns the principal."""
    name = may_decide(ws, principal, "undo").name
    refuse_during_stop(ws, "undone")
    dom = _domain(ws, p)
    if not is_owner(name, dom):
        raise ApprovalError(
            f"{name} may not undo {p.proposal_id}: an undo rewrites production rows, so only an "
            f"owner of domain {dom.name} ({', '.join(dom.owners)}) may.",
            fix=f"one of them runs splice undo {p.proposal_id}{as_owner(ws, dom)}",
        )
    return principal


def check_may_apply(ws: Workspace, principal: Principal) -> Principal:
    """A person with the approve scope applies (or Splice, what it may approve itself); nothing
    is applied during an org-wide stop."""
    may_decide(ws, principal, "apply")
    refuse_during_stop(ws, "applied")
    return principal


def options(ws: Workspace, p: Proposal, principal: Principal) -> dict[str, str | None]:
    """What ``principal`` may do to ``p`` now: ``{action: None}`` when it may, else why not
    (the same rules :func:`approve`, :func:`reject`, apply and undo enforce, checked without
    writing anything). For showing the buttons only: every decision checks again."""
    from splice.errors import SpliceError

    out: dict[str, str | None] = {}

    def attempt(action: str, check: Any) -> None:
        try:
            name = may_decide(ws, principal, action).name
            check(name)
            out[action] = None
        except SpliceError as e:
            out[action] = e.message

    def need_domains() -> list[Any]:
        return declared_domains(ws, p)  # raises, naming a [[domains]] entry splice.toml lost

    def approve_check(name: str) -> None:
        _check_approve(ws, p, principal, need_domains())

    def reject_check(name: str) -> None:
        _check_reject(p, principal, need_domains())

    def apply_check(name: str) -> None:
        refuse_during_stop(ws, "applied")
        if p.status != "approved":
            raise ApprovalError(f"{p.proposal_id} is {p.status}; only an approved one applies.")

    def undo_check(name: str) -> None:
        if p.status != "applied":
            raise ApprovalError(f"{p.proposal_id} is {p.status}; only an applied one is undone.")
        check_may_undo(ws, p, principal)

    attempt("approve", approve_check)
    attempt("reject", reject_check)
    attempt("apply", apply_check)
    attempt("undo", undo_check)
    return out
