"""The identity provider's signing keys: PyJWT's :class:`jwt.PyJWKClient` (its cache, and its
cooldown between two fetches caused by unknown key ids), fetching through Splice's one HTTP
transport (:mod:`splice.support.http`).

The keys are kept until a token names a key id they do not have; then they are fetched again,
at most once per ``refetch_interval`` seconds, so a flood of made-up ``kid`` s costs the
provider one request. Imported only when ``[serve.auth.oauth]`` is configured (it imports
PyJWT).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import jwt

from splice.errors import AccessError
from splice.support import http

#: Seconds to wait for the provider's answer.
TIMEOUT = 5.0


class ProviderKeys(jwt.PyJWKClient):
    """The signing keys published at ``url``, by ``kid``."""

    def __init__(self, url: str, *, refetch_interval: float = 30.0) -> None:
        # kept until a token names a key they lack (lifespan: forever), as before PyJWT held them
        super().__init__(url, lifespan=math.inf, timeout=TIMEOUT,
                         cooldown_duration=refetch_interval)  # fmt: skip
        self.fetched_at: float | None = None
        self._sole_lock = threading.Lock()

    def fetch_data(self) -> Any:
        """The key set as the provider publishes it (PyJWT caches and parses it)."""
        data = http.request("GET", self.uri, timeout=self.timeout).json()
        if not isinstance(data, dict):
            raise ValueError("the key set is not a JSON object")
        # PyJWKClient.fetch_data, which this replaces, starts the cooldown on every fetch
        self._last_successful_fetch = self.fetched_at = time.monotonic()
        return data

    def key(self, kid: str) -> jwt.PyJWK:
        """The signing key ``kid`` (blocking: call from a worker thread)."""
        try:
            return self.get_signing_key(kid)
        except (http.HTTPFailure, ValueError) as e:
            raise self._unfetched(e) from e
        except jwt.PyJWTError as e:  # no such key, or none this server can use
            raise AccessError(f"token signed with an unknown key id {kid!r}.") from e

    def sole(self) -> jwt.PyJWK:
        """The provider's only signing key, for a token that names none (blocking)."""
        with self._sole_lock:
            keys = self._signing(refresh=False)
            cooling = self.fetched_at is not None and (
                time.monotonic() - self.fetched_at < self.cooldown_duration
            )
            if len(keys) != 1 and not cooling:
                keys = self._signing(refresh=True)
        if len(keys) != 1:
            raise AccessError(
                f"token has no key id (kid) and the provider publishes {len(keys)} "
                "signing keys: which one signed it is unknown."
            )
        return keys[0]

    def _signing(self, *, refresh: bool) -> list[jwt.PyJWK]:
        """The published signing keys, with or without a key id."""
        try:
            keys = self.get_jwk_set(refresh=refresh).keys
        except (http.HTTPFailure, ValueError) as e:
            raise self._unfetched(e) from e
        except jwt.PyJWKSetError:  # none this server can use
            return []
        return [k for k in keys if k.public_key_use in ("sig", None)]

    def _unfetched(self, e: Exception) -> AccessError:
        return AccessError(
            f"the identity provider's keys could not be fetched from {self.uri}: {e}",
            retry=True,
        )
