"""Proposals in Splice's state: save, load, list, and move them between statuses.

Every change is one SQLite transaction (:meth:`StateStore.transaction`, ``BEGIN IMMEDIATE``):
the proposal row, the decision row and the audit-log entry are written together or not at
all, and the status is read again inside the transaction, so two people deciding at the same
moment cannot both win.  A transition :data:`~splice.repair.model.TRANSITIONS` does not allow
is refused with a :class:`~splice.errors.RepairError`.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from splice.approvals import auditlog
from splice.errors import RepairError
from splice.repair.model import TRANSITIONS, Decision, Proposal, can_move
from splice.state.sql import Statement, statement, where_equal
from splice.state.store import StateStore, next_id
from splice.support.principals import Principal

_DECISIONS_SELECT = statement(
    "SELECT proposal_id, decision, actor, comment, at, principal_kind, principal_auth, principal_credential, domains FROM repair_decisions WHERE proposal_id = ? COLLATE NOCASE ORDER BY at, rowid"
)
_WRITE_UPDATE = statement(
    "UPDATE repair_proposals SET incident_id=?, target=?, domain=?, status=?, payload=?, created_by=?, created_at=?, expires_at=?, updated_at=?, requester_kind=?, requester_auth=?, requester_credential=? WHERE proposal_id=?"
)
_NOTE_INSERT = statement(
    "INSERT INTO repair_decisions(proposal_id, decision, actor, comment, at, principal_kind, principal_auth, principal_credential, domains) VALUES (?,?,?,?,?,?,?,?,?)"
)
_CLEAN_RECORD_SELECT = statement(
    "SELECT d.proposal_id, d.decision FROM repair_decisions d JOIN repair_proposals p ON p.proposal_id = d.proposal_id WHERE p.domain = ? AND json_extract(p.payload, '$.change_class') = ? AND d.decision IN ('applied', 'failed', 'undo') ORDER BY d.at, d.rowid"
)
_VERIFIED_SELECT = statement(
    "SELECT a.proposal_id, json_extract(a.payload, '$.passed') FROM repair_audit_log a JOIN repair_proposals p ON p.proposal_id = a.proposal_id WHERE p.domain = ? AND json_extract(p.payload, '$.change_class') = ? AND a.kind = 'verify' ORDER BY a.seq"
)
_INCIDENT_VERIFIED = statement(
    "SELECT a.at, json_extract(a.payload, '$.passed'), a.proposal_id FROM repair_audit_log a JOIN repair_proposals p ON p.proposal_id = a.proposal_id WHERE p.incident_id = ? AND p.status = 'applied' AND a.kind = 'verify' ORDER BY a.seq"
)
_SAVE_INSERT = statement(
    "INSERT INTO repair_proposals(incident_id, target, domain, status, payload, created_by, created_at, expires_at, updated_at, requester_kind, requester_auth, requester_credential, proposal_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_SAVE_SELECT = statement("SELECT 1 FROM repair_proposals WHERE proposal_id = ? COLLATE NOCASE")
_KNOWN_IDS = statement("SELECT proposal_id FROM repair_proposals ORDER BY created_at DESC LIMIT 10")

#: The decision recorded when a proposal moves to a status.
DECISION_FOR = {
    "pending": "request",
    "approved": "approve",
    "rejected": "reject",
    "expired": "expire",
    "applying": "apply",
    "applied": "applied",
    "failed": "failed",
    "interrupted": "interrupted",
    "undone": "undo",
}


def new_proposal_id(state: StateStore) -> str:
    """The next free id: ``PR-1``, ``PR-2``, ..."""
    return next_id(state.conn, "repair_proposals", "proposal_id", "PR")


def _row_values(p: Proposal, now: float) -> tuple[Any, ...]:
    who = p.requester or {}
    return (p.incident_id, p.target, p.domain, p.status, auditlog.canonical(p.as_dict()),
            p.created_by, p.created_at, p.expires_at, now, who.get("kind"), who.get("auth"),
            who.get("credential"))  # fmt: skip


def save(
    state: StateStore, proposal: Proposal, *, principal: Principal, now: float | None = None
) -> Proposal:
    """Store a new proposal (as a draft, normally) requested by ``principal`` (its requester
    and ``created_by``), and log that it was proposed."""
    now = time.time() if now is None else now
    proposal.created_by, proposal.requester = principal.name, principal.record()
    with state.transaction() as conn:
        exists = conn.execute(
            _SAVE_SELECT,
            (proposal.proposal_id,),
        ).fetchone()
        if exists:
            raise RepairError(
                f"a proposal {proposal.proposal_id} already exists.",
                fix="use new_proposal_id() for a fresh id",
            )
        conn.execute(
            _SAVE_INSERT,
            (*_row_values(proposal, now), proposal.proposal_id),
        )
        auditlog.append(
            conn, kind="propose", principal=principal, proposal_id=proposal.proposal_id,
            at=now, payload={"incident_id": proposal.incident_id, "domain": proposal.domain,
                             **({"domains": proposal.domains, "unowned": proposal.unowned}
                                if proposal.domains else {}),
                             "change_class": proposal.change_class, "title": proposal.title,
                             "status": proposal.status,
                             "scope": [proposal.scope_start.isoformat(),
                                       proposal.scope_end.isoformat()]},
        )  # fmt: skip
    return proposal


_COLUMNS = "payload, status, created_by, requester_kind, requester_auth, requester_credential"
_LOAD = statement(f"SELECT {_COLUMNS} FROM repair_proposals WHERE proposal_id = ? COLLATE NOCASE")


def _proposal(row: tuple[Any, ...]) -> Proposal:
    p = Proposal.from_dict(json.loads(row[0]))
    p.status = row[1]
    if p.requester is None and row[4]:  # asked for before principals: what the migration knew
        p.requester = {"name": row[2], "kind": row[3], "auth": row[4], "credential": row[5]}
    return p


def _load(conn: sqlite3.Connection, proposal_id: str) -> Proposal:
    row = conn.execute(_LOAD, (proposal_id.strip(),)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute(_KNOWN_IDS)]
        raise RepairError(
            f"no proposal {proposal_id!r}"
            + (f" (known: {', '.join(known)})." if known else "; there are no proposals yet."),
            fix="splice proposals lists them",
        )
    return _proposal(row)


def load(state: StateStore, proposal_id: str) -> Proposal:
    """One proposal by id (case-insensitive); unknown ids are an error listing the known ones."""
    return _load(state.conn, proposal_id)


def list_proposals(
    state: StateStore, *, target: str | None = None, statuses: set[str] | None = None
) -> list[Proposal]:
    """Proposals, newest first."""
    # filtered in SQL: every command (and every pass of the operator) probes for stuck applies
    if statuses is not None and not statuses:
        return []
    wanted = sorted(statuses) if statuses is not None else None
    args = ([target] if target is not None else []) + (wanted or [])
    query = _list_query(target is not None, None if wanted is None else len(wanted))
    return [_proposal(r) for r in state.conn.execute(query, args)]


@functools.lru_cache(maxsize=32)
def _list_query(by_target: bool, n_statuses: int | None) -> Statement:
    """The query of :func:`list_proposals` for its shape, built once (its arguments: the target,
    then the statuses sorted)."""
    statuses = None if n_statuses is None else {f"s{i}" for i in range(n_statuses)}
    cond, _args = where_equal(target="?" if by_target else None, status=statuses)
    q = exp.select(*_COLUMNS.split(", ")).from_("repair_proposals")
    if cond is not None:
        q = q.where(cond)
    q = q.order_by(exp.column("created_at").desc(), exp.column("rowid").desc())
    return Statement(q)


def decisions(state: StateStore, proposal_id: str) -> list[Decision]:
    rows = state.conn.execute(
        _DECISIONS_SELECT,
        (proposal_id,),
    )
    return [Decision(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
                     tuple(json.loads(r[8])) if r[8] else None) for r in rows]  # fmt: skip


def _write(conn: sqlite3.Connection, p: Proposal, now: float) -> None:
    conn.execute(
        _WRITE_UPDATE,
        (*_row_values(p, now), p.proposal_id),
    )


def note(
    conn: sqlite3.Connection,
    p: Proposal,
    decision: str,
    *,
    principal: Principal,
    comment: str | None,
    at: float,
    payload: dict[str, Any] | None = None,
    domains: list[str] | None = None,
) -> None:
    """A decision that does not change the status (an escalation, an approval for some of the
    domains), with its log entry; ``conn`` must be inside a transaction.  The row and the entry
    record the principal, and ``domains``: the domains an approval is for, or whose owner an
    escalation asks."""
    conn.execute(
        _NOTE_INSERT,
        (p.proposal_id, decision, principal.name, comment, at, principal.kind, principal.auth,
         principal.credential, json.dumps(list(domains)) if domains else None),
    )  # fmt: skip
    body = {"status": p.status, "comment": comment, **(payload or {})}
    if domains:
        body["domains"] = list(domains)
    auditlog.append(
        conn, kind=decision, principal=principal, proposal_id=p.proposal_id, payload=body, at=at
    )


def transition(
    state: StateStore,
    proposal_id: str,
    to: str,
    *,
    principal: Principal,
    comment: str | None = None,
    now: float | None = None,
    check: Callable[[Proposal], None] | None = None,
    update: Callable[[Proposal], None] | None = None,
    payload: dict[str, Any] | None = None,
) -> Proposal:
    """Move a proposal to status ``to`` in one transaction, with its decision and log entry.

    ``check(p)`` runs first, inside the transaction, on the proposal as stored now; it raises
    to refuse.  ``update(p)`` may change the proposal before it is written (the undo, the
    expiry).  ``payload`` goes into the audit-log entry.
    """
    if to not in TRANSITIONS:
        raise RepairError(
            f"{to!r} is not a proposal status.", fix=f"use one of {', '.join(TRANSITIONS)}"
        )
    now = time.time() if now is None else now
    with state.transaction() as conn:
        p = _load(conn, proposal_id)
        if check is not None:
            check(p)
        _move(conn, p, to, principal=principal, comment=comment, now=now, update=update,
              payload=payload)  # fmt: skip
    return p


def _move(
    conn: sqlite3.Connection,
    p: Proposal,
    to: str,
    *,
    principal: Principal,
    comment: str | None,
    now: float,
    update: Callable[[Proposal], None] | None = None,
    payload: dict[str, Any] | None = None,
    domains: list[str] | None = None,
) -> None:
    if not can_move(p.status, to):
        allowed = ", ".join(sorted(TRANSITIONS[p.status])) or "nothing (it is final)"
        raise RepairError(
            f"proposal {p.proposal_id} is {p.status}; it cannot become {to} "
            f"(from {p.status} it can become: {allowed}).",
            fix=f"splice audit-log show lists what happened to {p.proposal_id}",
        )
    before = p.status
    if update is not None:
        update(p)
    p.status = to
    _write(conn, p, now)
    note(conn, p, DECISION_FOR[to], principal=principal, comment=comment, at=now,
         payload={"from": before, "to": to, **(payload or {})}, domains=domains)  # fmt: skip


def approve(
    state: StateStore,
    proposal_id: str,
    *,
    principal: Principal,
    decide: Callable[[Proposal, list[Decision]], tuple[list[str], list[str]]],
    comment: str | None = None,
    now: float | None = None,
    update: Callable[[Proposal], None] | None = None,
) -> Proposal:
    """An approval of ``principal`` for some of a proposal's domains, in one transaction.

    ``decide(p, decisions)`` runs first, inside the transaction, on the proposal and its
    decisions as stored now: it raises to refuse, else returns (the domains this approval is
    for, the domains still waiting after it).  When none is left waiting the proposal becomes
    ``approved`` (``update(p)`` first); otherwise it stays ``pending`` and the approval is
    recorded as an ``approve`` decision naming its domains, with its log entry."""
    now = time.time() if now is None else now
    with state.transaction() as conn:
        p = _load(conn, proposal_id)
        mine, waiting = decide(p, decisions(state, p.proposal_id))
        if waiting:
            note(conn, p, "approve", principal=principal, comment=comment, at=now,
                 payload={"waiting": waiting}, domains=mine)  # fmt: skip
        else:
            _move(conn, p, "approved", principal=principal, comment=comment, now=now,
                  update=update, domains=mine)  # fmt: skip
    return p


def clean_record(state: StateStore, domain: str, change_class: str) -> int:
    """Clean applications of ``change_class`` in ``domain`` in a row, up to now: the proven
    record autonomy needs (:mod:`splice.approvals.autonomy`). Clean means applied *and*
    verified (its latest verification passed): an application whose verification failed or
    never ran, a ``failed`` apply, or an ``undo`` resets it to zero."""
    verified: dict[str, bool] = {}
    for pid, passed in state.conn.execute(_VERIFIED_SELECT, (domain, change_class)):
        verified[pid] = passed in (1, True, "1", "true")  # the latest verification counts
    streak = 0
    for pid, decision in state.conn.execute(_CLEAN_RECORD_SELECT, (domain, change_class)):
        streak = streak + 1 if decision == "applied" and verified.get(pid) else 0
    return streak


def incident_verified(state: StateStore, incident_id: str) -> tuple[float, str] | None:
    """(when, proposal) of the applied repair of ``incident_id`` whose latest verification
    passed; None while no applied repair of it has a passing latest verification."""
    latest: dict[str, tuple[float, bool]] = {}
    for at, passed, pid in state.conn.execute(_INCIDENT_VERIFIED, (incident_id,)):
        latest[str(pid)] = (float(at), passed in (1, True, "1", "true"))
    good = [(at, pid) for pid, (at, ok) in latest.items() if ok]
    return max(good) if good else None
