"""Repairs, decisions, API keys and the audit log: every decision takes the authenticated
Principal behind it."""

from __future__ import annotations

import json
from typing import Any

from splice.doctor.checks import Check
from splice.support.principals import Principal
from splice.workspace.core import Workspace


# -- repair (splice.repair) -----------------------------------------------------------------------
# Every decision takes the authenticated Principal behind it (splice.support.principals); the rules of
# who may decide are enforced below this layer (splice.approvals.access, splice.repair.approvals).
def cli_principal(ws: Workspace, as_name: str | None = None, kind: str | None = None) -> Principal:
    """Who the command line decides as: the operating-system user, or ``--as NAME`` where
    splice.toml's ``[policy] allow_as`` is true (refused otherwise, saying what is recorded);
    ``kind`` (``--kind``): a person or an agent (default: an agent when ``[policy] agents``
    lists the name). An agent named like a person is recorded as ``agent:NAME``."""
    from splice.approvals.access import cli_principal as _cli_principal

    who = _cli_principal(ws.config.policy, as_name, kind)
    return agent_principal(ws, who) if who.kind == "agent" else who


def agent_principal(ws: Workspace, principal: Principal) -> Principal:
    """An agent as Splice records it: ``agent:NAME`` when the name it claims is a person's (a
    domain owner, a person's API key) or one of Splice's own, with the claimed name recorded;
    any other principal unchanged."""
    from splice.auth.keys import as_agent

    return as_agent(principal, ws.config, ws.state)


def propose(ws: Workspace, incident_id: str, *, principal: Principal, progress: Any = None) -> Any:
    """Draft the narrowest repair of an incident, capture and test its undo, request approval
    (``principal``: a person or an agent with the ``propose`` scope; it is the requester)."""
    from splice.repair.flow import propose as _propose

    return _propose(ws, incident_id, principal=principal, progress=progress)


def list_proposals(ws: Workspace, *, include_closed: bool = False) -> list[tuple[Any, list[str]]]:
    """The target's proposals, newest first, each with the owners asked so far (expiry and
    escalation applied first)."""
    from splice.approvals.domains import domain_named
    from splice.repair import store
    from splice.repair.approvals import asked, refresh_all
    from splice.repair.recovery import recover_interrupted_applies

    recover_interrupted_applies(ws)
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
    from splice.repair.approvals import asked, refresh

    p = refresh(ws, store.load(ws.state, proposal_id))
    who = asked(ws, p) if domain_named(ws.config, p.domain) is not None else []
    return {
        **p.as_dict(),
        "asked": who,
        **approval_status(ws, p),
        "decisions": [d.as_dict() for d in store.decisions(ws.state, p.proposal_id)],
    }


def approval_status(ws: Workspace, p: Any) -> dict[str, Any]:
    """Which domains decide proposal ``p`` (every domain it rewrites or reloads), who approved
    for each (``approved_for``), which still have to (``waiting_for``: each domain with its
    owners and the ones asked so far), and the nodes it rewrites that no domain covers
    (``unowned``)."""
    from splice.repair.approvals import approval_status as _status

    return _status(ws, p)


def approve(
    ws: Workspace, proposal_id: str, *, principal: Principal, comment: str | None = None
) -> Any:
    """A named owner approves a pending proposal (see :mod:`splice.repair.approvals`)."""
    from splice.repair.approvals import approve as _approve

    return _approve(ws, proposal_id, principal=principal, comment=comment)


def reject(ws: Workspace, proposal_id: str, *, principal: Principal, reason: str) -> Any:
    """An owner rejects, or the proposer withdraws, an open proposal."""
    from splice.repair.approvals import reject as _reject

    return _reject(ws, proposal_id, principal=principal, reason=reason)


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


def verify_again(ws: Workspace, proposal_id: str, *, principal: Principal,
                 progress: Any = None) -> Any:  # fmt: skip
    """Run an applied proposal's verification again (``splice verify``), record it and write a
    new receipt."""
    from splice.repair.reverify import verify_again as _again

    return _again(ws, proposal_id, principal=principal, progress=progress)


def receipt(ws: Workspace, proposal_id: str) -> dict[str, Any]:
    """The receipt of a proposal as data."""
    from splice.repair.flow import receipt as _receipt

    return _receipt(ws, proposal_id)


def undo(ws: Workspace, proposal_id: str, *, principal: Principal, progress: Any = None) -> Any:
    """Restore exactly what an applied proposal rewrote, and record it (``progress(message)``
    is told when the restore starts, once every check passed)."""
    from splice.repair.revert import undo as _undo

    return _undo(ws, proposal_id, principal=principal, progress=progress)


def accept_level(
    ws: Workspace,
    incident_id: str,
    *,
    principal: Principal,
    note: str | None = None,
    series: list[str] | None = None,
) -> Any:
    """A named owner of the domain where the incident starts accepts the new level of its
    series (``series``: only those named, ``currency=JPY`` or a metric's name): from where each
    series' fault started it is judged against its new level; the incident closes (status
    ``accepted``) once every series has one (:mod:`splice.repair.accept`)."""
    from splice.repair.accept import accept_level as _accept

    return _accept(ws, incident_id, principal=principal, note=note, series=series)


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


# -- API keys (splice.auth.keys) -----------------------------------------------------------------------
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


def authenticate_key(ws: Workspace, raw_key: str) -> Principal:
    """The principal an API key stands for (auth ``api-key``, credential the key's id);
    AccessError for a malformed, unknown, wrong or revoked key.  An agent's key whose name is
    a person's (an owner named since the key was made) stands for ``agent:NAME``."""
    from splice.auth.keys import as_agent, authenticate

    return as_agent(authenticate(ws.state, raw_key), ws.config, ws.state)


def reconfirm_key(ws: Workspace, raw_key: str) -> Principal:
    """:func:`authenticate_key` for a key whose secret this process has already checked: the
    state is read again (revoked or removed: AccessError), the secret is not hashed again."""
    from splice.auth.keys import as_agent, reconfirm

    return as_agent(reconfirm(ws.state, raw_key), ws.config, ws.state)


def move_state(ws: Workspace, url: str, *, progress: Any = None) -> Any:
    """Move the workspace's SQLite state into an empty PostgreSQL database, verified
    (:class:`splice.repair.state_move.MoveReport`)."""
    from splice.repair.state_move import move_state as _move

    return _move(ws, url, progress=progress)


def verify_audit_log(ws: Workspace) -> Any:
    """The audit log's chain checked end to end, against the witness kept outside the state,
    every entry's signature, every receipt's head and every anchor
    (:class:`splice.approvals.auditlog.AuditReport`)."""
    from splice.approvals.witness_admin import verify_workspace

    return verify_workspace(ws)


def accept_divergence(ws: Workspace, *, principal: Principal, reason: str) -> dict[str, Any]:
    """An owner accepts the log as it is though it no longer extends the witness (recorded in
    the log, the witness and the anchors)."""
    from splice.approvals.witness_admin import accept_divergence as _accept

    return _accept(ws, principal=principal, reason=reason)


def rewitness(ws: Workspace, *, principal: Principal, reason: str) -> dict[str, Any]:
    """An owner re-creates a lost witness from the state's log (recorded)."""
    from splice.approvals.witness_admin import rewitness as _rewitness

    return _rewitness(ws, principal=principal, reason=reason)


def reanchor_audit_log(ws: Workspace) -> dict[str, Any]:
    """Send the witnessed head again to every ``[audit]`` anchor."""
    from splice.approvals.witness_admin import reanchor

    return reanchor(ws)


def receipt_standing(ws: Workspace, proposal_id: str) -> dict[str, Any] | None:
    """Whether the head a proposal's recorded receipt names is still in the verified chain."""
    from splice.approvals.witness_admin import receipt_standing as _standing

    return _standing(ws, proposal_id)


def server_key(ws: Workspace) -> str:
    """The public key (``ed25519:...``) ``splice serve`` signs with, for ``[policy] server_keys``."""
    return ws.server_signer().key_id


def sign_as_server(hub: Any) -> str:
    """From now on this process signs the audit-log entries it writes with the server's key
    (``splice serve`` at start); returns the key's id."""
    from splice.state.signing import use_for_process

    with hub.workspace() as ws:
        signer = ws.server_signer()
    use_for_process(signer)
    return signer.key_id


# -- for the interfaces: thin wrappers over lower layers, so that the CLI, the MCP tools and
# -- the server import splice.api only (see splice.layers) -------------------------------------
def open_workspace(
    root: Any = ".",
    target: str | None = None,
    *,
    new_state: bool = False,
    use_cache: bool | None = None,
) -> Workspace:
    """Open the workspace at ``root`` (:meth:`splice.workspace.core.Workspace.open`); use it as a
    context manager so that its state and tools are closed.

    Access grants whose time is up are revoked first (``splice access``: at the latest on the
    next command); a revoke that fails is a line in ``ws.notices`` and is tried again."""
    from splice.api.grants import end_due_access
    from splice.errors import SpliceError

    ws = Workspace.open(root, target, new_state=new_state, use_cache=use_cache)
    try:
        ws.notices.extend(end_due_access(ws))
    except SpliceError as e:  # the command goes on; the revoke is tried at the next one
        ws.notices.append(f"access grants due to end were not revoked yet: {e.one_line()}")
    return ws


def doctor_exit_status(checks: list[Check]) -> int:
    """1 when a doctor check is an error, else 0 (``splice doctor``'s exit status)."""
    from splice.doctor.checks import exit_status

    return exit_status(checks)


def plan_summary(plan: Any) -> dict[str, int]:
    """Counts of a plan's decisions: {"build", "models", "checks", "reuse", "segments"}."""
    from splice.plan.planner import summary

    return summary(plan)


def plan_checks(plan: Any) -> set[str]:
    """The decisions of a plan that run a test or audit (the rest build relations)."""
    from splice.plan.checks import is_check

    return {n for n, d in plan.decisions.items() if d.action == "build" and is_check(d)}


def watch(
    ws: Workspace, *, backfill: bool = False, only: list[str] | None = None, progress: Any = None
) -> Any:
    """Measure every new interval of every metric and monitor, store it and judge it
    (:func:`splice.watch.service.watch`; ``only``: these metrics; ``backfill``: all again)."""
    from splice.watch.service import watch as _watch

    return _watch(ws, backfill=backfill, only=only, progress=progress)


def incident_lines(inc: Any) -> list[str]:
    """The diagnosis of one incident (:func:`incident`), as plain lines of text."""
    from splice.watch.report import incident_lines as _lines

    return _lines(inc)


def proposal_lines(p: Any) -> list[str]:
    """A proposal as plain lines: what runs, in order; the manual alternative; undo; cost."""
    from splice.repair.render import proposal_lines as _lines

    return _lines(p)


def receipt_markdown(r: dict[str, Any]) -> str:
    """A receipt (:func:`receipt`) as Markdown, for people."""
    from splice.repair.receipt import receipt_markdown as _markdown

    return _markdown(r)


def audit_entries(ws: Workspace, proposal_id: str | None = None) -> list[Any]:
    """Every entry of the audit log (of ``proposal_id`` only, when given), oldest first."""
    from splice.approvals.auditlog import entries

    return entries(ws.state, proposal_id)


# -- what the web page needs to show the right buttons (every decision checks again) -------------
def credential_active(ws: Workspace, principal: Principal) -> bool:
    """Whether a signed-in principal's credential still holds: an API key not revoked (other
    credentials end with their session's expiry)."""
    from splice.auth.keys import active

    if principal.auth == "api-key" and principal.credential:
        return active(ws.state, principal.credential)
    return True


def may_act(principal: Principal, action: str) -> str | None:
    """None when ``principal`` may ``action`` at all (``propose``, ``approve``, ``reject``,
    ``apply``, ``undo``, ``stop``, ``resume``, ``accept-level``: its kind and scopes, before
    any rule of a particular proposal or grant), else why not, in words. Writes nothing; what
    it offers (the MCP server lists only the tools a principal may call) is decided again by
    the action itself."""
    from splice.approvals.access import require
    from splice.errors import AccessError

    try:
        require(principal, action)
    except AccessError as e:
        return e.message
    return None


def decision_options(ws: Workspace, proposal_id: str, principal: Principal) -> dict[str, Any]:
    """For each decision (approve, reject, apply, undo): None when ``principal`` may make it on
    ``proposal_id`` now, else why not, in words. Writes nothing."""
    from splice.repair import store
    from splice.repair.approvals import options, refresh

    return options(ws, refresh(ws, store.load(ws.state, proposal_id)), principal)


def incident_options(ws: Workspace, incident_id: str, principal: Principal) -> dict[str, Any]:
    """For each decision on an incident (``accept_level``): None when ``principal`` may make it
    now, else why not, in words. Writes nothing; the decision checks again."""
    from splice.repair.accept import options

    return options(ws, incident_id, principal)


def active_stop(ws: Workspace) -> dict[str, Any] | None:
    """The org-wide stop in force (who, why, since when), or None."""
    from dataclasses import asdict

    from splice.approvals.autonomy import active_stop as _active

    s = _active(ws.state)
    return asdict(s) if s is not None else None
