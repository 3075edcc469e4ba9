"""The compositions over repairs, decisions, API keys and the audit log: every decision takes
the authenticated Principal behind it; the rules of who may decide are enforced below this
layer (:mod:`splice.approvals.access`, :mod:`splice.repair.approvals`)."""

from __future__ import annotations

import json
from typing import Any

from splice.support.principals import Principal
from splice.workspace.core import Workspace


def list_proposals(ws: Workspace, *, include_closed: bool = False) -> list[tuple[Any, list[str]]]:
    """The target's proposals, newest first, each with the owners asked so far (expiry and
    escalation applied first; killed applies were recovered as the session started,
    :func:`splice.api.open_workspace`)."""
    from splice.approvals.domains import domain_named
    from splice.repair import store
    from splice.repair.approvals import asked, refresh_all

    refresh_all(ws)
    closed = {"rejected", "expired", "undone", "interrupted"}
    out = []
    for p in store.list_proposals(ws.state, target=ws.target):
        if p.status in closed and not include_closed:
            continue
        who = asked(ws, p) if domain_named(ws.config, p.domain) is not None else []
        out.append((p, who))
    return out


def proposal(ws: Workspace, proposal_id: str) -> dict[str, Any]:
    """One proposal as data (expiry and escalation applied first): its steps, scope, undo and
    status, the owners asked so far, and every decision on it in order."""
    from splice.approvals.domains import domain_named
    from splice.repair import store
    from splice.repair.approvals import approval_status, asked, refresh

    p = refresh(ws, store.load(ws.state, proposal_id))
    who = asked(ws, p) if domain_named(ws.config, p.domain) is not None else []
    return {
        **p.as_dict(),
        "asked": who,
        **approval_status(ws, p),
        "decisions": [d.as_dict() for d in store.decisions(ws.state, p.proposal_id)],
    }


def apply(
    ws: Workspace,
    proposal_id: str,
    *,
    principal: Principal,
    progress: Any = None,
    run_progress: Any = None,
) -> Any:
    """Run an approved proposal as one journaled run, verify it, write the receipt
    (``progress``: each step in words; ``run_progress``: each event of the run's journal)."""
    from splice.api.grants import keep_access
    from splice.repair.flow import apply as _apply

    # the repair's rebuild keeps the access granted on what it rebuilt
    try:
        applied = _apply(
            ws, proposal_id, principal=principal, progress=progress, run_progress=run_progress
        )
    except BaseException:
        keep_access(ws)  # granted again whatever the apply did; its error is what to report
        raise
    if applied.run is not None:
        applied.run.notes.extend(keep_access(ws))
    return applied


def incident_levels(ws: Workspace, incident_id: str) -> dict[str, Any]:
    """The levels decided for an incident (who accepted which series from when, how they were
    authenticated) and its series still without one."""
    from splice.repair.accept import how_authenticated, incident_series
    from splice.watch.history import dims_label
    from splice.watch.incidents import get_incident
    from splice.watch.levels import incident_levels as _levels

    inc = get_incident(ws.state.conn, incident_id)
    levels = []
    for row in _levels(ws.state.conn, inc.incident_id):
        dims = json.loads(row["dims"]) if isinstance(row["dims"], str) else row["dims"]
        who = {"name": row["accepted_by"], "kind": row["kind"], "auth": row["auth"],
               "credential": None}  # fmt: skip
        levels.append(
            {**row, "dims": dims, "series": dims_label(dims), "who": how_authenticated(who)}
        )
    open_ = [
        s.as_dict() for s in incident_series(ws.state.conn, inc.incident_id) if not s.accepted_by
    ]
    return {"incident_id": inc.incident_id, "status": inc.status, "levels": levels, "open": open_}


def stop(ws: Workspace, *, principal: Principal, reason: str) -> tuple[Any, bool]:
    """Start the org-wide stop: (the stop, whether one was already active)."""
    from splice.approvals.autonomy import stop as _stop

    return _stop(ws.state, ws.config, principal=principal, reason=reason)


def resume(ws: Workspace, *, principal: Principal) -> Any:
    """Lift the org-wide stop (a domain owner); returns the stop that ended."""
    from splice.approvals.autonomy import resume as _resume

    return _resume(ws.state, ws.config, principal=principal)


# -- API keys (splice.auth.keys) ----------------------------------------------------------------
def create_key(
    ws: Workspace,
    *,
    name: str,
    kind: str,
    scopes: str | list[str] | tuple[str, ...],
    principal: Principal | None = None,
) -> tuple[Any, str]:
    """Make an API key for ``name`` (a person or an agent, with ``scopes``): (its record, the
    key, to be shown once; only a salted hash is stored).  ``principal``: who makes it
    (default: the operating-system user), recorded in the audit log."""
    from splice.auth.keys import create
    from splice.support.principals import os_user_principal

    owners = [o for d in ws.config.domains for o in d.owners]
    return create(ws.state, name=name, kind=kind, scopes=scopes,
                  principal=principal or os_user_principal(), persons=owners)  # fmt: skip


def list_keys(ws: Workspace) -> list[Any]:
    """Every API key (never a secret), oldest first, revoked ones too."""
    from splice.auth.keys import list_keys as _list

    return _list(ws.state)


def revoke_key(ws: Workspace, key_id: str, *, principal: Principal) -> Any:
    """Revoke an API key at once; recorded in the audit log."""
    from splice.auth.keys import revoke

    return revoke(ws.state, key_id, principal=principal)


def audit_entries(ws: Workspace, proposal_id: str | None = None) -> list[Any]:
    """Every entry of the audit log (of ``proposal_id`` only, when given), oldest first."""
    from splice.approvals.auditlog import entries

    return entries(ws.state, proposal_id)


# -- what the web page needs to show the right buttons (every decision checks again) -------------


def decision_options(ws: Workspace, proposal_id: str, principal: Principal) -> dict[str, Any]:
    """For each decision (approve, reject, apply, undo): None when ``principal`` may make it on
    ``proposal_id`` now, else why not, in words. Writes nothing."""
    from splice.repair import store
    from splice.repair.approvals import options, refresh

    return options(ws, refresh(ws, store.load(ws.state, proposal_id)), principal)


def active_stop(ws: Workspace) -> dict[str, Any] | None:
    """The org-wide stop in force (who, why, since when), or None."""
    from dataclasses import asdict

    from splice.approvals.autonomy import active_stop as _active

    s = _active(ws.state)
    return asdict(s) if s is not None else None
