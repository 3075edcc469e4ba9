"""The page's routes, mounted by ``splice serve`` before ``/mcp``."""

from __future__ import annotations

from typing import Any


def routes(hub: Any, serve: Any) -> list[Any]:
    """Every route of the web page: static assets, sign-in, and the pages."""
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    from splice.web import oidc, pages, signin
    from splice.web.core import HERE, Web

    web = Web(hub, serve)
    return [
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
        *signin.routes(web),
        *oidc.routes(web),
        *pages.routes(web),
    ]
