"""Who is calling ``splice serve``: every request carries a bearer token, one of

- an API key made by ``splice keys create`` (``spk_...``), checked against the salted hash
  in Splice's state (:func:`splice.api.authenticate_key`), or
- an OAuth 2.1 access token from the team's identity provider, verified through its JWKS
  (:mod:`splice.serve.jwks`) and mapped to a principal and scopes by ``[serve.auth.oauth]``.

The verifier hands the SDK an ``AccessToken`` whose claims carry the Splice principal;
:func:`splice.mcp.calls.principal_of` reads it back for every tool call. A request without a
valid token is answered 401 (with the protected-resource metadata's address), one without the
``read`` scope 403, by the SDK's bearer middleware; nothing is written for either.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import AccessToken

from splice.config_serve import OAuthSection, ServeSection
from splice.errors import AccessError, SpliceError
from splice.principals import KINDS, Principal
from splice.serve.jwks import JWKSCache, verify_jwt

log = logging.getLogger("splice.serve.auth")

API_KEY_PREFIX = "spk_"
#: Seconds a verified API key is trusted before its hash and revocation are checked again.
API_KEY_RECHECK = 5.0
#: Seconds a verified OAuth token is trusted before its signature is checked again.
TOKEN_RECHECK = 60.0


def oauth_principal(claims: dict[str, Any], cfg: OAuthSection) -> Principal:
    """The principal a verified token's claims name, with the Splice scopes its scopes grant.

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


class SpliceTokenVerifier:
    """The SDK's ``TokenVerifier`` for Splice: API keys and JWKS-verified tokens."""

    def __init__(self, hub: Any, serve: ServeSection) -> None:
        self.hub = hub
        self.serve = serve
        oauth = serve.auth.oauth
        self._verified: dict[bytes, tuple[AccessToken, float]] = {}
        self._lock = threading.Lock()
        self.jwks = (
            JWKSCache(oauth.jwks_url, refetch_interval=oauth.refetch_interval) if oauth else None
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        now = time.monotonic()
        with self._lock:
            hit = self._verified.get(digest)
        if hit is not None and hit[1] > now:
            return hit[0]
        try:
            principal, expires = await anyio.to_thread.run_sync(self._verify, token)
        except SpliceError as e:
            log.info("refused a bearer token: %s", e.message)
            return None
        access = AccessToken(
            token=token,
            client_id=principal.credential or principal.name,
            scopes=sorted(principal.scopes),
            expires_at=expires,
            resource=self.serve.resource_url,
            subject=principal.name,
            claims={"splice_principal": principal.as_dict()},
        )
        # remembered briefly, so a busy client does not pay the key's hash or the token's
        # signature on every request; never past the token's expiry; a revoked API key is
        # refused again within API_KEY_RECHECK seconds
        ttl = API_KEY_RECHECK if token.startswith(API_KEY_PREFIX) else TOKEN_RECHECK
        until = now + ttl
        if expires is not None:
            until = min(until, now + max(0.0, expires - time.time()))
        with self._lock:
            if len(self._verified) >= 10_000:
                self._verified.clear()
            self._verified[digest] = (access, until)
        return access

    def _verify(self, token: str) -> tuple[Principal, int | None]:
        auth = self.serve.auth
        if token.startswith(API_KEY_PREFIX):
            if not auth.api_keys:
                raise AccessError("API keys are off ([serve.auth] api_keys = false).")
            from splice import api

            with self.hub.workspace() as ws:
                return api.authenticate_key(ws, token), None
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
        if isinstance(exp, (int, float)) and exp < time.time() - cfg.leeway_seconds:
            raise AccessError("token expired.")
        return oauth_principal(claims, cfg), int(exp) if isinstance(exp, (int, float)) else None
