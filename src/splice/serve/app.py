"""The ``splice serve`` application: Starlette + uvicorn, ``/mcp`` (streamable HTTP), a health
endpoint, and a scheduler for what must happen on time.

- ``GET /healthz``: ``{"status": "ok", ...}`` without authentication (for a load balancer);
  it says nothing about the workspace's content.
- ``/``: the web page (:mod:`splice.web`): incidents, proposals and decisions, receipts, the
  audit log, runs and the graph, for signed-in people (OpenID Connect or an API key).
- ``/mcp``: stateless streamable HTTP answering plain JSON (every request stands alone, so
  ``[serve] workers`` processes can share the port), every tool group, ``decisions`` included, for authenticated callers only
  (:mod:`splice.serve.auth`); the protected-resource metadata (RFC 9728) is at
  ``/.well-known/oauth-protected-resource/mcp`` and every 401 points at it.
- Housekeeping every ``[serve] housekeeping_seconds``: approval requests escalate and expire
  on time and pending notifications go out (:func:`splice.api.housekeeping`), in a worker
  thread, so a slow receiver never stalls a request.

The graph and the tools' imports are loaded once, at start, and reused
(:class:`splice.hub.Hub`); every request opens its own warehouse connections and closes them
(DuckDB's single-writer lock is never held between requests); a SQLite state's connection is
kept between one thread's requests (:mod:`splice.state.pool`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread

from splice.errors import ConfigError

log = logging.getLogger("splice.serve")


def _auth_settings(serve: Any) -> Any:
    from mcp.server.auth.settings import AuthSettings

    oauth = serve.auth.oauth
    return AuthSettings(
        issuer_url=oauth.issuer if oauth else serve.base_url,
        resource_server_url=serve.resource_url,
        required_scopes=["read"],
        validate_token_resource=True,
    )


def warm(hub: Any) -> dict[str, Any]:
    """Load the graph (and, through it, the tools' imports) before the first request."""
    t0 = time.perf_counter()
    with hub.workspace() as ws:
        ws.graph()
    return {"warm_seconds": round(time.perf_counter() - t0, 3)}


def housekeeping_pass(hub: Any) -> None:
    """One pass of what must happen on time; failures are logged, never raised."""
    from splice import api

    try:
        with hub.workspace() as ws:
            api.housekeeping(ws)
    except Exception:  # noqa: BLE001 - the scheduler must outlive a bad pass
        log.exception("housekeeping failed; it runs again at the next interval")


def build_app(hub: Any, serve: Any, *, groups: Any = None) -> Any:
    """The ASGI application (``groups``: the tool groups; default all, decisions included)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route

    from splice import __version__
    from splice.mcp.server import ALL_GROUPS, build_server
    from splice.serve.auth import SpliceTokenVerifier

    if not serve.auth.methods():
        raise ConfigError(
            "[serve.auth] enables no way to authenticate: splice serve never runs open.",
            fix="set [serve.auth] api_keys = true (then `splice keys create`) or configure "
            "[serve.auth.oauth]",
        )
    from splice import api

    api.sign_as_server(hub)  # every audit-log entry this server writes carries its signature
    server = build_server(
        hub,
        groups or ALL_GROUPS,
        token_verifier=SpliceTokenVerifier(hub, serve),
        auth=_auth_settings(serve),
    )
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp", host=serve.host, json_response=True, stateless_http=True
    )
    started = time.time()

    async def health(request: Any) -> Any:
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "uptime_seconds": round(time.time() - started, 1),
                "auth": serve.auth.methods(),
                **{k: v for k, v in hub.stats().items() if k in ("requests", "graph_loads")},
            }
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(warm, hub)
        async with server.session_manager.run(), anyio.create_task_group() as tg:

            async def scheduler() -> None:
                while True:  # one worker process leads (splice.hub.Hub.scheduler_leader)
                    if hub.scheduler_leader():
                        await anyio.to_thread.run_sync(housekeeping_pass, hub)
                    await anyio.sleep(serve.housekeeping_seconds)

            tg.start_soon(scheduler)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                hub.close()

    from splice.web.site import routes as web_routes

    return Starlette(
        routes=[
            Route("/healthz", health, methods=["GET"]),
            *web_routes(hub, serve),
            Mount("/", app=mcp_app),
        ],
        lifespan=lifespan,
    )


def run(hub: Any, serve: Any, *, log_path: Any = None) -> None:
    """Serve until interrupted (uvicorn on ``serve.host:serve.port``)."""
    import os

    import uvicorn

    workers = serve.workers
    if workers > 1:
        os.environ.update(
            SPLICE_SERVE_WORKSPACE=str(hub.root),
            SPLICE_SERVE_TARGET=hub.target or "",
            SPLICE_SERVE_PORT=str(serve.port),
            SPLICE_SERVE_HOST=serve.host,
        )
        uvicorn.run(
            "splice.serve.app:factory",
            factory=True,
            workers=workers,
            host=serve.host,
            port=serve.port,
            log_level="warning",
            access_log=False,
        )
        return
    app = build_app(hub, serve)
    uvicorn.run(
        app,
        host=serve.host,
        port=serve.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


def factory() -> Any:
    """The app for uvicorn's worker processes (``[serve] workers`` > 1): the workspace and
    target come from the parent through SPLICE_SERVE_WORKSPACE / SPLICE_SERVE_TARGET."""
    import os

    from splice import api

    hub = api.hub(
        os.environ["SPLICE_SERVE_WORKSPACE"], os.environ.get("SPLICE_SERVE_TARGET") or None
    )
    settings = api.serve_settings(hub)
    port = os.environ.get("SPLICE_SERVE_PORT")
    if port:
        settings = settings.model_copy(
            update={"port": int(port), "host": os.environ["SPLICE_SERVE_HOST"]}
        )
    return build_app(hub, settings)
