"""Autonomy levels per domain, the org-wide stop, and the proven record autonomy needs.

Levels (``[[domains]].autonomy``, default ``L1``):

- ``L0`` manual: Splice reads and reports; people propose and repair.
- ``L1`` observe: Splice watches and diagnoses; it proposes only when a person asks.
- ``L2`` propose: Splice may draft proposals on its own; a named owner approves every one.
- ``L3`` act reversibly: a proposal of an auto-appliable change class (``reload_ingestion``:
  reloading an ingestion job for named days) may be approved by Splice itself once the domain
  has ``[policy].proven_record`` clean applications of that class in a row.
- ``L4`` autonomous: as L3 for approval (the same classes, the same record); Splice may also
  propose and apply without being asked.

Restatements and model changes always need a person, at every level.  While an org-wide stop
is active (``splice stop``) nothing is approved or applied, autonomously or by a person
(:func:`splice.approvals.rules.refuse_during_stop`), until a domain owner runs ``splice
resume``.  A *clean application* is a proposal of that domain and class that reached
``applied``; a ``failed`` apply or an ``undo`` resets the count to zero (the count is the
repair's to keep: :func:`splice.repair.store.clean_record`).

>>> from splice.config.workspace import DomainSection
>>> d = DomainSection(name="pricing", nodes=["pricing:*"], owners=["maria"], autonomy="L3")
>>> autonomous_allowed(d, "reload_ingestion", 3), autonomous_allowed(d, "reload_ingestion", 2)
(True, False)
>>> autonomous_allowed(d, "restatement", 99)
False
>>> autonomy_decision(d, "reload_ingestion", 3, stop=Stop("lee", "vendor outage", 0.0))[1]
"an org-wide stop is active (lee: 'vendor outage'); nothing is dispatched autonomously until splice resume"
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from splice.approvals import auditlog
from splice.approvals.access import require
from splice.config.workspace import DomainSection, PolicySection, WorkspaceConfig
from splice.errors import ApprovalError, RepairError
from splice.state.sql import statement
from splice.state.store import StateStore
from splice.support.names import name_key
from splice.support.principals import Principal

_STOP_INSERT = statement("INSERT INTO repair_policy(key, value) VALUES (?, ?)")
_RESUME_DELETE = statement("DELETE FROM repair_policy WHERE key=?")
_ACTIVE_STOP_SELECT = statement("SELECT value FROM repair_policy WHERE key=?")

LEVELS: dict[str, str] = {
    "L0": "manual",
    "L1": "observe",
    "L2": "propose",
    "L3": "act reversibly",
    "L4": "autonomous",
}
#: Change classes Splice may ever approve by itself (at L3/L4, with a proven record).
AUTO_CLASSES: frozenset[str] = frozenset({"reload_ingestion"})
STOP_KEY = "stop"


@dataclass(frozen=True)
class Stop:
    """The org-wide stop: while one is active, nothing is dispatched autonomously."""

    who: str
    reason: str
    since: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def autonomy_decision(
    domain: DomainSection,
    change_class: str,
    record: int,
    *,
    policy: PolicySection | None = None,
    stop: Stop | None = None,
) -> tuple[bool, str]:
    """Whether Splice may approve a proposal of ``change_class`` in ``domain`` by itself, and why."""
    policy = policy or PolicySection()
    if stop is not None:
        return False, (f"an org-wide stop is active ({stop.who}: {stop.reason!r}); nothing is "
                       "dispatched autonomously until splice resume")  # fmt: skip
    if domain.autonomy not in ("L3", "L4"):
        return False, (f"domain {domain.name} is at {domain.autonomy} ({LEVELS[domain.autonomy]}); "
                       "autonomous approval needs L3 or L4")  # fmt: skip
    if change_class not in AUTO_CLASSES:
        return False, f"a {change_class} always needs a person's approval"
    if record < policy.proven_record:
        return False, (f"domain {domain.name} has {record} clean {change_class} application(s) "
                       f"in a row; autonomy needs {policy.proven_record} ([policy].proven_record)")  # fmt: skip
    return True, (f"{domain.autonomy}: {record} clean {change_class} application(s) in a row "
                  f"(>= {policy.proven_record})")  # fmt: skip


def autonomous_allowed(
    domain: DomainSection,
    change_class: str,
    record: int,
    *,
    policy: PolicySection | None = None,
    stop: Stop | None = None,
) -> bool:
    """See :func:`autonomy_decision`."""
    return autonomy_decision(domain, change_class, record, policy=policy, stop=stop)[0]


def active_stop(state: StateStore) -> Stop | None:
    row = state.conn.execute(_ACTIVE_STOP_SELECT, (STOP_KEY,)).fetchone()
    if row is None:
        return None
    d = json.loads(row[0])
    return Stop(str(d["who"]), str(d["reason"]), float(d["since"]))


def stop(
    state: StateStore,
    config: WorkspaceConfig,
    *,
    principal: Principal,
    reason: str,
    now: float | None = None,
) -> tuple[Stop, bool]:
    """Start the org-wide stop. Any person with the ``propose`` scope may pull the brake;
    returns (the stop, whether it was already active; then nothing changes)."""
    actor, reason = (
        require(principal, "stop", config.policy, where=config.serve.resource_url).name,
        reason.strip(),
    )
    if not reason:
        raise ApprovalError("splice stop needs a reason.", fix="splice stop --reason TEXT")
    now = time.time() if now is None else now
    with state.transaction() as conn:
        current = active_stop(state)
        if current is not None:
            return current, True
        s = Stop(actor, reason, now)
        conn.execute(_STOP_INSERT,
                     (STOP_KEY, auditlog.canonical(s.as_dict())))  # fmt: skip
        auditlog.append(conn, kind="stop", principal=principal, proposal_id=None, at=now,
                        payload={"reason": reason})  # fmt: skip
    return s, False


def resume(
    state: StateStore, config: WorkspaceConfig, *, principal: Principal, now: float | None = None
) -> Stop:
    """End the org-wide stop; only a named owner of some domain may (any person when no
    ``[[domains]]`` are declared).  Returns the stop that ended."""
    actor = require(principal, "resume", config.policy, where=config.serve.resource_url).name
    owners = {name_key(o): o for d in config.domains for o in d.owners}
    if config.domains and name_key(actor) not in owners:
        raise ApprovalError(
            f"{actor or '(no name)'} may not lift the org-wide stop: only an owner of a domain "
            f"may (owners: {', '.join(sorted(owners.values()))}).",
            fix="ask one of them to run splice resume",
        )
    now = time.time() if now is None else now
    with state.transaction() as conn:
        current = active_stop(state)
        if current is None:
            raise RepairError("no org-wide stop is active; nothing to resume.",
                              fix="splice proposals shows the state of every proposal")  # fmt: skip
        conn.execute(_RESUME_DELETE, (STOP_KEY,))
        auditlog.append(conn, kind="resume", principal=principal, proposal_id=None, at=now,
                        payload={"stopped_by": current.who, "reason": current.reason,
                                 "since": current.since, "seconds": round(now - current.since, 3)})  # fmt: skip
    return current
