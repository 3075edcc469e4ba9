"""Receipts (printable) and the audit log with its verification state."""

from __future__ import annotations

from typing import Any

from splice import api
from splice.web.core import Ctx, Web


def receipt_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    r = api.receipt(ctx.ws, ctx.params["proposal_id"])
    return "receipt.html", {"title": f"Receipt {r['proposal']}", "r": r}


def audit_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    report = api.verify_audit_log(ctx.ws)
    entries = [e.as_dict() if hasattr(e, "as_dict") else e for e in api.audit_entries(ctx.ws)]
    return "audit.html", {
        "title": "Audit log",
        "report": report.as_dict() if hasattr(report, "as_dict") else report,
        "entries": list(reversed(entries)),
    }


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/receipts/{proposal_id}", web.page(receipt_page), methods=["GET"]),
        Route("/audit", web.page(audit_page), methods=["GET"]),
    ]
