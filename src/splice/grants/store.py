"""Access grants in Splice's state: save, load, list, and move them between statuses.

Every change is one state transaction (``BEGIN IMMEDIATE``): the grant's row, its decision and
its audit-log entry (kind ``access-<decision>``, the grant's id where a proposal's would be)
are written together or not at all, and the status is read again inside the transaction, so
two people deciding at once cannot both win.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from splice.approvals import auditlog
from splice.errors import NodeNotFoundError, RepairError
from splice.grants.model import DECISION_FOR, TRANSITIONS, Grant, can_move
from splice.state.sql import Statement, statement
from splice.state.store import StateStore, next_id, target_status_filter
from splice.support.principals import Principal

_LOG_INSERT = statement(
    "INSERT INTO access_decisions(grant_id, decision, actor, comment, at, principal_kind, principal_auth, principal_credential) VALUES (?,?,?,?,?,?,?,?)"
)
_DECISIONS_SELECT = statement(
    "SELECT decision, actor, comment, at, principal_kind, principal_auth, principal_credential FROM access_decisions WHERE grant_id = ? COLLATE NOCASE ORDER BY at, rowid"
)
_SAVE_INSERT = statement(
    "INSERT INTO access_grants(target, domain, status, payload, created_by, created_at, expires_at, until, updated_at, grant_id) VALUES (?,?,?,?,?,?,?,?,?,?)"
)
_LOAD_SELECT = statement(
    "SELECT payload, status FROM access_grants WHERE grant_id = ? COLLATE NOCASE"
)
_KNOWN_IDS = statement("SELECT grant_id FROM access_grants ORDER BY created_at DESC LIMIT 10")


def new_grant_id(state: StateStore) -> str:
    """The next free id: ``AG-1``, ``AG-2``, ..."""
    return next_id(state.conn, "access_grants", "grant_id", "AG")


_UPDATE = statement(
    "UPDATE access_grants SET target=?, domain=?, status=?, payload=?, created_by=?, "
    "created_at=?, expires_at=?, until=?, updated_at=? WHERE grant_id=?"
)


def _values(g: Grant, now: float) -> tuple[Any, ...]:
    return (g.target, g.domain, g.status, auditlog.canonical(g.as_dict()), g.created_by,
            g.created_at, g.expires_at, g.until, now, g.grant_id)  # fmt: skip


def log(conn: sqlite3.Connection, g: Grant, decision: str, *, principal: Principal,
        comment: str | None, at: float, payload: dict[str, Any] | None = None) -> None:  # fmt: skip
    """A decision on ``g`` with its audit-log entry; ``conn`` must be inside a transaction."""
    conn.execute(
        _LOG_INSERT,
        (g.grant_id, decision, principal.name, comment, at, principal.kind, principal.auth,
         principal.credential),
    )  # fmt: skip
    body = {"status": g.status, "comment": comment, "grantee": g.grantee,
            "relations": g.relations, **(payload or {})}  # fmt: skip
    auditlog.append(conn, kind=f"access-{decision}", principal=principal,
                    proposal_id=g.grant_id, payload=body, at=at)  # fmt: skip


def save(state: StateStore, g: Grant, *, principal: Principal, now: float) -> Grant:
    """Store a new request by ``principal`` and log it (``access-request``)."""
    g.created_by, g.requester = principal.name, principal.record()
    with state.transaction() as conn:
        conn.execute(
            _SAVE_INSERT,
            _values(g, now),
        )
        log(conn, g, "request", principal=principal, comment=g.why, at=now,
            payload={"hours": g.hours, "selector": g.selector, "domain": g.domain,
                     "nodes": g.nodes})  # fmt: skip
    return g


def _grant(row: tuple[Any, ...]) -> Grant:
    g = Grant.from_dict(json.loads(row[0]))
    g.status = row[1]
    return g


def _load(conn: sqlite3.Connection, grant_id: str) -> Grant:
    row = conn.execute(
        _LOAD_SELECT,
        (grant_id.strip(),),
    ).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute(
            _KNOWN_IDS)]  # fmt: skip
        raise NodeNotFoundError(
            f"no access grant {grant_id!r}"
            + (f" (known: {', '.join(known)})." if known else "; nobody has asked for one yet."),
            fix="splice access list --all lists them",
        )
    return _grant(row)


def load(state: StateStore, grant_id: str) -> Grant:
    """One grant by id (case-insensitive); an unknown id is an error listing the known ones."""
    return _load(state.conn, grant_id)


def list_grants(state: StateStore, *, target: str | None = None,
                statuses: frozenset[str] | set[str] | None = None) -> list[Grant]:  # fmt: skip
    """Grants, newest first."""
    found = target_status_filter(target, statuses)
    if found is None:
        return []
    cond, args = found
    q = exp.select("payload", "status").from_("access_grants").where(cond)
    q = q.order_by(exp.column("created_at").desc(), exp.column("rowid").desc())
    rows = state.conn.execute(Statement(q), args)
    return [_grant(r) for r in rows]


def decisions(state: StateStore, grant_id: str) -> list[dict[str, Any]]:
    rows = state.conn.execute(
        _DECISIONS_SELECT,
        (grant_id,),
    )
    keys = ("decision", "actor", "comment", "at", "principal_kind", "principal_auth",
            "principal_credential")  # fmt: skip
    return [dict(zip(keys, r, strict=True)) for r in rows]


def update(state: StateStore, g: Grant, *, now: float | None = None) -> None:
    """Write ``g`` as it is now, without a decision (a failed revoke's error, for a retry)."""
    now = time.time() if now is None else now
    with state.transaction() as conn:
        conn.execute(_UPDATE, _values(g, now))


def transition(
    state: StateStore,
    grant_id: str,
    to: str,
    *,
    principal: Principal,
    comment: str | None = None,
    now: float | None = None,
    check: Callable[[Grant], None] | None = None,
    change: Callable[[Grant], None] | None = None,
    payload: dict[str, Any] | None = None,
) -> Grant:
    """Move a grant to ``to`` in one transaction, with its decision and log entry.

    ``check(g)`` runs first, on the grant as stored now, and raises to refuse; ``change(g)``
    may change the grant before it is written."""
    now = time.time() if now is None else now
    with state.transaction() as conn:
        g = _load(conn, grant_id)
        if check is not None:
            check(g)
        if not can_move(g.status, to):
            allowed = ", ".join(sorted(TRANSITIONS[g.status])) or "nothing (it is final)"
            raise RepairError(
                f"access grant {g.grant_id} is {g.status}; it cannot become {to} "
                f"(from {g.status} it can become: {allowed}).",
                fix=f"splice access show {g.grant_id} shows what happened to it",
            )
        before = g.status
        if change is not None:
            change(g)
        g.status = to
        conn.execute(_UPDATE, _values(g, now))
        log(conn, g, DECISION_FOR[to], principal=principal, comment=comment, at=now,
            payload={"from": before, "to": to, **(payload or {})})  # fmt: skip
    return g
