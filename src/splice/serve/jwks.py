"""Bearer tokens from an identity provider, verified through its JWKS.

A token is accepted only when its signature checks against a key the provider publishes
(asymmetric algorithms only: ``alg: none`` and HS256 signed with the public key are
refused before any key is used), it was issued by the configured issuer for this server's
audience, and it has not expired. Keys rotate: a token whose ``kid`` is not in the cached set
makes the set be fetched again, at most once per ``refetch_interval`` seconds, so a flood of
made-up ``kid`` s costs the provider one request.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

from splice.errors import AccessError


class JWKSCache:
    """The provider's signing keys by ``kid``, fetched when first needed and on rotation."""

    def __init__(self, url: str, *, refetch_interval: float = 30.0, timeout: float = 5.0):
        self.url = url
        self.refetch_interval = refetch_interval
        self.timeout = timeout
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()
        self.fetches = 0

    def _fetch(self) -> None:
        import jwt

        with urllib.request.urlopen(self.url, timeout=self.timeout) as resp:  # noqa: S310
            data = json.loads(resp.read().decode("utf-8"))
        keys: dict[str, Any] = {}
        for jwk in data.get("keys", []):
            if jwk.get("use", "sig") != "sig" or "kid" not in jwk:
                continue
            try:
                keys[jwk["kid"]] = jwt.PyJWK(jwk)
            except jwt.PyJWKError:
                continue  # a key of a type this server cannot use: skip it, keep the others
        self._keys = keys
        self._fetched_at = time.monotonic()
        self.fetches += 1

    def key(self, kid: str) -> Any:
        """The signing key ``kid`` (blocking: call from a worker thread)."""
        with self._lock:
            if kid in self._keys:
                return self._keys[kid]
            stale = (
                self._fetched_at is None
                or time.monotonic() - self._fetched_at >= self.refetch_interval
            )
            if stale:
                try:
                    self._fetch()
                except (OSError, ValueError) as e:
                    raise AccessError(
                        f"the identity provider's keys could not be fetched from {self.url}: {e}",
                        retry=True,
                    ) from e
            if kid not in self._keys:
                raise AccessError(f"token signed with an unknown key id {kid!r}.")
            return self._keys[kid]


def verify_jwt(
    token: str,
    cache: JWKSCache,
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
    if not isinstance(kid, str) or not kid:
        raise AccessError("token has no key id (kid).")
    key = cache.key(kid)
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
