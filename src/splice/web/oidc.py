"""Sign-in through the identity provider (OpenID Connect with PKCE; the protocol is in
:mod:`splice.auth.oidc`, reached through :func:`splice.api.oidc_client`).

- ``GET /signin/oidc?next=PATH``: the request's secrets go in a signed cookie (10 minutes,
  ``HttpOnly``, ``SameSite=Lax``, path ``/signin``) and the browser to the provider.
- ``GET /signin/callback``: the provider's answer; on success the session starts and the
  browser goes on to ``next`` (a path on this server only); otherwise a page says why and
  nothing is signed in.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio.to_thread

from splice import api
from splice.errors import SpliceError
from splice.web.core import PageError, Web
from splice.web.signin import safe_next

log = logging.getLogger("splice.web")
PENDING = "splice_oidc"
PENDING_SECONDS = 600


def routes(web: Web) -> list[Any]:
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    oauth = web.serve.auth.oauth
    if oauth is None or not oauth.client_id:
        return []
    client = api.oidc_client(web.serve)

    async def start(request: Any) -> Any:
        nxt = safe_next(request.query_params.get("next"))
        try:
            url, pending = await anyio.to_thread.run_sync(client.start)
        except SpliceError as e:
            return web.error(request, PageError(e.one_line(), status=502), None)
        pending = {**pending, "next": nxt, "exp": int(time.time()) + PENDING_SECONDS}
        resp = RedirectResponse(url, status_code=303)
        resp.set_cookie(PENDING, web.sessions.dumps(pending), max_age=PENDING_SECONDS,
                        path="/signin", httponly=True, samesite="lax", secure=web.secure)  # fmt: skip
        return resp

    async def callback(request: Any) -> Any:
        pending = web.sessions.loads(request.cookies.get(PENDING))
        params = {k: str(v) for k, v in request.query_params.items()}
        try:
            principal, expires = await anyio.to_thread.run_sync(client.finish, pending, params)
        except SpliceError as e:
            log.info("refused a sign-in through the identity provider: %s", e.message)
            status = 502 if e.retry else 403 if params.get("error") else 401
            resp = web.error(request, PageError(e.message, status=status, fix=e.fix), None)
            resp.delete_cookie(PENDING, path="/signin")
            return resp
        session = web.sessions.new(principal.as_dict(), expires=expires)
        resp = RedirectResponse(safe_next((pending or {}).get("next")), status_code=303)
        resp.delete_cookie(PENDING, path="/signin")
        return web.set_session(resp, session)

    return [
        Route("/signin/oidc", start, methods=["GET"]),
        Route("/signin/callback", callback, methods=["GET"]),
    ]
