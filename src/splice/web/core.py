"""The machinery every page shares: who is signed in, a workspace for the request, templates,
and one error boundary.

A page handler is ``fn(ctx) -> (template, data)`` run in a worker thread with a fresh
:class:`~splice.workspace.core.Workspace` from the server's hub (:class:`Ctx` carries the request's
path parameters, form, principal and workspace). A :class:`~splice.errors.SpliceError` becomes
the error page with Splice's message and fix: 404 for an unknown id, 403 for a refused
principal, 400 otherwise; anything else is logged and shown as a 500 without a traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio.to_thread

from splice import api
from splice.errors import AccessError, NodeNotFoundError, SpliceError
from splice.support import numbers
from splice.support.principals import AUTH_WORDS, Principal
from splice.web.session import COOKIE, Sessions, csrf_ok, server_secret

if TYPE_CHECKING:
    from splice.api import Workspace

log = logging.getLogger("splice.web")
HERE = Path(__file__).parent


@dataclass
class Ctx:
    """One page request as the handler sees it."""

    ws: Workspace
    principal: Principal
    params: dict[str, str]
    query: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)


class PageError(SpliceError):
    """A page-level refusal with its HTTP status (a forged or stale form, say)."""

    def __init__(self, message: str, *, status: int = 400, fix: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.status = status


class Redirect(Exception):  # noqa: N818 - control flow, not an error
    """Raised by a POST handler to send the browser on (303 See Other)."""

    def __init__(self, url: str) -> None:
        self.url = url


class Web:
    """The page's shared parts: the hub, the session signer, the templates."""

    def __init__(self, hub: Any, serve: Any) -> None:
        from starlette.templating import Jinja2Templates

        from splice.web.applies import Applies

        self.hub = hub
        self.serve = serve
        self.applies = Applies(hub)
        self.sessions = Sessions(server_secret(hub.root))
        self.authenticator = api.authenticator(hub, serve)
        self.secure = serve.base_url.startswith("https://")
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        env = self.templates.env
        env.globals["fmt"] = numbers.value  # one format per kind of number (splice.support.numbers)
        env.filters["count"] = numbers.count
        env.filters["seconds"] = numbers.duration
        env.filters["percent"] = numbers.percent
        env.filters["checksum"] = numbers.checksum
        env.filters["when"] = _when
        env.globals["methods"] = serve.auth.methods()
        env.globals["auth_words"] = AUTH_WORDS

    # -- sessions ---------------------------------------------------------------------------
    def session(self, request: Any) -> dict[str, Any] | None:
        return self.sessions.loads(request.cookies.get(COOKIE))

    def set_session(self, response: Any, data: dict[str, Any] | None) -> Any:
        if data is None:
            response.delete_cookie(COOKIE, path="/")
        else:
            response.set_cookie(
                COOKIE,
                self.sessions.dumps(data),
                max_age=max(0, int(data["exp"] - time.time())),
                path="/",
                httponly=True,
                samesite="lax",
                secure=self.secure,
            )
        return response

    # -- rendering --------------------------------------------------------------------------
    def render(
        self,
        request: Any,
        template: str,
        data: dict[str, Any],
        *,
        session: dict[str, Any] | None = None,
        status: int = 200,
    ) -> Any:
        ctx = {
            "request": request,
            "me": (session or {}).get("principal"),
            "csrf": (session or {}).get("csrf", ""),
            "path": request.url.path,
            **data,
        }
        resp = self.templates.TemplateResponse(request, template, ctx, status_code=status)
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "frame-ancestors 'none'; form-action 'self'"
        )
        return resp

    def error(self, request: Any, e: SpliceError, session: dict[str, Any] | None) -> Any:
        status = getattr(e, "status", None) or (
            404 if isinstance(e, NodeNotFoundError) else 403 if isinstance(e, AccessError) else 400
        )
        return self.render(
            request,
            "error.html",
            {"title": "Refused" if status == 403 else "Error", "error": e, "status": status},
            session=session,
            status=status,
        )

    # -- page handlers ----------------------------------------------------------------------
    def page(
        self, fn: Callable[[Ctx], tuple[str, dict[str, Any]]], *, post: bool = False
    ) -> Callable[[Any], Awaitable[Any]]:
        """An endpoint: sign-in required, CSRF checked on POST, ``fn`` in a worker thread."""
        from starlette.responses import RedirectResponse

        async def endpoint(request: Any) -> Any:
            session = self.session(request)
            if session is None:
                if post:
                    return self.error(
                        request,
                        PageError("sign in first: this change was not made.", status=401),
                        None,
                    )
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/signin?next={quote(target)}", status_code=303)
            form: dict[str, str] = {}
            if post:
                raw = await request.form()
                form = {k: str(v) for k, v in raw.items()}
                if not csrf_ok(session, form.get("csrf")):
                    log.warning("refused a POST to %s without a valid CSRF token", request.url.path)
                    return self.error(
                        request,
                        PageError(
                            "this form is not from this session (its CSRF token is missing or "
                            "stale): nothing was changed.",
                            status=403,
                            fix="reload the page and try again",
                        ),
                        session,
                    )

            def work() -> tuple[str, dict[str, Any]]:
                with self.hub.workspace() as ws:
                    who = Principal.from_dict(session["principal"])
                    if not api.credential_active(ws, who):
                        raise PageError(
                            f"{who.label()}'s credential was revoked: sign in again.",
                            status=401,
                        )
                    ctx = Ctx(ws, who, dict(request.path_params), dict(request.query_params), form)
                    return fn(ctx)

            try:
                template, data = await anyio.to_thread.run_sync(work)
            except Redirect as r:
                if post:
                    self.hub.notify_soon()
                return RedirectResponse(r.url, status_code=303)
            except PageError as e:
                if e.status == 401:
                    return self.set_session(self.error(request, e, None), None)
                return self.error(request, e, session)
            except SpliceError as e:
                return self.error(request, e, session)
            except Exception:
                log.exception("page %s failed", request.url.path)
                return self.error(
                    request,
                    PageError(
                        "Splice failed on this page; the server's log has the details.",
                        status=500,
                    ),
                    session,
                )
            return self.render(request, template, data, session=session)

        return endpoint


def _when(ts: Any) -> str:
    """A Unix time as ``YYYY-MM-DD HH:MMZ`` (empty for None)."""
    if ts is None or ts == "":
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%MZ", time.gmtime(float(ts)))
    except (TypeError, ValueError):
        return str(ts)
