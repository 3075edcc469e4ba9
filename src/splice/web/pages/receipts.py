"""Receipts (printable: one page that records cause, scope, who approved and how they were
authenticated, the runs, the verification, the undo and the audit log's head) and the audit log
with its verification state and every entry's principal."""

from __future__ import annotations

import time
from typing import Any

from splice import api
from splice.web.core import Ctx, Web


def receipt_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    r = api.receipt(ctx.ws, ctx.params["proposal_id"])
    v = r.get("verification") or {}
    figures = list(v.get("figures") or [])
    report = api.verify_audit_log(ctx.ws)
    return "receipt.html", {
        "title": f"Receipt {r['proposal']}",
        "r": r,
        "v": v,
        "changed_figures": [f for f in figures if f.get("changed")],
        "unchanged_figures": [f for f in figures if not f.get("changed")],
        "verdict": _verdict(v),
        "log": report.as_dict() if hasattr(report, "as_dict") else report,
        "printed_at": time.time(),
    }


def _verdict(v: dict[str, Any]) -> str:
    """The verification's summary without its leading verdict (the page says it in bold).

    >>> _verdict({"summary": "verified: 180 value(s) changed"}), _verdict({})
    ('180 value(s) changed', '')
    """
    text = str(v.get("summary") or "")
    head, sep, rest = text.partition(": ")
    return rest if sep and head.lower() in ("verified", "not verified") else text


def audit_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    report = api.verify_audit_log(ctx.ws)
    rep = report.as_dict()
    rows = [
        entry_row(e.as_dict() if hasattr(e, "as_dict") else e) for e in api.audit_entries(ctx.ws)
    ]
    proposal = ctx.query.get("proposal", "").strip() or None
    if proposal:
        rows = [e for e in rows if e["proposal_id"] == proposal]
    return "audit.html", {
        "title": "Audit log",
        "report": rep,
        "entries": list(reversed(rows)),
        "proposal": proposal,
    }


def entry_row(e: dict[str, Any]) -> dict[str, Any]:
    """One audit-log entry as the page shows it: who (the principal recorded in the entry, with
    how it was authenticated) and what, in a few words.

    >>> row = entry_row({"seq": 3, "at": 0.0, "kind": "approve", "actor": "maria",
    ...     "proposal_id": "PR-1", "hash": "ab" * 32, "prev_hash": "0" * 64,
    ...     "payload": {"comment": "ok", "from": "pending", "to": "approved",
    ...                 "principal": {"name": "maria", "kind": "person", "auth": "api-key"}}})
    >>> row["who"], row["how"], row["what"]
    ('maria', 'person, api-key', 'pending → approved: ok')
    """
    payload = e.get("payload")
    p = payload if isinstance(payload, dict) else {}
    principal = p.get("principal") if isinstance(p.get("principal"), dict) else None
    what = ""
    if p.get("from") and p.get("to") and p.get("from") != p.get("to"):
        what = f"{p['from']} → {p['to']}"
    text = p.get("summary") or p.get("comment") or p.get("title") or p.get("reason")
    if p.get("key_id"):
        scopes = ", ".join(p.get("scopes") or [])
        text = f"key {p['key_id']} for {p.get('for')}" + (
            f" ({p.get('kind')}: {scopes})" if scopes else ""
        )
    if text:
        what = f"{what}: {text}" if what else str(text)
    elif not what and payload and not isinstance(payload, dict):
        what = str(payload)[:200]
    return {
        "seq": e.get("seq"),
        "at": e.get("at"),
        "kind": e.get("kind"),
        "actor": e.get("actor"),
        "who": (principal or {}).get("name") or e.get("actor"),
        "how": ", ".join(
            str(principal[k]) for k in ("kind", "auth") if principal and principal.get(k)
        ),
        "credential": (principal or {}).get("credential"),
        "proposal_id": e.get("proposal_id"),
        "what": what,
        "hash": e.get("hash") or "",
        "prev_hash": e.get("prev_hash") or "",
    }


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/receipts/{proposal_id}", web.page(receipt_page), methods=["GET"]),
        Route("/audit", web.page(audit_page), methods=["GET"]),
    ]
