"""The ``splice serve`` application: Starlette + uvicorn, ``/mcp`` (streamable HTTP), a health
endpoint, and a scheduler for what must happen on time.

- ``GET /healthz``: ``{"status": "ok", ...}`` without authentication (for a load balancer);
  it says nothing about the workspace's content.
- ``/``: the web page (:mod:`splice.web`): incidents, proposals and decisions, receipts, the
  audit log, runs and the graph, for signed-in people (OpenID Connect or an API key).
- ``/mcp``: stateless streamable HTTP answering plain JSON (every request stands alone, so
  ``[serve] workers`` processes can share the port), every tool group, ``decisions`` included, for authenticated callers only
  (:mod:`splice.serve.auth`); the protected-resource metadata (RFC 9728) is at
  ``/.well-known/oauth-protected-resource/mcp`` and every 401 points at it. A ``GET /mcp``
  (a client asking for a stream of server messages) is answered 405 with ``Allow: POST`` at
  once: a stateless server has no such stream.
- Housekeeping every ``[serve] housekeeping_seconds``: approval requests escalate and expire
  on time and pending notifications go out (:func:`splice.api.housekeeping`), in a worker
  thread, so a slow receiver never stalls a request.
- The operator every ``[operator] tick_seconds`` (:mod:`splice.operator`): schedules due,
  watches after production moved, the autonomy ladder; one pass at a time, in its own worker
  thread, beside housekeeping.
- ``POST /api/v1/lineage``: OpenLineage run events (the path and body Marquez accepts), with
  the same API key or token as ``/mcp``: 200 with what was done, 400 naming what is wrong with
  the body (nothing stored), 401 without a valid credential.

The graph and the tools' imports are loaded once, at start, and reused
(:class:`splice.api.served.Hub`); every request opens its own warehouse connections and closes them
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


def operator_pass(op: Any) -> float:
    """One pass of the operator; returns the seconds until the next (``[operator]
    tick_seconds``). Never raises: a failed step is logged and recorded by the operator."""
    try:
        return float(op.tick())
    except Exception:  # noqa: BLE001 - the scheduler must outlive a bad pass
        log.exception("the operator's pass failed; it runs again at the next tick")
        return 5.0


def build_app(hub: Any, serve: Any, *, groups: Any = None) -> Any:
    """The ASGI application (``groups``: the tool groups; default all, decisions included)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Mount, Route

    from splice.mcp.server import ALL_GROUPS, build_server
    from splice.serve.auth import SpliceTokenVerifier
    from splice.version import __version__

    if not serve.auth.methods():
        raise ConfigError(
            "[serve.auth] enables no way to authenticate: splice serve never runs open.",
            fix="set [serve.auth] api_keys = true (then `splice keys create`) or configure "
            "[serve.auth.oauth]",
        )
    from splice import api

    api.sign_as_server(hub)  # every audit-log entry this server writes carries its signature
    verifier = SpliceTokenVerifier(hub, serve)
    server = build_server(
        hub,
        groups or ALL_GROUPS,
        token_verifier=verifier,
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

    async def lineage_post(request: Any) -> Any:
        from splice.errors import InputError

        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        access = await verifier.verify_token(token.strip()) if scheme.lower() == "bearer" else None
        if access is None or "read" not in access.scopes:
            return JSONResponse(
                {"error": "unauthorized", "message": "send an API key or token as "
                 "'Authorization: Bearer ...' (the same as for /mcp)"},
                status_code=401, headers={"WWW-Authenticate": "Bearer"},
            )  # fmt: skip
        body = await request.body()
        if request.headers.get("content-encoding", "").lower() == "gzip":  # the client's option
            import gzip

            try:
                body = gzip.decompress(body)
            except (OSError, EOFError):
                return JSONResponse({"error": "bad event", "message": "the body is not gzip, "
                                     "though Content-Encoding says so"}, status_code=400)  # fmt: skip
        try:
            done = await anyio.to_thread.run_sync(api.receive_lineage, hub, body)
        except InputError as e:
            return JSONResponse({"error": "bad event", "message": e.one_line()}, status_code=400)
        return JSONResponse(done, status_code=200)

    async def mcp_get(request: Any) -> Any:
        # stateless streamable HTTP has no stream for a GET to open (there is no session to
        # send on): say so at once instead of holding the connection open forever
        return PlainTextResponse(
            "Method Not Allowed: this MCP endpoint is stateless; send each request as a POST.\n",
            status_code=405,
            headers={"Allow": "POST"},
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(warm, hub)
        async with server.session_manager.run(), anyio.create_task_group() as tg:

            async def scheduler() -> None:
                while True:  # one worker process leads (splice.api.served.Hub.scheduler_leader)
                    if hub.scheduler_leader():
                        await anyio.to_thread.run_sync(housekeeping_pass, hub)
                    await anyio.sleep(serve.housekeeping_seconds)

            tg.start_soon(scheduler)
            operator = api.operator_for_hub(hub)

            async def operator_loop() -> None:
                while True:  # the same leader runs the operator, one pass at a time
                    wait = 5.0
                    if hub.scheduler_leader():
                        wait = await anyio.to_thread.run_sync(operator_pass, operator)
                    await anyio.sleep(wait)

            tg.start_soon(operator_loop)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                hub.close()

    from splice.web.site import routes as web_routes

    return Starlette(
        routes=[
            Route("/healthz", health, methods=["GET"]),
            Route("/mcp", mcp_get, methods=["GET"]),  # POST goes on to the MCP app below
            Route("/api/v1/lineage", lineage_post, methods=["POST"]),
            *web_routes(hub, serve),
            Mount("/", app=mcp_app),
        ],
        lifespan=lifespan,
    )


def _os_words(e: OSError) -> str:
    return str(e.strerror or e)


def check_address(serve: Any, *, host_from: str = "--host", port_from: str = "--port") -> None:
    """Refuse, before anything loads, an address ``splice serve`` could not listen on: a host
    that is neither an IP address nor a name this machine resolves, a URL the MCP server would
    not accept, or a port another process holds (bound as uvicorn binds it, then released).
    ``host_from`` / ``port_from`` name where the values came from (an option, or splice.toml).

    >>> from splice.config.serve import ServeSection
    >>> check_address(ServeSection.model_validate({"host": "256.1.1.1"}))
    Traceback (most recent call last):
    ...
    splice.errors.InputError: --host '256.1.1.1' is not a valid IP address.
    """
    import ipaddress
    import re
    import socket

    from pydantic import AnyHttpUrl, ValidationError

    from splice.errors import InputError

    host, port = serve.host, serve.port
    fix_host = (
        f"give {host_from} an IP address of this machine (127.0.0.1, 0.0.0.0, ::1) or a host "
        "name it resolves"
    )
    labels = host.rstrip(".").split(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        # a name's last label is never all digits (RFC 3696): this was meant as an address
        if ":" in host or re.fullmatch(r"(0x[0-9a-f]*|[0-9]+)", labels[-1], re.I):
            raise InputError(f"{host_from} {host!r} is not a valid IP address.",
                             fix=fix_host) from None  # fmt: skip
    family = socket.AF_INET6 if ":" in host else socket.AF_UNSPEC
    try:
        found = socket.getaddrinfo(host or None, port, family, socket.SOCK_STREAM, 0,
                                   socket.AI_PASSIVE)  # fmt: skip
    except (OSError, UnicodeError) as e:
        raise InputError(
            f"{host_from} {host!r} is neither an IP address nor a host name this machine "
            f"resolves ({_os_words(e) if isinstance(e, OSError) else e}).",
            fix=fix_host,
        ) from None
    if serve.url is None:
        try:
            AnyHttpUrl(serve.resource_url)
        except ValidationError:
            raise InputError(
                f"{host_from} {host!r} does not make a URL clients can reach "
                f"({serve.resource_url}).",
                fix=fix_host + ", or set [serve] url in splice.toml",
            ) from None
    for fam, kind, proto, _, addr in found:  # every address uvicorn will listen on
        with socket.socket(fam, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if fam == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind(addr)
            except OSError as e:
                import errno

                if e.errno == errno.EADDRINUSE:
                    raise InputError(
                        f"{port_from} {port}: the port is in use on {host} by another process, "
                        "so splice serve cannot listen there.",
                        fix="stop that process, or choose another port with --port (or [serve] "
                        "port in splice.toml)",
                    ) from None
                if e.errno == errno.EACCES:
                    raise InputError(
                        f"{port_from} {port}: splice serve may not listen on {host}:{port}: "
                        f"{_os_words(e)}.",
                        fix="choose a port above 1023 with --port (or [serve] port in splice.toml)",
                    ) from None
                raise InputError(
                    f"{host_from} {host!r}: splice serve cannot listen on {host}:{port}: "
                    f"{_os_words(e)}.",
                    fix=fix_host,
                ) from None


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
