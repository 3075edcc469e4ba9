"""Who is calling a long-lived server: bearer tokens turned into principals.

Two kinds of token are accepted (``[serve.auth]``):

- an API key made by ``splice keys create`` (``spk_...``), checked against the salted hash in
  Splice's state;
- an OAuth 2.1 access token from the team's identity provider, verified through its JWKS and
  mapped to a principal and scopes by ``[serve.auth.oauth]``.

A verified token is remembered briefly (:class:`Authenticator`), so a busy client does not pay
the key's hash or the token's signature on every request: never past the token's expiry, and
a revoked API key is refused again within :data:`API_KEY_RECHECK` seconds.

JWKS tokens:

A token is accepted only when its signature checks against a key the provider publishes
(asymmetric algorithms only: ``alg: none`` and HS256 signed with the public key are
refused before any key is used), it was issued by the configured issuer for this server's
audience, and it has not expired. Keys rotate: a token whose ``kid`` is not in the cached set
makes the set be fetched again, at most once per ``refetch_interval`` seconds, so a flood of
made-up ``kid`` s costs the provider one request (:mod:`splice.auth.jwks`: PyJWT's client).
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

from splice.errors import AccessError
from splice.support.principals import KINDS, Principal

if TYPE_CHECKING:
    from splice.auth.jwks import ProviderKeys

API_KEY_PREFIX = "spk_"
#: Seconds a verified API key is trusted before its hash and revocation are checked again.
API_KEY_RECHECK = 5.0
#: Seconds a verified OAuth token is trusted before its signature is checked again.
TOKEN_RECHECK = 60.0


def verify_jwt(
    token: str,
    keys: ProviderKeys,
    *,
    issuer: str,
    audience: str,
    algorithms: list[str],
    leeway: int = 30,
) -> dict[str, Any]:
    """The token's claims when it is valid for this server, else AccessError saying why."""
    import jwt

    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as e:
        raise AccessError(f"malformed bearer token ({e}).") from e
    alg = str(header.get("alg", ""))
    if alg not in algorithms:
        raise AccessError(f"token algorithm {alg!r} is not accepted (accepted: {algorithms}).")
    kid = header.get("kid")
    key = keys.key(kid) if isinstance(kid, str) and kid else keys.sole()
    try:
        return jwt.decode(
            token,
            key=key.key,
            algorithms=algorithms,
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.PyJWTError as e:
        raise AccessError(f"bearer token refused: {e}.") from e


def oauth_principal(claims: dict[str, Any], cfg: Any) -> Principal:
    """The principal a verified token's claims name, with the Splice scopes its scopes grant.

    >>> from splice.config.serve import OAuthSection
    >>> cfg = OAuthSection(issuer="https://idp", jwks_url="https://idp/jwks")
    >>> p = oauth_principal({"email": "maria@x.io", "scope": "openid splice:approve",
    ...                      "iss": "https://idp", "sub": "u1"}, cfg)
    >>> p.name, p.kind, sorted(p.scopes)
    ('maria@x.io', 'person', ['approve', 'propose', 'read'])
    """
    name = claims.get(cfg.name_claim)
    if not isinstance(name, str) or not name.strip():
        raise AccessError(f"token has no {cfg.name_claim!r} claim to name its principal.")
    client = claims.get("azp") or claims.get("client_id")
    kind = cfg.default_kind
    if cfg.kind_claim and claims.get(cfg.kind_claim) in KINDS:
        kind = str(claims[cfg.kind_claim])
    if client in cfg.agent_clients:
        kind = "agent"
    raw = claims.get(cfg.scopes_claim, [])
    held = raw.split() if isinstance(raw, str) else [str(s) for s in raw or []]
    scopes = sorted({s for h in held for s in cfg.scopes.get(h, [])})
    return Principal.of(
        name,
        kind=kind,
        auth="oauth",
        scopes=scopes,
        credential=f"{claims.get('iss')}#{claims.get('sub')}",
    )


def _is_key(token: str) -> bool:
    return token.startswith(API_KEY_PREFIX)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class Authenticator:
    """Turns a bearer token into the principal it stands for, or an AccessError saying why not.

    ``keys`` authenticates an API key (``keys(raw) -> Principal``, raising AccessError; it
    hashes the secret: about 50 ms of CPU); ``reconfirm`` (optional, same signature) reads a
    key's principal again without hashing, for a token whose secret was verified here before;
    ``agents`` (optional, ``agents(principal) -> Principal``) names an OAuth token's agent as
    Splice records it (``agent:NAME`` when it claims a person's name); ``serve`` is the
    ``[serve]`` section.

    A verified token is trusted for ``API_KEY_RECHECK`` / ``TOKEN_RECHECK`` seconds, then
    checked again: an API key through ``reconfirm`` (revoked or removed: refused), an OAuth
    token in full. Requests presenting the same token at once share one check (a burst of
    clients on one key after a restart, or when the trust lapses, hashes once, not once each).
    """

    def __init__(self, serve: Any, keys: Any, reconfirm: Any = None, agents: Any = None) -> None:
        self.serve = serve
        self.keys = keys
        self.reconfirm = reconfirm
        self.agents = agents
        oauth = serve.auth.oauth
        self.jwks: ProviderKeys | None = None
        if oauth:
            from splice.auth.jwks import ProviderKeys

            self.jwks = ProviderKeys(oauth.jwks_url, refetch_interval=oauth.refetch_interval)
        # token digest -> (principal, expiry, trusted until); kept past "trusted until" so an
        # API key's secret is not hashed again (see reconfirm)
        self._verified: dict[bytes, tuple[Principal, int | None, float]] = {}
        self._flights: dict[bytes, threading.Lock] = {}
        self._lock = threading.Lock()
        self.checks = 0  # full verifications made (hashes, signatures): for tests and stats

    def remembered(self, token: str) -> tuple[Principal, int | None] | None:
        """The token's principal if it was verified recently (no I/O: safe on an event loop)."""
        with self._lock:
            hit = self._verified.get(_digest(token))
        return (hit[0], hit[1]) if hit is not None and hit[2] > time.monotonic() else None

    def authenticate(self, token: str) -> tuple[Principal, int | None]:
        """(principal, expiry as a Unix time or None); blocking: call it from a worker thread."""
        hit = self.remembered(token)
        if hit is not None:
            return hit
        digest = _digest(token)
        with self._lock:
            if len(self._flights) >= 10_000:  # bounded (bad tokens leave theirs behind)
                self._flights.clear()
            flight = self._flights.setdefault(digest, threading.Lock())
        with flight:  # one check per token at a time; the others wait for its answer
            hit = self.remembered(token)
            if hit is not None:
                return hit
            with self._lock:
                known = self._verified.pop(digest, None)  # re-added below if still good
            now = time.monotonic()
            if known is not None and self.reconfirm is not None and _is_key(token):
                principal, expires = self.reconfirm(token), None
            else:
                self.checks += 1
                principal, expires = self._verify(token)
            until = now + (API_KEY_RECHECK if _is_key(token) else TOKEN_RECHECK)
            if expires is not None:
                until = min(until, now + max(0.0, expires - time.time()))
            with self._lock:
                if len(self._verified) >= 10_000:
                    self._verified.clear()
                self._verified[digest] = (principal, expires, until)
            return principal, expires

    def _verify(self, token: str) -> tuple[Principal, int | None]:
        auth = self.serve.auth
        if _is_key(token):
            if not auth.api_keys:
                raise AccessError("API keys are off ([serve.auth] api_keys = false).")
            return self.keys(token), None
        if auth.oauth is None or self.jwks is None:
            raise AccessError("not an API key, and [serve.auth.oauth] is not configured.")
        cfg = auth.oauth
        claims = verify_jwt(
            token,
            self.jwks,
            issuer=cfg.issuer,
            audience=cfg.audience or self.serve.resource_url,
            algorithms=cfg.algorithms,
            leeway=cfg.leeway_seconds,
        )
        exp = claims.get("exp")
        who = oauth_principal(claims, cfg)
        if who.kind == "agent" and self.agents is not None:
            who = self.agents(who)
        return who, int(exp) if isinstance(exp, (int, float)) else None
