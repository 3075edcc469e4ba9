"""The autonomy ladder acted out: what the operator does when a watch opens or grows an incident.

Per domain of the incident's origin (``[[domains]].autonomy``; an origin in no domain is L1):

- **L0** manual: nothing but the record (the incident, and a line of activity).
- **L1** observe: the owners are told at once (``[[notify]]``: the incident with its diagnosis).
- **L2** propose: as L1, and the operator's agent principal drafts the narrowest repair itself
  (the undo captured, the restore tested); the owners are asked.
- **L3** act reversibly: as L2; a proposal of a proven reversible class
  (:data:`splice.approvals.autonomy.AUTO_CLASSES`, with ``[policy].proven_record`` clean
  applications in a row in every domain it waits for) is approved by Splice itself, applied,
  verified, and its receipt sent; anything else waits for a person. The incident it repaired
  is then ``repaired``: an owner reads the receipt and closes it (:mod:`splice.repair.close`).
- **L4** autonomous: as L3, and Splice closes the incident its verified repair repaired.

An org-wide stop halts the ladder: the owners are still told, nothing is proposed or applied.
Every step is a line of :mod:`splice.operator.store` activity naming the rule that allowed it;
every decision is also an audit-log entry by the operator's principal.

>>> rule_for("L2", "pricing")
'L2 (propose): domain pricing lets Splice draft repairs; a named owner approves'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.errors import SpliceError
from splice.operator import store
from splice.support.principals import SCOPES, Principal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

RULES = {
    "L0": "L0 (manual): domain {d} is recorded only; people propose and repair",
    "L1": "L1 (observe): domain {d}'s owners are told; Splice proposes only when asked",
    "L2": "L2 (propose): domain {d} lets Splice draft repairs; a named owner approves",
    "L3": "L3 (act reversibly): domain {d} lets Splice apply a proven reversible repair; a "
    "named owner closes the incident",
    "L4": "L4 (autonomous): domain {d} lets Splice apply a proven reversible repair and close "
    "the incident",
}


def rule_for(level: str, domain: str | None) -> str:
    return RULES[level].format(d=domain or "(none)")


def operator_principal(ws: Workspace) -> Principal:
    """The agent the operator's own steps are recorded under (``[operator] agent``)."""
    return Principal(ws.config.operator.agent, "agent", "system", frozenset(SCOPES))


@dataclass
class Actions:
    """What the ladder may call (the facade's compositions, handed down by :mod:`splice.api`)."""

    propose: Callable[..., Any]
    apply: Callable[..., Any]
    notify: Callable[[Workspace], Any]


@dataclass
class Step:
    incident_id: str
    level: str
    domain: str | None
    kind: str
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"incident": self.incident_id, "level": self.level, "domain": self.domain,
                "kind": self.kind, "summary": self.summary, **self.detail}  # fmt: skip


def _level(ws: Workspace, origin: str | None) -> tuple[str, str | None]:
    from splice.approvals.domains import domain_for

    graph = ws.graph()
    dom = domain_for(graph, ws.config, origin) if origin and origin in graph.nodes else None
    return (dom.autonomy, dom.name) if dom is not None else ("L1", None)


#: Steps that are decisions of the operator: each is also an audit-log entry (kind
#: ``operator``) by its principal, with the rule that allowed it (or why it held back).
AUDITED = frozenset({"propose", "apply", "close", "awaits-close", "held", "waits-for-person"})


def _recorder(
    ws: Workspace, who: Principal, trigger: str, now: Callable[[], float], steps: list[Step]
) -> Callable[..., None]:
    """The function that records one step: a line of activity, and for a decision
    (:data:`AUDITED`) an audit-log entry by the operator's principal naming its rule."""
    from splice.approvals import auditlog

    def step(inc: Any, level: str, dom: str | None, kind: str, summary: str, **d: Any) -> None:
        steps.append(Step(inc.incident_id, level, dom, kind, summary, d))
        at = now()
        store.log(ws.state, ws.target, kind, summary, at=at, incident=inc.incident_id,
                  level=level, domain=dom, trigger=trigger, principal=who.record(), **d)  # fmt: skip
        if kind in AUDITED:
            auditlog.record(ws.state, kind="operator", principal=who, proposal_id=d.get("proposal"),
                            payload={"step": kind, "incident": inc.incident_id, "level": level,
                                     "domain": dom, "rule": d.get("rule"), "summary": summary,
                                     "trigger": trigger})  # fmt: skip

    return step


def act(
    ws: Workspace, incidents: list[Any], actions: Actions, *, trigger: str,
    now: Callable[[], float] = time.time,
) -> list[Step]:  # fmt: skip
    """Act the ladder on the incidents a watch opened or grew; returns the steps taken."""
    from splice.approvals.autonomy import active_stop

    steps: list[Step] = []
    who = operator_principal(ws)

    step = _recorder(ws, who, trigger, now, steps)

    told = False
    for inc in incidents:
        if inc.status != "open":
            continue
        level, dom = _level(ws, inc.origin_node)
        if level == "L0":
            step(inc, level, dom, "record", f"{inc.incident_id} recorded; nobody told",
                 rule=rule_for(level, dom))  # fmt: skip
            continue
        told = True
        stop = active_stop(ws.state)
        if stop is not None:
            step(inc, level, dom, "held",
                 f"{inc.incident_id}: owners told; nothing proposed or applied (org-wide stop "
                 f"by {stop.who}: {stop.reason!r})", rule="the org-wide stop")  # fmt: skip
            continue
        if level == "L1":
            step(inc, level, dom, "notify", f"{inc.incident_id}: owners of {dom or 'the workspace'} told",
                 rule=rule_for(level, dom))  # fmt: skip
            continue
        _propose_and_maybe_apply(ws, inc, level, dom, actions, who, step)
    if told:
        actions.notify(ws)
    return steps


def _propose_and_maybe_apply(
    ws: Workspace, inc: Any, level: str, dom: str | None, actions: Actions, who: Principal,
    step: Callable[..., None],
) -> None:  # fmt: skip
    from splice.repair import store as proposals
    from splice.repair.flow import ACTIVE

    for p in proposals.list_proposals(ws.state, target=ws.target, statuses=set(ACTIVE)):
        if p.incident_id == inc.incident_id:
            step(inc, level, dom, "waiting",
                 f"{inc.incident_id}: proposal {p.proposal_id} is already {p.status}",
                 proposal=p.proposal_id, rule=rule_for(level, dom))  # fmt: skip
            return
    try:
        p = actions.propose(ws, inc.incident_id, principal=who)
    except SpliceError as e:
        step(inc, level, dom, "not-proposed", f"{inc.incident_id}: no repair drafted: {e.one_line()}",
             rule=rule_for(level, dom))  # fmt: skip
        return
    step(inc, level, dom, "propose",
         f"{inc.incident_id}: proposal {p.proposal_id} ({p.change_class}) drafted; owners asked",
         proposal=p.proposal_id, change_class=p.change_class, rule=rule_for(level, dom))  # fmt: skip
    if level in ("L3", "L4"):
        apply_if_allowed(ws, inc, level, dom, p, actions, who, step, say_why=True)


def apply_if_allowed(
    ws: Workspace, inc: Any, level: str, dom: str | None, p: Any, actions: Actions,
    who: Principal, step: Callable[..., None], *, say_why: bool,
) -> bool:  # fmt: skip
    """Approve ``p`` as Splice and apply it, when every domain it waits for allows it (L3/L4, a
    proven class, a proven record, no stop); else, with ``say_why``, record why it waits for a
    person. Returns whether it was applied."""
    from splice.approvals.autonomy import active_stop, autonomy_decision
    from splice.repair import store as proposals
    from splice.repair.approvals import declared_domains, waiting_for

    stop = active_stop(ws.state)
    waiting = set(waiting_for(p, proposals.decisions(ws.state, p.proposal_id)))
    for d in [d for d in declared_domains(ws, p) if d.name in waiting]:
        record = proposals.clean_record(ws.state, d.name, p.change_class)
        ok, why = autonomy_decision(d, p.change_class, record, policy=ws.config.policy, stop=stop)
        if not ok:
            if say_why:
                step(inc, level, dom, "waits-for-person",
                     f"{inc.incident_id}: proposal {p.proposal_id} waits for a person: {why}",
                     proposal=p.proposal_id, rule=why)  # fmt: skip
            return False
    try:
        applied = actions.apply(ws, p.proposal_id, principal=who)
    except SpliceError as e:
        step(inc, level, dom, "apply-refused",
             f"{inc.incident_id}: proposal {p.proposal_id} not applied: {e.one_line()}",
             proposal=p.proposal_id, rule=rule_for(level, dom))  # fmt: skip
        return False
    v = applied.verification
    verdict = "verified" if v is not None and v.passed else "not verified"
    step(inc, level, dom, "apply",
         f"{inc.incident_id}: proposal {p.proposal_id} approved and applied by "
         f"{who.name}; {verdict}", proposal=p.proposal_id, verified=bool(v and v.passed),
         run_id=applied.run.run_id if applied.run else None, rule=rule_for(level, dom))  # fmt: skip
    if v is not None and v.passed:
        if level == "L4":
            _close(ws, inc, p.proposal_id, level, dom, step)
        else:
            _await_close(ws, inc, p.proposal_id, level, dom, step)
    return True


def own_pending(ws: Workspace) -> list[Any]:
    """The operator's own proposals still pending (drafted by its principal, signed in as
    Splice itself)."""
    from splice.repair import store as proposals

    who = operator_principal(ws)
    return [p for p in proposals.list_proposals(ws.state, target=ws.target, statuses={"pending"})
            if (p.requester or {}).get("name") == who.name
            and (p.requester or {}).get("auth") == "system"]  # fmt: skip


def resume_own(
    ws: Workspace, actions: Actions, *, trigger: str, now: Callable[[], float] = time.time
) -> list[Step]:
    """Apply what the operator drafted and may apply itself but did not (the server stopped
    between the proposal and its apply): its own pending proposals whose every domain allows
    it now. Silent for those that still wait for a person (that was said when drafted)."""
    from splice.watch.incidents import get_incident

    who = operator_principal(ws)
    steps: list[Step] = []

    step = _recorder(ws, who, trigger, now, steps)

    for p in own_pending(ws):
        inc = get_incident(ws.state.conn, p.incident_id)
        level, dom = _level(ws, inc.origin_node)
        if level in ("L3", "L4"):
            apply_if_allowed(ws, inc, level, dom, p, actions, who, step, say_why=False)
    return steps


def _await_close(
    ws: Workspace, inc: Any, proposal_id: str, level: str, dom: str | None,
    step: Callable[..., None],
) -> None:  # fmt: skip
    """At L3 a person closes what Splice repaired by itself (:mod:`splice.repair.close`)."""
    from splice.repair.close import await_close

    if await_close(ws, inc.incident_id, proposal_id, dom):
        step(inc, level, dom, "awaits-close",
             f"{inc.incident_id}: repaired by {proposal_id} and verified; an owner of "
             f"{dom or 'its domain'} closes it (splice incident close {inc.incident_id})",
             proposal=proposal_id, rule=rule_for(level, dom))  # fmt: skip


def _close(
    ws: Workspace, inc: Any, proposal_id: str, level: str, dom: str | None,
    step: Callable[..., None],
) -> None:  # fmt: skip
    from splice.watch.incidents import get_incident, resolve_incident

    now_inc = get_incident(ws.state.conn, inc.incident_id)
    if now_inc.status == "open":
        with ws.state.transaction() as conn:
            resolve_incident(conn, inc.incident_id,
                             f"closed by the operator at L4 after {proposal_id} verified")  # fmt: skip
    step(inc, level, dom, "close", f"{inc.incident_id}: closed ({proposal_id} verified)",
         proposal=proposal_id, rule=rule_for(level, dom))  # fmt: skip
