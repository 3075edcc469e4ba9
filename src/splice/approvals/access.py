"""Who may decide at all: the rules every principal meets before a decision, in the library.

The rules of a decision itself (an owner of the domain, never the requester, no org-wide stop)
are in :mod:`splice.approvals.rules` (and each request's own package); these come first and
hold whatever layer calls:

- ``propose`` needs the ``propose`` scope; a person or an agent may propose.
- ``approve``, ``reject``, ``apply``, ``undo``, ``stop``, ``resume``, ``accept-level`` (a
  series' new level becomes its normal: :mod:`splice.repair.accept`) and ``close`` (an incident
  Splice repaired by itself at L3: :mod:`splice.repair.close`) need a **person**: an agent never
  decides, whatever its scopes.  ``approve``, ``apply``, ``undo``, ``resume``, ``accept-level``
  and ``close`` need the ``approve`` scope; ``reject`` and ``stop`` the ``propose`` scope.
- With ``[policy] decisions = "server"`` those decisions are refused to the command line's
  principals (``os-user``, ``cli-as``): a decision is made only through ``splice serve``.
- Splice's own principal (:data:`splice.support.principals.SYSTEM`) applies only what it may approve
  itself (:func:`splice.repair.flow.apply` checks the autonomy rules).

>>> from splice.support.principals import Principal
>>> bot = Principal.of("claude", kind="agent", auth="api-key", credential="k1")
>>> require(bot, "propose").name
'claude'
>>> require(bot, "approve")
Traceback (most recent call last):
...
splice.errors.AccessError: claude (agent, api-key) may not approve: an agent never decides (approve, reject, apply, undo, stop, resume, accept-level, close, accept-divergence, rewitness), whatever its scopes; a person does.
"""

from __future__ import annotations

from typing import Any

from splice.errors import AccessError
from splice.support.names import name_key
from splice.support.principals import Principal, os_user, os_user_principal

#: action -> (the scope it needs, whether only a person may do it)
ACTIONS: dict[str, tuple[str, bool]] = {
    "propose": ("propose", False),
    "approve": ("approve", True),
    "reject": ("propose", True),
    "apply": ("approve", True),
    "undo": ("approve", True),
    "stop": ("propose", True),
    "resume": ("approve", True),
    "accept-level": ("approve", True),
    "close": ("approve", True),  # an incident Splice repaired by itself at L3
    # the audit log's witness (splice.approvals.witness_admin)
    "accept-divergence": ("approve", True),
    "rewitness": ("approve", True),
}
#: The command a decision is made with, where it is not ``splice ACTION``.
COMMANDS = {
    "accept-level": "incident accept-level",
    "close": "incident close",
    "accept-divergence": "audit-log accept-divergence",
    "rewitness": "audit-log rewitness",
}
DECISIONS = tuple(a for a, (_s, person) in ACTIONS.items() if person)
#: How the command line authenticates (``[policy] decisions = "server"`` refuses them).
CLI_AUTHS = frozenset({"os-user", "cli-as"})
#: Names Splice records its own decisions and operations under: no person decides under them,
#: no API key is made for them, and an agent claiming one is recorded as ``agent:NAME``.
RESERVED = frozenset({"splice", "splice-autonomy", "splice-operator"})


def require(
    principal: Principal, action: str, policy: Any = None, *, where: str | None = None
) -> Principal:
    """``principal`` if it may ``action`` at all (see module); else an AccessError that names
    the principal and what to do instead.  ``policy``: the workspace's ``[policy]``;
    ``where``: the server's address, named when the policy sends decisions there."""
    if not isinstance(principal, Principal):
        raise TypeError(f"a decision needs a Principal, not {type(principal).__name__}")
    scope, person_only = ACTIONS[action]
    who = principal.label()
    command = COMMANDS.get(action, action)
    if principal.auth == "system":
        # Splice's own dispatch: the operator drafts repairs at L2 and above
        # (splice.operator.ladder); flow.apply holds an apply to the autonomy rules
        if action in ("apply", "propose"):
            return principal
        raise AccessError(f"Splice's own principal may not {action}; a person does.",
                          fix=f"a person runs splice {command}")  # fmt: skip
    if person_only and principal.kind != "person":
        raise AccessError(
            f"{who} may not {action}: an agent never decides ({', '.join(DECISIONS)}), "
            "whatever its scopes; a person does.",
            fix="an agent proposes (splice propose, or the propose tool); a person with the "
            f"approve scope runs splice {command}",
        )
    if person_only and principal.key in RESERVED:
        raise AccessError(
            f"{principal.name!r} is the name Splice records its own decisions under; a person "
            "decides under their own name.",
            fix="decide as yourself (without --as, or with --as YOUR_NAME where allowed)",
        )
    if not principal.may(scope):
        held = ", ".join(sorted(principal.scopes)) or "none"
        raise AccessError(
            f"{who} may not {action}: that needs the {scope!r} scope, and it holds: {held}.",
            fix=f"use a key made with --scopes including {scope} (splice keys create), or ask "
            f"someone who holds it to {action}",
        )
    if (person_only and policy is not None and policy.decisions == "server"
            and principal.auth in CLI_AUTHS):  # fmt: skip
        raise AccessError(
            f'splice.toml sets [policy] decisions = "server": {action} is decided only through '
            f"the server (splice serve{' at ' + where if where else ''}), by an authenticated "
            f"principal; {who} on the command line may not.",
            fix=f"{action} through splice serve's /mcp tools with your API key or your identity "
            'provider\'s sign-in; or set [policy] decisions = "anywhere"',
        )
    return principal


#: The scopes an agent named on the command line holds: it reads and proposes, never decides.
AGENT_SCOPES = ("read", "propose")


def cli_principal(policy: Any, as_name: str | None, kind: str | None = None) -> Principal:
    """The command line's principal: the operating-system user, or ``--as NAME`` (auth
    ``cli-as``) where ``[policy] allow_as = true``; otherwise ``--as`` is refused. ``kind``
    (``--kind``) says whether NAME is a person or an agent; a name ``[policy] agents`` lists
    is an agent (``--kind person`` for it is refused).

    >>> from splice.config.workspace import PolicySection
    >>> pol = PolicySection(allow_as=True, agents=["splice-agent"])
    >>> cli_principal(pol, "splice-agent").label(), cli_principal(pol, "maria").label()
    ('splice-agent (agent, cli-as)', 'maria (person, cli-as)')
    >>> cli_principal(pol, "bot", "agent").scopes == frozenset({"read", "propose"})
    True
    """
    if as_name is None:
        if kind is not None:
            from splice.errors import InputError

            raise InputError(
                "--kind says what --as NAME is; without --as the command line records the "
                "operating-system user, a person.",
                fix="add --as NAME, or drop --kind",
            )
        return os_user_principal()
    if not getattr(policy, "allow_as", False):
        me = os_user()
        raise AccessError(
            f"--as {as_name.strip()!r} is refused: splice.toml [policy] allow_as is false, so the "
            f"command line records who runs it (the operating-system user {me!r}), not a name "
            "given.",
            fix=f"drop --as to decide as {me}; set [policy] allow_as = true only in a single-user "
            "set-up; or decide through splice serve with your own key",
        )
    listed = {name_key(a) for a in getattr(policy, "agents", None) or ()}
    if name_key(as_name) in listed:
        if kind == "person":
            raise AccessError(
                f"{as_name.strip()!r} is listed as an agent in splice.toml [policy] agents; it is "
                "never recorded as a person.",
                fix="drop --kind person (or remove the name from [policy] agents)",
            )
        kind = "agent"
    if kind == "agent":
        return Principal.of(as_name, kind="agent", auth="cli-as", scopes=list(AGENT_SCOPES))
    return Principal.of(as_name, kind="person", auth="cli-as")
