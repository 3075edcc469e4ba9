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
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from typing import Any

from splice.errors import InputError
from splice.names import name_key, normalise_name

#: Every scope a principal may hold, in order of what it allows.
SCOPES = ("read", "propose", "approve")
KINDS = ("person", "agent")
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

    @classmethod
    def of(
        cls,
        name: str,
        *,
        kind: str,
        auth: str,
        scopes: str | list[str] | frozenset[str] | None = None,
        credential: str | None = None,
    ) -> Principal:
        clean = normalise_name(name)
        if not clean:
            raise InputError(
                "a principal needs a name (the one given has only invisible or blank characters).",
                fix="give a visible name",
            )
        if kind not in KINDS:
            raise InputError(
                f"principal kind must be one of {', '.join(KINDS)} (got {kind!r}).",
                fix="use --kind person or --kind agent",
            )
        if auth not in AUTH_METHODS:
            raise InputError(f"unknown authentication method {auth!r}.")
        held = frozenset(SCOPES) if scopes is None else parse_scopes(scopes)
        return cls(clean, kind, auth, held, credential)

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
        """What a decision records of its principal: name, kind, how authenticated, credential.

        >>> Principal.of("lee", kind="person", auth="api-key", credential="k1").record()
        {'name': 'lee', 'kind': 'person', 'auth': 'api-key', 'credential': 'k1'}
        """
        return {"name": self.name, "kind": self.kind, "auth": self.auth,
                "credential": self.credential}  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "auth": self.auth,
            "scopes": sorted(self.scopes, key=SCOPES.index),
            "credential": self.credential,
        }


#: Splice's own bookkeeping (escalation, expiry, recovery).
SYSTEM = Principal("splice", "agent", "system", frozenset(SCOPES))


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
