"""Runs: the journal, newest first; one run as a timeline of segments per project."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.web.core import Ctx, Web


def run_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    return "runs.html", {"title": "Runs", "runs": api.list_runs(ctx.ws, limit=50)}


def run_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    j = api.run_journal(ctx.ws, ctx.params["run_id"])
    return "run.html", {"title": f"Run {j['run']['run_id']}", **j}


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/runs", web.page(run_list), methods=["GET"]),
        Route("/runs/{run_id}", web.page(run_page), methods=["GET"]),
    ]
