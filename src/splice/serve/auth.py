"""The SDK's token verifier for ``splice serve``: every request's bearer token goes to the
authenticator :func:`splice.api.authenticator` makes (API keys and JWKS-verified OAuth tokens,
see :mod:`splice.auth.tokens`); the ``AccessToken`` handed back to the SDK carries the Splice principal
in its claims, and :func:`splice.mcp.calls.principal_of` reads it back for every tool call. A
request without a valid token is answered 401 (with the protected-resource metadata's
address), one without the ``read`` scope 403, by the SDK's bearer middleware; nothing is
written for either.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import AccessToken

from splice import api
from splice.errors import SpliceError

log = logging.getLogger("splice.serve.auth")


class SpliceTokenVerifier:
    """``mcp.server.auth.provider.TokenVerifier`` over :func:`splice.api.authenticator`."""

    def __init__(self, hub: Any, serve: Any) -> None:
        self.serve = serve
        self.authenticator = api.authenticator(hub, serve)

    async def verify_token(self, token: str) -> AccessToken | None:
        known = self.authenticator.remembered(token)  # most requests: no thread, no I/O
        try:
            principal, expires = known or await anyio.to_thread.run_sync(
                self.authenticator.authenticate, token
            )
        except SpliceError as e:
            log.info("refused a bearer token: %s", e.message)
            return None
        return AccessToken(
            token=token,
            client_id=principal.credential or principal.name,
            scopes=sorted(principal.scopes),
            expires_at=expires,
            resource=self.serve.resource_url,
            subject=principal.name,
            claims={"splice_principal": principal.as_dict()},
        )
