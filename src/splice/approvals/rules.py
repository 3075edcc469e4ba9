"""The rules every request for approval follows, whatever it asks for.

A repair (:mod:`splice.repair.approvals`), read access (:mod:`splice.grants.service`) and a
migration's wave (:mod:`splice.migrate.service`) are each a request that:

1. is decided by a person allowed to decide at all (:func:`may_decide`, the rules of
   :mod:`splice.approvals.access`);
2. is routed to the named owners of a domain (:mod:`splice.approvals.domains`); a domain
   splice.toml no longer declares stops it (:func:`declared_domain`), and only one of its
   owners approves (:func:`is_owner`, :func:`refuse_not_owner`);
3. is never approved by whoever asked for it (:func:`refuse_own`);
4. is not approved (nor applied) while an org-wide stop is active (:func:`refuse_during_stop`);
5. unanswered, asks the next owner every ``[policy].escalate_after`` (:func:`escalations`,
   :func:`owners_asked`) and expires at ``[policy].approval_expiry``, never granted by waiting
   (:func:`expired_comment`);
6. is recorded decision by decision, each with its audit-log entry in one state transaction
   (:mod:`splice.approvals.auditlog`; the request's own store writes both).

What each request is (its statuses, its table, what approving it does) stays in its package.

>>> from splice.config.workspace import DomainSection
>>> pricing = DomainSection(name="pricing", nodes=["pricing:*"], owners=["maria", "sam", "lee"])
>>> owners_asked(pricing, 0), owners_asked(pricing, 5)
(['maria'], ['maria', 'sam', 'lee'])
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NoReturn

from splice.approvals.access import require
from splice.approvals.autonomy import active_stop
from splice.config.workspace import DomainSection, PolicySection, WorkspaceConfig
from splice.errors import ApprovalError
from splice.support.names import name_key
from splice.support.principals import Principal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def may_decide(ws: Workspace, principal: Principal, action: str) -> Principal:
    """``principal`` if it may ``action`` at all under the workspace's ``[policy]`` (the
    server's address named when decisions are made there only): :func:`access.require
    <splice.approvals.access.require>`."""
    return require(principal, action, ws.config.policy, where=ws.config.serve.resource_url)


def hours_text(seconds: float) -> str:
    """
    >>> hours_text(14400), hours_text(5400), hours_text(90)
    ('4h', '1h30m', '1m')
    """
    m = int(seconds // 60)
    h, m = divmod(m, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m or not h else "")


def is_owner(name: str, dom: Any) -> bool:
    """Whether ``name`` is a named owner of domain ``dom`` (names compared normalised).

    >>> from splice.config.workspace import DomainSection
    >>> is_owner(" Maria ", DomainSection(name="pricing", nodes=["pricing:*"], owners=["maria"]))
    True
    """
    return name_key(name) in {name_key(o) for o in dom.owners}


def declared_domain(config: WorkspaceConfig, name: str, *, subject: str, fix: str) -> DomainSection:
    """The domain ``name`` as splice.toml declares it now; a request whose domain is gone is
    one nobody can approve (``subject``: the request, as the message names it).

    >>> from splice.config.workspace import WorkspaceConfig
    >>> declared_domain(WorkspaceConfig(), "pricing", subject="proposal PR-1", fix="...")
    Traceback (most recent call last):
    ...
    splice.errors.ApprovalError: proposal PR-1 belongs to domain 'pricing', which splice.toml no longer declares, so nobody can approve it.
    """
    from splice.approvals.domains import domain_named

    dom = domain_named(config, name)
    if dom is None:
        raise ApprovalError(
            f"{subject} belongs to domain {name!r}, which splice.toml no longer declares, so "
            "nobody can approve it.",
            fix=fix,
        )
    return dom


def owners_asked(dom: DomainSection, escalated: int) -> list[str]:
    """The owners of ``dom`` a request has asked after ``escalated`` escalations: the first,
    plus one per escalation (see the module's example)."""
    return list(dom.owners)[: min(len(dom.owners), 1 + escalated)]


def escalations(policy: Any, owners: list[str], since: float, asked_so_far: int,
                now: float) -> list[tuple[float, str, dict[str, Any]]]:  # fmt: skip
    """The escalations due by ``now`` of a request made at ``since`` that has asked
    ``asked_so_far`` owners: (when, comment, payload) for each next owner to ask.

    >>> from splice.config.workspace import PolicySection
    >>> [(at, c) for at, c, _p in escalations(PolicySection(), ["maria", "sam"], 0.0, 1, 7300.0)]
    [(7200.0, 'unanswered for 2h: sam is asked as well (after maria)')]
    """
    step = policy.escalate_seconds(len(owners))
    due = min(len(owners), 1 + int((now - since) // step))
    out = []
    for i in range(asked_so_far, due):
        at = since + i * step
        out.append((at, f"unanswered for {hours_text(at - since)}: {owners[i]} is asked as well "
                        f"(after {', '.join(owners[:i])})",
                    {"owner": owners[i], "asked": owners[: i + 1]}))  # fmt: skip
    return out


def expired_comment(policy: PolicySection, waited: float) -> str:
    """What an unanswered request's expiry records, after ``waited`` seconds.

    >>> expired_comment(PolicySection(), 14400.0)
    'unanswered for 4h; expired at the 4h limit (never granted by waiting)'
    """
    return (f"unanswered for {hours_text(waited)}; expired at the {policy.approval_expiry} "
            "limit (never granted by waiting)")  # fmt: skip


def refuse_during_stop(ws: Workspace, what: str) -> None:
    """Refuse what is ``what`` (approved, applied, undone) while an org-wide stop is active."""
    s = active_stop(ws.state)
    if s is not None:
        raise ApprovalError(
            f"an org-wide stop is active since {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.since))} "
            f"({s.who}: {s.reason!r}); nothing is {what} until it is lifted.",
            fix="a domain owner runs splice resume",
        )


def refuse_own(name: str, did: str, *, it: str = "it", own: str = "work", fix: str) -> NoReturn:
    """No one approves what they asked for: ``name`` ``did`` (asked for, planned ...).

    >>> refuse_own("maria", "asked for AG-1", own="request", fix="another owner approves it")
    Traceback (most recent call last):
    ...
    splice.errors.ApprovalError: maria asked for AG-1, so maria cannot approve it (no one approves their own request).
    """
    raise ApprovalError(
        f"{name} {did}, so {name} cannot approve {it} (no one approves their own {own}).",
        fix=fix,
    )


def refuse_not_owner(name: str, dom: Any, *, fix: str) -> NoReturn:
    """Only a named owner of the domain approves: ``name`` is not one of ``dom``'s."""
    raise ApprovalError(
        f"{name} is not an owner of domain {dom.name}; its owners are {', '.join(dom.owners)}.",
        fix=fix,
    )


def as_owner(ws: Workspace, dom: Any) -> str:
    """`` --as OWNER`` to add to a command an owner of ``dom`` runs, where the command line may
    name who decides (``[policy] allow_as = true``: the demo, a single-user set-up); else ""."""
    if getattr(ws.config.policy, "allow_as", False) and dom.owners:
        return f" --as {dom.owners[0]}"
    return ""
