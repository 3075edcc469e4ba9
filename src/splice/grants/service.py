"""Access grants: request, approve (which grants), reject, revoke, and end what is due.

The rules are every request's (:mod:`splice.approvals.rules`): a request is routed to the owners
of the one domain that covers its nodes; only a named owner approves, never the requester;
nothing is approved during an org-wide stop; an unanswered request escalates to the next owner
and then expires, never granting by waiting.  Approving grants at once, on the warehouse, for
the hours asked; when they are up the grant is revoked by whichever comes first: the running
``splice serve``'s scheduler or the next command (:func:`end_due`).  A revoke that fails is
kept and retried; a grant interrupted while granting is revoked and marked failed.

A person may end access early (:func:`revoke`): an owner of the domain, or whoever asked for
it.  Revoking takes access away, so it is allowed during a stop.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.approvals.domains import domain_for, domain_named
from splice.approvals.rules import (
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
from splice.errors import ApprovalError, GrantError, InputError, SpliceError
from splice.grants import store
from splice.grants.model import HELD, Grant
from splice.state.sql import statement
from splice.support.names import name_key, normalise_name
from splice.support.principals import SYSTEM, Principal
from splice.warehouse.engines import capabilities, engine_module

_LAST_WRITE_SELECT = statement("SELECT updated_at FROM access_grants WHERE grant_id = ?")
_DUE_COUNT_SELECT = statement(
    "SELECT COUNT(*) FROM access_grants WHERE target = ? AND ((status = 'pending' AND expires_at <= ?) OR (status = 'granted' AND until <= ?) OR (status = 'granting' AND updated_at <= ?))"
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: A grant still ``granting`` this long after its last write was interrupted (granting takes
#: well under a second).
STUCK_GRANTING = 120.0


def _where(ws: Workspace) -> str | None:
    return ws.config.serve.resource_url


def _engine(ws: Workspace) -> Any:
    """The grants module of the workspace's warehouse engine (``warehouse/<engine>/grants.py``)."""
    return engine_module(ws.config.warehouse.type, "grants")


def _check_warehouse(ws: Workspace) -> None:
    kind = ws.config.warehouse.type
    if not capabilities(kind).grants:
        raise GrantError(
            f"the warehouse is {kind}, which has no users or grants: read access cannot be "
            "granted relation by relation (whoever can read the file reads all of it).",
            fix='grant access on a warehouse with roles ([warehouse] type = "postgres"), or '
            "share a copy of the relations instead",
        )


def _nodes_and_domain(ws: Workspace, selector: str) -> tuple[list[str], list[str], str]:
    """The nodes ``selector`` picks that write a relation, those relations (schema.name), and
    the one domain covering them all."""
    from splice.graph.selectors import select

    graph = ws.graph()
    picked = select(graph, selector)
    nodes: list[str] = []
    relations: list[str] = []
    database = name_key(ws.default_catalog or "")
    for nid in picked:
        node = graph.nodes[nid]
        rels = [r for r in [node.writes, *node.also_writes] if r is not None]
        if not rels and node.kind in ("source", "external") and len(node.reads) == 1:
            rels = list(node.reads)
        for r in rels:
            if r.catalog and name_key(r.catalog) != database:
                raise GrantError(
                    f"{nid} writes {r.key}, in database {r.catalog}, not the warehouse's "
                    f"database {ws.default_catalog}: a grant here cannot reach it.",
                    fix="request access to nodes of this warehouse's database",
                )
            key = f"{r.schema}.{r.name}"
            if key not in relations:
                relations.append(key)
        if rels:
            nodes.append(nid)
    if not relations:
        raise GrantError(
            f"{selector!r} picks {len(picked)} node(s) ({', '.join(picked[:5])}), none of which "
            "writes a relation in the warehouse: there is nothing to grant.",
            fix="select models, seeds, snapshots or ingestion jobs (splice ls -s SELECTOR)",
        )
    domains: dict[str, list[str]] = {}
    for nid in nodes:
        dom = domain_for(graph, ws.config, nid)
        if dom is None:
            raise GrantError(
                f"{nid} is in no domain, so nobody may approve access to it.",
                fix="add a selector matching it to a [[domains]] entry in splice.toml",
            )
        domains.setdefault(dom.name, []).append(nid)
    if len(domains) > 1:
        parts = "; ".join(f"{d}: {', '.join(ns[:3])}" for d, ns in domains.items())
        raise GrantError(
            f"{selector!r} picks nodes of {len(domains)} domains ({parts}); each domain's owners "
            "approve access to their own nodes.",
            fix="request each domain's nodes separately (one splice access request per domain)",
        )
    return nodes, relations, next(iter(domains))


def role_of(config: Any, raw: str) -> str:
    """The warehouse role ``--for`` names: a principal's role from ``[access] roles`` (names
    compared normalised), else the name itself.

    >>> from splice.config.workspace import WorkspaceConfig
    >>> cfg = WorkspaceConfig.model_validate({"access": {"roles": {"Maria": "maria_ro"}}})
    >>> role_of(cfg, " maria"), role_of(cfg, "analyst")
    ('maria_ro', 'analyst')
    """
    name = normalise_name(raw)
    mapped = {name_key(k): v for k, v in config.access.roles.items()}
    return mapped.get(name_key(name), name)


def _grantee(ws: Workspace, con: Any, raw: str) -> str:
    name = role_of(ws.config, raw)
    if not name or name_key(name) == "public":
        raise InputError(
            f"--for {raw!r} names no role: access is granted to one warehouse role.",
            fix="pass --for ROLE, the warehouse role of the person or service (not PUBLIC)",
        )
    if name.startswith(ws.config.access.role_prefix):
        raise InputError(
            f"--for {name!r} is one of Splice's own grant roles ({ws.config.access.role_prefix}*).",
            fix="pass the warehouse role of the person or service that reads",
        )
    found = _engine(ws).role_exists(con, name)
    if found is None:
        raise GrantError(
            f"the warehouse has no role {name!r} to grant access to.",
            fix="pass --for with an existing role (role names are case-sensitive), or have the "
            "warehouse's administrator create it",
        )
    if found[0]:
        raise GrantError(
            f"{name!r} is a superuser: it reads everything already, so a grant would change "
            "nothing and prove nothing.",
            fix="grant to the role of the person or service, not to a superuser",
        )
    return name


def request(ws: Workspace, selector: str, *, grantee: str, why: str, hours: float,
            principal: Principal, now: float | None = None) -> Grant:  # fmt: skip
    """Ask for read access to what ``selector``'s nodes write, for ``grantee``, for ``hours``."""
    may_decide(ws, principal, "propose")
    _check_warehouse(ws)
    if not why or not why.strip():
        raise InputError("an access request needs a reason.", fix="pass --why TEXT")
    limit = ws.config.access.max_hours
    if not 0 < hours <= limit:
        raise InputError(
            f"--hours {hours:g} is out of range: a grant runs more than 0 and at most {limit:g} "
            "hours ([access] max_hours).",
            fix=f"pass --hours between 0 and {limit:g}",
        )
    nodes, relations, domain = _nodes_and_domain(ws, selector)
    from splice.warehouse.connect import connect

    with connect(ws, "splice access request") as con:
        who = _grantee(ws, con, grantee)
        gone = _engine(ws).missing(con, relations)
    if gone:
        raise GrantError(
            f"{', '.join(gone)} {'is' if len(gone) == 1 else 'are'} not in the warehouse (not "
            f"built in target {ws.target} yet).",
            fix="build them first (splice run), then request again",
        )
    now = time.time() if now is None else now
    g = Grant(store.new_grant_id(ws.state), ws.target, domain, selector, relations, who,
              why.strip(), float(hours), "pending", principal.name, now,
              now + ws.config.policy.expiry_seconds, nodes=nodes)  # fmt: skip
    return store.save(ws.state, g, principal=principal, now=now)


def _domain(ws: Workspace, g: Grant) -> Any:
    return declared_domain(ws.config, g.domain, subject=f"access grant {g.grant_id}",
                           fix=f"declare [[domains]] {g.domain!r} with its owners again, or "
                           "request anew")  # fmt: skip


def asked(ws: Workspace, g: Grant) -> list[str]:
    """The owners asked so far: the first, plus one per escalation."""
    dom = domain_named(ws.config, g.domain)
    if dom is None:
        return []
    n = sum(1 for d in store.decisions(ws.state, g.grant_id) if d["decision"] == "escalate")
    return owners_asked(dom, n)


def refresh(ws: Workspace, g: Grant, *, now: float | None = None) -> Grant:
    """Expiry and escalation of a pending request as of ``now``; returns it as stored."""
    if g.status != "pending":
        return g
    now = time.time() if now is None else now
    policy = ws.config.policy
    if now >= g.expires_at:
        return store.transition(ws.state, g.grant_id, "expired", principal=SYSTEM, now=now,
                                comment=expired_comment(policy, now - g.created_at))  # fmt: skip
    dom = domain_named(ws.config, g.domain)
    if dom is None:
        return g
    due = escalations(policy, list(dom.owners), g.created_at, len(asked(ws, g)), now)
    if due:
        with ws.state.transaction() as conn:
            for at, comment, payload in due:
                store.log(conn, g, "escalate", principal=SYSTEM, at=at, comment=comment,
                          payload=payload)  # fmt: skip
    return store.load(ws.state, g.grant_id)


def _check_approve(ws: Workspace, cur: Grant, name: str, dom: Any) -> None:
    """Why ``name`` may not approve ``cur`` now (an ApprovalError), or nothing."""
    refuse_during_stop(ws, "approved")
    if name_key(name) == name_key(cur.created_by):
        others = ", ".join(o for o in dom.owners if name_key(o) != name_key(name))
        refuse_own(name, f"asked for {cur.grant_id}", own="request",
                   fix=f"another owner of {dom.name} ({others or 'none declared'}) approves it")  # fmt: skip
    if not is_owner(name, dom):
        refuse_not_owner(name, dom, fix=f"one of them runs splice access approve {cur.grant_id}")
    if cur.status != "pending":
        raise ApprovalError(
            f"access grant {cur.grant_id} is {cur.status}; only a pending request is approved.",
            fix=(f"request again: splice access request {cur.selector!r} --for {cur.grantee}"
                 if cur.status in ("expired", "rejected", "failed", "ended")
                 else f"splice access show {cur.grant_id}"),
        )  # fmt: skip


def approve(ws: Workspace, grant_id: str, *, principal: Principal, comment: str | None = None,
            now: float | None = None) -> Grant:  # fmt: skip
    """A named owner of the domain, not the requester, approves: the grant is made at once."""
    name = may_decide(ws, principal, "approve").name
    _check_warehouse(ws)
    g = refresh(ws, store.load(ws.state, grant_id), now=now)
    dom = _domain(ws, g)

    def check(cur: Grant) -> None:
        _check_approve(ws, cur, name, dom)

    at = time.time() if now is None else now

    def plan(cur: Grant) -> None:
        cur.role = _engine(ws).role_for(cur.grant_id, ws.config.access.role_prefix)
        cur.statements = _engine(ws).grant_statements(cur.role, cur.grantee, cur.relations)
        cur.revoke_statements = _engine(ws).revoke_statements(cur.role)
        cur.until = at + cur.hours * 3600

    g = store.transition(ws.state, g.grant_id, "granting", principal=principal, now=at,
                         comment=comment, check=check, change=plan)  # fmt: skip
    from splice.warehouse.connect import connect

    try:
        with connect(ws, f"granting {g.grant_id}") as con:
            _engine(ws).run(con, g.statements, f"granting {g.grant_id}")
    except SpliceError as e:  # one transaction on the warehouse: nothing of it should hold
        try:
            _take_back(ws, g)  # made sure (a commit whose answer was lost)
        except SpliceError:
            raise e from None  # still granting: the next pass takes it back, then fails it
        store.transition(ws.state, g.grant_id, "failed", principal=SYSTEM, comment=e.message)
        raise
    # killed here, the row stays granting: end_due revokes whatever may be there

    def started(cur: Grant) -> None:
        cur.granted_at = at

    return store.transition(
        ws.state, g.grant_id, "granted", principal=SYSTEM, now=time.time(), change=started,
        comment=f"{g.grantee} reads {len(g.relations)} relation(s) through role {g.role} until "
        f"{time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(g.until))}",
        payload={"role": g.role, "statements": g.statements, "until": g.until},
    )  # fmt: skip


def _owner_or_requester(g: Grant, name: str, dom: Any, action: str) -> None:
    """Refuse ``action`` to anyone but an owner of the domain and whoever asked for ``g``."""
    if not (is_owner(name, dom) or name_key(name) == name_key(g.created_by)):
        raise ApprovalError(
            f"{name} may not {action} {g.grant_id}: only an owner of {dom.name} "
            f"({', '.join(dom.owners)}) or its requester ({g.created_by}) may.",
            fix=f"one of them runs splice access {action} {g.grant_id} --reason ...",
        )


def _check_reject(cur: Grant, name: str, dom: Any) -> None:
    """Why ``name`` may not reject ``cur`` now, or nothing."""
    _owner_or_requester(cur, name, dom, "reject")
    if cur.status != "pending":
        raise ApprovalError(
            f"access grant {cur.grant_id} is {cur.status}; only a pending request is rejected.",
            fix=(f"splice access revoke {cur.grant_id} --reason ... ends a granted one"
                 if cur.status == "granted" else f"splice access show {cur.grant_id}"),
        )  # fmt: skip


def reject(ws: Workspace, grant_id: str, *, principal: Principal, reason: str,
           now: float | None = None) -> Grant:  # fmt: skip
    """An owner refuses a pending request, or its requester withdraws it."""
    name = may_decide(ws, principal, "reject").name
    if not reason or not reason.strip():
        raise ApprovalError("a rejection needs a reason.", fix="pass --reason TEXT")
    g = refresh(ws, store.load(ws.state, grant_id), now=now)
    dom = _domain(ws, g)

    def check(cur: Grant) -> None:
        _check_reject(cur, name, dom)

    return store.transition(ws.state, g.grant_id, "rejected", principal=principal, now=now,
                            comment=reason.strip(), check=check)  # fmt: skip


def _take_back(ws: Workspace, g: Grant) -> None:
    """Run the grant's revoke on the warehouse (nothing to do when its role is gone)."""
    from splice.warehouse.connect import connect

    if not g.role:
        return
    with connect(ws, f"revoking {g.grant_id}") as con:
        if _engine(ws).role_exists(con, g.role) is None:
            return
        _engine(ws).run(
            con,
            g.revoke_statements or _engine(ws).revoke_statements(g.role),
            f"revoking {g.grant_id}",
        )


def _end(
    ws: Workspace, g: Grant, to: str, *, principal: Principal, reason: str, now: float
) -> Grant:
    _take_back(ws, g)

    def ended(cur: Grant) -> None:
        cur.ended_at, cur.end_reason, cur.last_error = now, reason, None

    done = store.transition(ws.state, g.grant_id, to, principal=principal, now=now,
                            comment=reason, change=ended,
                            payload={"role": g.role, "statements": g.revoke_statements})  # fmt: skip
    if to == "ended":
        from splice.grants.receipt import record_receipt

        record_receipt(ws, done)
    return done


def _check_revoke(g: Grant, name: str, dom: Any) -> None:
    """Why ``name`` may not revoke ``g`` now, or nothing."""
    _owner_or_requester(g, name, dom, "revoke")
    if g.status == "pending":
        raise ApprovalError(
            f"access grant {g.grant_id} is pending: nothing is granted yet.",
            fix=f"splice access reject {g.grant_id} --reason ... refuses the request",
        )
    if g.status != "granted":
        raise ApprovalError(
            f"access grant {g.grant_id} is {g.status}; only a granted one is revoked.",
            fix=f"splice access show {g.grant_id}",
        )


def revoke(ws: Workspace, grant_id: str, *, principal: Principal, reason: str,
           now: float | None = None) -> Grant:  # fmt: skip
    """End a grant early: an owner of its domain, or whoever asked for it."""
    name = may_decide(ws, principal, "reject").name
    if not reason or not reason.strip():
        raise ApprovalError("ending access early needs a reason.", fix="pass --reason TEXT")
    g = store.load(ws.state, grant_id)
    dom = _domain(ws, g)
    _check_revoke(g, name, dom)
    now = time.time() if now is None else now
    return _end(ws, g, "ended", principal=principal, now=now,
                reason=f"revoked by {name} before its time: {reason.strip()}")  # fmt: skip


def end_due(ws: Workspace, *, now: float | None = None) -> list[str]:
    """Expire, escalate and revoke what is due as of ``now``: requests past their expiry,
    grants past their time, grants a killed process left ``granting``. Returns a line per
    revoke that failed (kept, and tried again at the next pass)."""
    now = time.time() if now is None else now
    problems: list[str] = []
    # this target's only: another target's grants are on its own warehouse
    for g in store.list_grants(ws.state, target=ws.target, statuses={"pending", *HELD}):
        if g.status == "pending":
            refresh(ws, g, now=now)
            continue
        stuck = g.status == "granting" and _last_write(ws, g) < now - STUCK_GRANTING
        due = g.status == "granted" and g.until is not None and g.until <= now
        if not (stuck or due):
            continue
        try:
            if stuck:
                _end(ws, g, "failed", principal=SYSTEM, now=now,
                     reason="interrupted while granting: whatever was granted is revoked")  # fmt: skip
            else:
                at = time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(g.until))
                _end(ws, g, "ended", principal=SYSTEM, now=now,
                     reason=f"its time was up at {at} ({g.hours:g} h)")  # fmt: skip
        except SpliceError as e:  # the warehouse refused or is down: kept, tried again
            g.last_error = e.message
            store.update(ws.state, g, now=_last_write(ws, g))
            problems.append(f"{g.grant_id}: revoking failed, tried again at the next pass: "
                            f"{e.message}")  # fmt: skip
    return problems


def _last_write(ws: Workspace, g: Grant) -> float:
    row = ws.state.conn.execute(_LAST_WRITE_SELECT, (g.grant_id,)).fetchone()
    return float(row[0]) if row else 0.0


def due_count(ws: Workspace, now: float | None = None) -> int:
    """How many grants a pass of :func:`end_due` would act on (cheap: one query)."""
    now = time.time() if now is None else now
    row = ws.state.conn.execute(
        _DUE_COUNT_SELECT,
        (ws.target, now, now, now - STUCK_GRANTING),
    ).fetchone()
    return int(row[0])


def options(ws: Workspace, g: Grant, principal: Principal) -> dict[str, str | None]:
    """What ``principal`` may do to ``g`` now: ``{action: None}`` when it may, else why not
    (the rules :func:`approve`, :func:`reject` and :func:`revoke` enforce, checked without
    writing anything). For showing buttons only: every decision checks again."""
    checks = {
        "approve": ("approve", lambda name, dom: _check_approve(ws, g, name, dom)),
        "reject": ("reject", lambda name, dom: _check_reject(g, name, dom)),
        "revoke": ("reject", lambda name, dom: _check_revoke(g, name, dom)),
    }
    out: dict[str, str | None] = {}
    for action, (rule, check) in checks.items():
        try:
            name = may_decide(ws, principal, rule).name
            check(name, _domain(ws, g))
            out[action] = None
        except SpliceError as e:
            out[action] = e.message
    return out


def reassert(ws: Workspace, *, now: float | None = None) -> list[str]:
    """Grant again what every grant held in this target holds: a tool that rebuilds a relation
    (dbt's table materialization drops and renames) takes its privileges with it. Run after
    every build. Returns a line per grant that could not be made again (a relation that is
    gone), which keeps what it could."""
    from splice.warehouse.connect import connect

    now = time.time() if now is None else now
    held = [g for g in store.list_grants(ws.state, target=ws.target, statuses={"granted"})
            if g.role and (g.until or 0) > now]  # fmt: skip
    if not held:
        return []
    problems = []
    with connect(ws, "keeping access grants") as con:
        for g in held:
            assert g.role is not None
            gone = _engine(ws).missing(con, g.relations)
            there = [r for r in g.relations if r not in gone]
            if gone:
                problems.append(f"{g.grant_id}: {', '.join(gone)} no longer in the warehouse; "
                                f"{g.grantee} cannot read it until it is built again")  # fmt: skip
            if there:
                _engine(ws).run(
                    con, _engine(ws).reassert_statements(g.role, there), f"keeping {g.grant_id}"
                )
    return problems
