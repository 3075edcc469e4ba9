"""API keys: how a person or an agent proves who it is to ``splice serve``.

A key reads ``spk_<id>_<secret>``.  It is shown once, when it is made; Splice's state keeps
only the id, the principal it stands for (name, person or agent, scopes) and a salted scrypt
hash of the secret (a random salt per key), never the key itself.  Presenting a key gives the
:class:`~splice.support.principals.Principal` it stands for, with auth ``api-key`` and the key's id
as its credential; a malformed, unknown, wrong or revoked key is one AccessError that does not
say which part was wrong.  Making and revoking a key are decisions: each is one transaction
with its audit-log entry.

>>> parse_key("spk_0123456789ab_" + "s" * 43)[0]
'0123456789ab'
>>> parse_key("spk_nothex_secret") is None
True
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from splice.approvals import auditlog
from splice.approvals.access import RESERVED
from splice.errors import AccessError, InputError
from splice.state.sql import statement
from splice.state.store import StateStore
from splice.support.names import name_key
from splice.support.principals import SCOPES, Principal, parse_scopes, unborrowed

_PERSON_NAMES_SELECT = statement("SELECT DISTINCT principal FROM api_keys WHERE kind = 'person'")
_CREATE_INSERT = statement(
    "INSERT INTO api_keys(key_id, principal, kind, scopes, secret_hash, created_at, created_by) VALUES (?,?,?,?,?,?,?)"
)
_REVOKE_UPDATE = statement("UPDATE api_keys SET revoked_at=?, revoked_by=? WHERE key_id=?")
_PRESENTED_SELECT = statement(
    "SELECT principal, kind, scopes, secret_hash, revoked_at, last_used_at FROM api_keys WHERE key_id = ?"
)
_IN_USE_UPDATE = statement("UPDATE api_keys SET last_used_at=? WHERE key_id=?")
_ACTIVE_SELECT = statement("SELECT revoked_at FROM api_keys WHERE key_id = ?")

PREFIX = "spk"
_KEY = re.compile(r"^spk_([0-9a-f]{12})_([A-Za-z0-9_-]{32,128})$")
#: scrypt's cost: 16 MiB and about 50 ms per check (a key's secret has 256 random bits)
_N, _R, _P = 2**14, 8, 1
INVALID = "invalid or revoked API key."
INVALID_FIX = "splice keys list shows the keys; splice keys create makes a new one"


def parse_key(raw: str) -> tuple[str, str] | None:
    """(id, secret) of a well-formed key, else None."""
    m = _KEY.match(raw.strip()) if isinstance(raw, str) else None
    return (m.group(1), m.group(2)) if m else None


def _hash(secret: str, salt: bytes, n: int = _N, r: int = _R, p: int = _P) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024)


def hash_secret(secret: str) -> str:
    """``scrypt$n$r$p$salt$hash`` with a fresh random salt."""
    salt = secrets.token_bytes(16)
    return f"scrypt${_N}${_R}${_P}${salt.hex()}${_hash(secret, salt).hex()}"


def check_secret(secret: str, stored: str) -> bool:
    """Whether ``secret`` hashes to ``stored`` (compared in constant time)."""
    try:
        algo, n, r, p, salt, want = stored.split("$")
        if algo != "scrypt":
            return False
        got = _hash(secret, bytes.fromhex(salt), int(n), int(r), int(p))
        return hmac.compare_digest(got, bytes.fromhex(want))
    except ValueError:
        return False


@functools.cache
def _dummy() -> str:
    """A hash no secret matches, checked when the key is unknown (made once, when needed)."""
    return hash_secret(secrets.token_urlsafe(32))


@dataclass(frozen=True)
class KeyRecord:
    """A key as stored (never its secret)."""

    key_id: str
    principal: str
    kind: str
    scopes: tuple[str, ...]
    created_at: float
    created_by: str
    last_used_at: float | None
    revoked_at: float | None
    revoked_by: str | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.key_id, "principal": self.principal, "kind": self.kind,
                "scopes": list(self.scopes), "created_at": self.created_at,
                "created_by": self.created_by, "last_used_at": self.last_used_at,
                "revoked": self.revoked, "revoked_at": self.revoked_at,
                "revoked_by": self.revoked_by}  # fmt: skip


_COLUMNS = ("key_id, principal, kind, scopes, created_at, created_by, last_used_at, revoked_at, "
            "revoked_by")  # fmt: skip
_GET = statement(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?")
_LIST = statement(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id")


def _record(row: tuple[Any, ...]) -> KeyRecord:
    scopes = tuple(s for s in SCOPES if s in str(row[3]).split(","))
    return KeyRecord(row[0], row[1], row[2], scopes, row[4], row[5], row[6], row[7], row[8])


def create(
    state: StateStore,
    *,
    name: str,
    kind: str,
    scopes: str | list[str] | tuple[str, ...],
    principal: Principal,
    persons: Iterable[str] = (),
    now: float | None = None,
) -> tuple[KeyRecord, str]:
    """Make a key for ``name``; returns (its record, the key: shown once, never stored).
    ``principal`` (a person) is who made it, recorded in the audit log.  A key is never made
    for one of Splice's reserved names, nor an agent's key for a person's name (``persons``:
    the domains' owners; people with keys are added here)."""
    if principal.kind != "person":
        raise AccessError(f"{principal.label()} may not make API keys: a person does.",
                          fix="a person runs splice keys create")  # fmt: skip
    held = parse_scopes(scopes)
    if not held:
        raise InputError("a key needs at least one scope.",
                         fix=f"--scopes with some of {','.join(SCOPES)}")  # fmt: skip
    who = Principal.of(name, kind=kind, auth="api-key", scopes=held)  # checks name and kind
    if who.key in RESERVED:
        raise InputError(
            f"{who.name!r} is a name Splice records its own decisions under "
            f"({', '.join(sorted(RESERVED))}); no key is made for it.",
            fix="make the key for the person's or the agent's own name",
        )
    if who.kind == "agent" and who.key in {name_key(p) for p in persons} | person_names(state):
        raise InputError(
            f"{who.name!r} is a person's name (a domain owner or a person's API key); an agent's "
            "key may not take it.",
            fix=f"name the agent after itself (for example --principal {who.name}-agent)",
        )
    if who.kind == "agent" and "approve" in held:
        raise AccessError(
            f"an agent's key cannot hold the approve scope ({who.name}): an agent never "
            "approves, applies or undoes.",
            fix="give the agent --scopes read,propose",
        )
    now = time.time() if now is None else now
    key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    scope_text = ",".join(s for s in SCOPES if s in held)
    with state.transaction() as conn:
        conn.execute(
            _CREATE_INSERT,
            (key_id, who.name, who.kind, scope_text, hash_secret(secret), now, principal.name),
        )
        auditlog.append(conn, kind="key-create", principal=principal, proposal_id=None, at=now,
                        payload={"key_id": key_id, "for": who.name, "kind": who.kind,
                                 "scopes": scope_text.split(",")})  # fmt: skip
    return get(state, key_id), f"{PREFIX}_{key_id}_{secret}"


def person_names(state: StateStore) -> set[str]:
    """The names (name keys) of every person an API key was made for, revoked keys included."""
    rows = state.conn.execute(_PERSON_NAMES_SELECT)
    return {name_key(r[0]) for r in rows}


def taken_names(config: Any, state: StateStore) -> frozenset[str]:
    """The names (name keys) no agent may take: every owner in ``[[domains]]``, every person
    an API key was made for (revoked ones too), and Splice's reserved names."""
    owners = {name_key(o) for d in config.domains for o in d.owners}
    return frozenset(owners | person_names(state) | RESERVED)


def as_agent(principal: Principal, config: Any, state: StateStore) -> Principal:
    """``principal``, or, for an agent claiming a person's or a reserved name, the agent as
    ``agent:NAME`` with the name it claimed recorded (:func:`splice.support.principals.unborrowed`)."""
    if principal.kind != "agent":
        return principal
    return unborrowed(principal, taken_names(config, state))


def get(state: StateStore, key_id: str) -> KeyRecord:
    row = state.conn.execute(_GET, (key_id.strip().lower(),)).fetchone()
    if row is None:
        raise InputError(f"no API key {key_id!r}.", fix="splice keys list shows the keys")
    return _record(row)


def list_keys(state: StateStore) -> list[KeyRecord]:
    """Every key, oldest first (revoked ones too)."""
    return [_record(r) for r in state.conn.execute(_LIST)]


def revoke(
    state: StateStore, key_id: str, *, principal: Principal, now: float | None = None
) -> KeyRecord:
    """Revoke a key at once (it authenticates nothing after this); revoking twice is a no-op."""
    if principal.kind != "person":
        raise AccessError(f"{principal.label()} may not revoke API keys: a person does.",
                          fix="a person runs splice keys revoke")  # fmt: skip
    rec = get(state, key_id)
    if rec.revoked:
        return rec
    now = time.time() if now is None else now
    with state.transaction() as conn:
        conn.execute(_REVOKE_UPDATE,
                     (now, principal.name, rec.key_id))  # fmt: skip
        auditlog.append(conn, kind="key-revoke", principal=principal, proposal_id=None, at=now,
                        payload={"key_id": rec.key_id, "for": rec.principal})  # fmt: skip
    return get(state, rec.key_id)


#: Seconds within which a key's last-used time is not written again (a busy server would
#: otherwise write the state on every request).
LAST_USED_RESOLUTION = 60.0


def _presented(state: StateStore, raw: str) -> tuple[tuple[str, str] | None, Any]:
    """(id, secret) of a presented key and its row (principal, kind, scopes, secret_hash,
    revoked_at, last_used_at); None for what is malformed or unknown."""
    parsed = parse_key(raw)
    if parsed is None:
        return None, None
    row = state.conn.execute(
        _PRESENTED_SELECT,
        (parsed[0],),
    ).fetchone()
    return parsed, row


def authenticate(state: StateStore, raw: str, *, now: float | None = None) -> Principal:
    """The principal a key stands for (auth ``api-key``, credential its id), recording when it
    was last used; a malformed, unknown, wrong or revoked key is refused alike."""
    parsed, row = _presented(state, raw)
    # the hash is computed whatever was wrong, so the time taken does not tell either
    ok = check_secret(parsed[1] if parsed else "", row[3] if row else _dummy())
    if parsed is None or row is None or not ok:
        raise AccessError(INVALID, fix=INVALID_FIX)
    return _in_use(state, parsed[0], row, now)


def reconfirm(state: StateStore, raw: str, *, now: float | None = None) -> Principal:
    """What :func:`authenticate` gives for a key whose secret was already checked in this
    process (its caller remembers that; the secret is not hashed again): the principal as the
    state has it now, refused alike if the key was revoked or removed since."""
    parsed, row = _presented(state, raw)
    if parsed is None or row is None:
        raise AccessError(INVALID, fix=INVALID_FIX)
    return _in_use(state, parsed[0], row, now)


def _in_use(state: StateStore, key_id: str, row: tuple[Any, ...], now: float | None) -> Principal:
    """The principal of a presented key's row (refused if revoked), its last use recorded."""
    if row[4] is not None:
        raise AccessError(INVALID, fix=INVALID_FIX)
    now = time.time() if now is None else now
    if row[5] is None or now - row[5] >= LAST_USED_RESOLUTION:  # not a write per request
        with state.transaction() as conn:
            conn.execute(_IN_USE_UPDATE, (now, key_id))
    return Principal.of(row[0], kind=row[1], auth="api-key", scopes=row[2], credential=key_id)


def active(state: StateStore, key_id: str) -> bool:
    """Whether the key ``key_id`` exists and is not revoked (a page session made with it ends
    as soon as it is)."""
    row = state.conn.execute(_ACTIVE_SELECT, (key_id.strip().lower(),)).fetchone()
    return row is not None and row[0] is None
