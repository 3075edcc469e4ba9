"""The operator: the schedules ``splice serve`` runs (next tick, last outcome), each domain's
autonomy level as a read-only switch (the level lives in splice.toml), the org-wide stop, and
what the operator did recently with the rule that allowed each step."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.web.core import Ctx, Web

#: The ladder's rungs, in order, for the switch each domain shows.
RUNGS = ("L0", "L1", "L2", "L3", "L4")
ACTIVITY_SHOWN = 100


def operator_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    status = api.operator_status(ctx.ws)
    return "operator.html", {
        "title": "Operator",
        "status": status,
        "rungs": RUNGS,
        "activity": api.operator_activity(ctx.ws, limit=ACTIVITY_SHOWN),
    }


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [Route("/operator", web.page(operator_page), methods=["GET"])]
