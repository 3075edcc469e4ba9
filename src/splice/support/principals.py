"""Who is asking: the authenticated principal behind every decision.

A :class:`Principal` is what Splice records for a decision (propose, approve, reject, apply,
undo, stop, resume): a normalised name, whether it is a person or an agent, how it was
authenticated, and the scopes it holds. Nothing that decides anything takes a bare name.

How a principal is made:

- ``os-user``: the CLI, run by a user of this machine (the operating-system login).
- ``cli-as``: the CLI with ``--as NAME``, only where ``[policy]`` allows it (single-user set-ups).
- ``api-key``: a key made by ``splice keys create`` and presented to ``splice serve``.
- ``oauth``: a bearer token from the team's identity provider, verified through its JWKS.
- ``stdio``: an agent talking to ``splice mcp`` over stdio (the MCP client's own name).
- ``system``: Splice's own bookkeeping (escalation, expiry, recovery).

>>> p = Principal.of("  Maria ", kind="person", auth="api-key", scopes="read,approve")
>>> p.name, p.may("approve"), p.may("propose")
('Maria', True, False)
>>> p.label()
'Maria (person, api-key)'
>>> Principal.of("x", kind="robot", auth="os-user")
Traceback (most recent call last):
...
splice.errors.InputError: principal kind must be one of person, agent (got 'robot').

A principal is its kind, its name and how it was authenticated, never a name alone: an agent
may not take a person's name (an owner in ``[[domains]]``, a person's API key) or one of
Splice's own; it is recorded as ``agent:NAME``, with the name it claimed
(:func:`unborrowed`).

>>> bot = unborrowed(Principal.of("maria", kind="agent", auth="stdio"), {"maria"})
>>> bot.name, bot.record()["claimed"]
('agent:maria', 'maria')
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from typing import Any

from splice.errors import InputError
from splice.support.names import name_key, normalise_name

#: Every scope a principal may hold, in order of what it allows.
SCOPES = ("read", "propose", "approve")
KINDS = ("person", "agent")
#: The longest name a principal may have (after normalising).
NAME_LIMIT = 64
#: What an agent's name is prefixed with when it claims a person's or a reserved name.
AGENT_PREFIX = "agent:"
AUTH_METHODS = ("os-user", "cli-as", "api-key", "oauth", "stdio", "system")
#: How a principal was authenticated, in words (resolutions, receipts, the page).
AUTH_WORDS = {
    "api-key": "signed in with an API key",
    "oauth": "signed in through the identity provider",
    "cli-as": "named with --as on the command line, not authenticated",
    "os-user": "the operating-system user on the command line",
    "stdio": "a local MCP client",
    "system": "Splice itself",
}


def parse_scopes(raw: str | list[str] | tuple[str, ...] | frozenset[str] | None) -> frozenset[str]:
    """``"read,propose"`` (or a list) as a set of known scopes; unknown ones are an InputError.

    >>> sorted(parse_scopes("read, propose"))
    ['propose', 'read']
    """
    if raw is None:
        return frozenset()
    items = raw.replace(" ", ",").split(",") if isinstance(raw, str) else list(raw)
    out = {s.strip().lower() for s in items if s and s.strip()}
    unknown = sorted(out - set(SCOPES))
    if unknown:
        raise InputError(
            f"unknown scope {', '.join(map(repr, unknown))}.",
            fix=f"scopes are {', '.join(SCOPES)} (comma-separated)",
        )
    return frozenset(out)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``name`` is normalised; compare with :attr:`key`."""

    name: str
    kind: str
    auth: str
    scopes: frozenset[str] = field(default_factory=lambda: frozenset(SCOPES))
    #: What identified it beyond the name: an API key's id, a token's subject and issuer.
    credential: str | None = None
    #: The name an agent claimed when it was not given it (a person's: ``name`` is then
    #: ``agent:`` + the claimed name); None when it has the name it asked for.
    claimed: str | None = None

    @classmethod
    def of(
        cls,
        name: str,
        *,
        kind: str,
        auth: str,
        scopes: str | list[str] | frozenset[str] | None = None,
        credential: str | None = None,
        claimed: str | None = None,
    ) -> Principal:
        clean = normalise_name(name)
        if not clean:
            raise InputError(
                "a principal needs a name (the one given has only invisible or blank characters).",
                fix="give a visible name",
            )
        own = normalise_name(claimed) if claimed else clean  # the prefix is not the name's
        if len(own) > NAME_LIMIT:
            raise InputError(
                f"a principal's name is at most {NAME_LIMIT} characters "
                f"(the one given has {len(own)}: {own[:20]!r}...).",
                fix=f"give a name of at most {NAME_LIMIT} characters",
            )
        if kind == "person" and name_key(clean).startswith(AGENT_PREFIX):
            raise InputError(
                f"{clean!r} is not a person's name: names beginning {AGENT_PREFIX!r} are agents'.",
                fix="give the person's own name",
            )
        if kind not in KINDS:
            raise InputError(
                f"principal kind must be one of {', '.join(KINDS)} (got {kind!r}).",
                fix="use --kind person or --kind agent",
            )
        if auth not in AUTH_METHODS:
            raise InputError(f"unknown authentication method {auth!r}.")
        held = frozenset(SCOPES) if scopes is None else parse_scopes(scopes)
        return cls(clean, kind, auth, held, credential, own if claimed else None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Principal:
        """The principal :meth:`as_dict` wrote (a session's, a token's claims).

        >>> p = Principal.of("lee", kind="person", auth="api-key", scopes="read", credential="k1")
        >>> Principal.from_dict(p.as_dict()) == p
        True
        """
        return cls.of(
            data["name"],
            kind=data["kind"],
            auth=data["auth"],
            scopes=data.get("scopes") or [],
            credential=data.get("credential"),
            claimed=data.get("claimed"),
        )

    @property
    def key(self) -> str:
        """The comparison form of the name (case-folded)."""
        return name_key(self.name)

    def may(self, scope: str) -> bool:
        return scope in self.scopes

    def label(self) -> str:
        return f"{self.name} ({self.kind}, {self.auth})"

    def record(self) -> dict[str, Any]:
        """What a decision records of its principal: name, kind, how authenticated, credential
        (and, for an agent that claimed a name it was not given, the name it claimed).

        >>> Principal.of("lee", kind="person", auth="api-key", credential="k1").record()
        {'name': 'lee', 'kind': 'person', 'auth': 'api-key', 'credential': 'k1'}
        """
        out = {"name": self.name, "kind": self.kind, "auth": self.auth,
               "credential": self.credential}  # fmt: skip
        if self.claimed:
            out["claimed"] = self.claimed
        return out

    def as_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "kind": self.kind,
            "auth": self.auth,
            "scopes": sorted(self.scopes, key=SCOPES.index),
            "credential": self.credential,
        }
        if self.claimed:
            out["claimed"] = self.claimed
        return out


#: Splice's own bookkeeping (escalation, expiry, recovery).
SYSTEM = Principal("splice", "agent", "system", frozenset(SCOPES))


def unborrowed(principal: Principal, taken: set[str] | frozenset[str]) -> Principal:
    """``principal`` itself, or, for an agent whose name is in ``taken`` (name keys: a person's
    names and Splice's reserved ones), the same agent named ``agent:NAME`` with the name it
    claimed recorded. A person is returned unchanged.

    >>> unborrowed(Principal.of("Maria", kind="agent", auth="stdio"), {"maria"}).label()
    'agent:Maria (agent, stdio)'
    >>> unborrowed(Principal.of("claude", kind="agent", auth="stdio"), {"maria"}).name
    'claude'
    """
    if principal.kind != "agent" or principal.key not in taken:
        return principal
    return Principal.of(
        AGENT_PREFIX + principal.name,
        kind="agent",
        auth=principal.auth,
        scopes=principal.scopes,
        credential=principal.credential,
        claimed=principal.name,
    )


Recorded = dict[str, Any] | Principal | None


def _identity(record: Recorded) -> tuple[Any, ...] | None:
    if record is None:
        return None
    if isinstance(record, Principal):
        record = record.record()
    return (name_key(str(record.get("name") or "")), record.get("kind"), record.get("auth"),
            record.get("credential"))  # fmt: skip


def same_identity(a: Recorded, b: Recorded) -> bool:
    """Whether two recorded principals are the same one.

    - different names (compared normalised) are never the same;
    - a record from before principals (no kind) is compared by its name alone;
    - a person and an agent are never the same, whatever their names;
    - two persons of one name are the same person, however each signed in (a person does not
      become someone else by using an API key instead of the command line);
    - two agents of one name are the same when they authenticated the same way with the same
      credential (where both have one).

    >>> maria = {"name": "maria", "kind": "person", "auth": "cli-as", "credential": None}
    >>> bot = {"name": "maria", "kind": "agent", "auth": "stdio", "credential": "os-user:x"}
    >>> same_identity(maria, bot), same_identity(maria, {**maria, "auth": "api-key"})
    (False, True)
    >>> same_identity({"name": "Maria", "kind": None}, maria)
    True
    """
    x, y = _identity(a), _identity(b)
    if x is None or y is None or x[0] != y[0]:
        return False
    if x[1] is None or y[1] is None:  # recorded before principals: by name
        return True
    if x[1] != y[1]:
        return False
    if x[1] == "person":
        return True
    return x[2] == y[2] and (x[3] is None or y[3] is None or x[3] == y[3])


def describe(record: dict[str, Any] | None) -> str:
    """A recorded principal in words (decisions from before principals knew no kind).

    >>> describe({"name": "maria", "kind": "person", "auth": "api-key", "credential": "k1"})
    'maria (person, api-key k1)'
    >>> describe({"name": "sam", "kind": None, "auth": "cli-as", "credential": None})
    'sam (cli-as)'
    """
    if not record:
        return "-"
    how = ", ".join(str(x) for x in (record.get("kind"), record.get("auth")) if x)
    cred = record.get("credential")
    how = f"{how} {cred}" if cred else how
    return f"{record.get('name')} ({how})" if how else str(record.get("name"))


def os_user() -> str:
    """The operating-system login running this process (``USER`` when the lookup fails)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER") or f"uid-{os.getuid()}"


def os_user_principal() -> Principal:
    """The CLI's principal when no ``--as`` is given: the login, as a person with every scope."""
    return Principal.of(os_user(), kind="person", auth="os-user")
