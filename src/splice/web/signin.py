"""Sign-in and sign-out.

- ``GET /signin``: the choices ``[serve.auth]`` allows: the identity provider's sign-in
  (OpenID Connect, :mod:`splice.web.oidc`) and an API key (``splice keys create``).
- ``POST /signin/key``: an API key, checked exactly as a bearer token is
  (:func:`splice.api.authenticator`); the session remembers the key's principal and id, never
  the key, and ends at once when the key is revoked.
- ``POST /signout``: ends the session (CSRF-protected).

A sign-in POST has no session to carry a CSRF token yet; it is refused when the browser says it
comes from another origin (``Origin`` / ``Referer``), and the cookie it sets is ``SameSite``.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread

from splice.errors import SpliceError
from splice.web.core import PageError, Web
from splice.web.session import csrf_ok

log = logging.getLogger("splice.web")


def safe_next(value: str | None) -> str:
    """Where to go after sign-in: a path on this server only (never another site).

    >>> safe_next("/proposals/PR-1"), safe_next("https://evil.example/"), safe_next("//evil")
    ('/proposals/PR-1', '/', '/')
    """
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def same_origin(request: Any, web: Web) -> bool:
    """Whether a POST without a session comes from this server's own page."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return True  # a browser always sends one on a cross-site POST; tools may not
    got = urlsplit(origin)
    here = {urlsplit(web.serve.base_url).netloc, request.headers.get("host", "")}
    return got.netloc in here


def routes(web: Web) -> list[Any]:
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    async def signin(request: Any) -> Any:
        return web.render(
            request,
            "signin.html",
            {
                "title": "Sign in",
                "next": safe_next(request.query_params.get("next")),
                "oidc": web.serve.auth.oauth is not None
                and web.serve.auth.oauth.client_id is not None,
                "api_keys": web.serve.auth.api_keys,
                "message": request.query_params.get("message"),
            },
            session=web.session(request),
        )

    async def signin_key(request: Any) -> Any:
        form = await request.form()
        nxt = safe_next(str(form.get("next") or "/"))
        if not same_origin(request, web):
            return web.error(
                request, PageError("a sign-in from another site is refused.", status=403), None
            )
        raw = str(form.get("key") or "").strip()
        if not web.serve.auth.api_keys:
            return web.error(
                request,
                PageError(
                    "API keys are off on this server ([serve.auth] api_keys = false).",
                    status=403,
                    fix="sign in through the identity provider",
                ),
                None,
            )
        try:
            principal, expires = await anyio.to_thread.run_sync(web.authenticator.authenticate, raw)
        except SpliceError as e:
            log.info("refused a page sign-in: %s", e.message)
            return web.render(
                request,
                "signin.html",
                {
                    "title": "Sign in",
                    "next": nxt,
                    "oidc": web.serve.auth.oauth is not None
                    and web.serve.auth.oauth.client_id is not None,
                    "api_keys": True,
                    "message": "That key was not accepted (unknown, revoked or mistyped).",
                },
                status=401,
            )
        session = web.sessions.new(principal.as_dict(), expires=expires)
        return web.set_session(RedirectResponse(nxt, status_code=303), session)

    async def signout(request: Any) -> Any:
        session = web.session(request)
        form = await request.form()
        if session is not None and not csrf_ok(session, str(form.get("csrf") or "")):
            return web.error(
                request, PageError("sign-out refused: stale form.", status=403), session
            )
        return web.set_session(
            RedirectResponse("/signin?message=Signed+out.", status_code=303), None
        )

    return [
        Route("/signin", signin, methods=["GET"]),
        Route("/signin/key", signin_key, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
    ]
