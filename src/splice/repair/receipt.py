"""The receipt of a repair: what a finance reader can read, as data and as Markdown.

Cause, scope, who asked for it and who approved it, when, and how each was authenticated (the
principal of every decision: person or agent, os-user, cli-as, api-key, oauth...), the runs,
the verification figures before and after, and the undo.  Built from plain dicts (the proposal's ``as_dict()``, the decisions, the run
summaries, the verification), so the same receipt is printed, returned over MCP and written
to the audit log.
"""

from __future__ import annotations

from typing import Any

from splice.support.clock import utc_text
from splice.support.numbers import checksum, count, percent, value
from splice.support.principals import describe

#: A measured value in the receipt, as on the page and in the terminal.
_num = value


def build_receipt(
    proposal: dict[str, Any],
    incident: dict[str, Any],
    decisions: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    verification: dict[str, Any] | None,
    audit_head: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """The receipt as data (stable keys; the audit log stores it as JSON). ``audit_head``: the
    audit log's head (seq, hash) when it was written, so a copy of the receipt anchors the log."""
    approvals = [d for d in decisions if d.get("decision") == "approve"]
    return {
        "proposal": proposal["proposal_id"],
        "incident": incident.get("id"),
        "title": proposal.get("title"),
        "cause": proposal.get("cause"),
        "scope": {"start": str(proposal.get("scope_start")), "end": str(proposal.get("scope_end"))},
        "change_class": proposal.get("change_class"),
        "domain": proposal.get("domain"),
        "domains": list(proposal.get("domains") or [proposal.get("domain")]),
        "requested_by": proposal.get("created_by"),
        "requester": proposal.get("requester"),
        "approved_by": [
            {
                "by": a.get("actor"),
                "kind": a.get("principal_kind"),
                "auth": a.get("principal_auth"),
                "credential": a.get("principal_credential"),
                "at": a.get("at"),
                "comment": a.get("comment"),
                "domains": list(a.get("domains") or [proposal.get("domain")]),
            }
            for a in approvals
        ],  # fmt: skip
        "decisions": decisions,
        "steps": [
            {
                "kind": s.get("kind"),
                "project": s.get("project"),
                "nodes": s.get("nodes"),
                "command": s.get("command"),
                **(
                    {
                        "orchestrator": {
                            k: v for k, v in s["detail"]["orchestrator"].items() if k != "runs"
                        }
                    }
                    if (s.get("detail") or {}).get("orchestrator")
                    else {}
                ),
            }
            for s in proposal.get("steps") or []
        ],  # fmt: skip
        "runs": runs,
        "cost": proposal.get("cost"),
        "verification": verification,
        "undo": proposal.get("undo") or [],
        "status": proposal.get("status"),
        "audit_head": {"seq": audit_head[0], "hash": audit_head[1]} if audit_head else None,
    }


def receipt_markdown(r: dict[str, Any]) -> str:
    """The receipt as Markdown, for people.

    >>> md = receipt_markdown({"proposal": "P-1", "incident": "INC-1", "title": "t",
    ...     "cause": "c", "scope": {"start": "2026-09-28", "end": "2026-09-29"},
    ...     "approved_by": [], "steps": [], "runs": [], "undo": [], "verification": None,
    ...     "status": "applied", "requested_by": "agent", "cost": {}, "decisions": []})
    >>> md.splitlines()[0]
    '# Repair receipt P-1 (incident INC-1)'
    """
    lines = [f"# Repair receipt {r['proposal']} (incident {r['incident']})", ""]
    lines.append(f"**{r.get('title') or ''}**")
    lines.append("")
    lines.append(f"- Status: {r.get('status')}")
    lines.append(f"- Cause: {r.get('cause') or '-'}")
    scope = r.get("scope") or {}
    lines.append(f"- Scope: {scope.get('start')} .. {scope.get('end')}")
    requester = r.get("requester") or {"name": r.get("requested_by") or "-"}
    lines.append(f"- Requested by: {describe(requester)}")
    if r.get("approved_by"):
        for a in r["approved_by"]:
            note = f" ({a['comment']})" if a.get("comment") else ""
            by = describe(
                {"name": a["by"], **{k: a.get(k) for k in ("kind", "auth", "credential")}}
            )
            domains = ", ".join(a.get("domains") or [])
            scope = f" for {domains}" if domains else ""
            lines.append(f"- Approved by: {by} at {utc_text(a.get('at'))}{scope}{note}")
    else:
        lines.append("- Approved by: nobody")
    cost = r.get("cost") or {}
    if cost.get("rows_full_rebuild"):
        lines.append(
            f"- Rows rewritten: {count(cost.get('rows_scoped', 0))} of "
            f"{count(cost['rows_full_rebuild'])} a full rebuild would rewrite "
            f"({percent(cost.get('share') or 0)})"
        )
    lines += ["", "## What ran", ""]
    for i, s in enumerate(r.get("steps") or [], 1):
        lines.append(f"{i}. {s['kind']} {s['project']}: {', '.join(s.get('nodes') or [])}")
        if s.get("command"):
            lines.append(f"   `{' '.join(s['command'])}`")
        if s.get("orchestrator"):
            o = s["orchestrator"]
            lines.append(f"   queued in {o.get('system')}: job {o.get('job')} at {o.get('url')}")
    for run in r.get("runs") or []:
        lines.append(f"- run {run.get('run_id')}: {run.get('status')} "
                     f"({_num(run.get('duration'))} s)")  # fmt: skip
        for x in run.get("orchestrator_runs") or []:
            part = f", partition {x['partition']}" if x.get("partition") else ""
            lines.append(f"  - {x.get('system')} run {x.get('run_id')}: {x.get('status')}"
                         f"{part} ({x.get('url')})")  # fmt: skip
    v = r.get("verification")
    lines += ["", "## Verification", ""]
    if not v:
        lines.append("Not verified yet.")
    else:
        lines.append(("Passed: " if v.get("passed") else "FAILED: ") + str(v.get("summary")))
        figs = v.get("figures") or []
        if figs:
            lines += ["", "| metric | interval | before | after | series changed |",
                      "| --- | --- | --- | --- | --- |"]  # fmt: skip
            shown = [f for f in figs if f["changed"] or f["before"] != f["after"]]
            for f in shown:
                lines.append(
                    f"| {f['metric']} | {f['interval']} | {_num(f['before'])} | "
                    f"{_num(f['after'])} | {f['changed']} of {f['series']} |"
                )
            if len(shown) < len(figs):
                lines.append("")
                lines.append(f"{len(figs) - len(shown)} other measurement(s) in the scope did "
                             "not change (all of them: --json).")  # fmt: skip
        lines += _recomputed_lines(v.get("recomputed"), v.get("seconds"))
    decided = r.get("decisions") or []
    if decided:
        lines += ["", "## Decisions", "",
                  "Each decision, who made it, and how they were authenticated:", ""]  # fmt: skip
        for d in decided:
            rec = d.get("principal") or {"name": d.get("actor"), "kind": d.get("principal_kind"),
                                         "auth": d.get("principal_auth"),
                                         "credential": d.get("principal_credential")}  # fmt: skip
            lines.append(f"- {utc_text(d.get('at'))} {d.get('decision')} by {describe(rec)}")
    lines += ["", "## Undo", ""]
    undo = r.get("undo") or []
    if not undo:
        lines.append("No undo recorded.")
    for u in undo:
        rng = f" for {u.get('start')}..{u.get('end')}" if u.get("start") else " (whole table)"
        lines.append(f"- {u.get('relation')}{rng}: {count(u.get('rows'))} rows, checksum "
                     f"{checksum(u.get('checksum'))}, saved to {u.get('saved_to')}")  # fmt: skip
    lines.append("")
    lines.append(f"`splice undo {r['proposal']}` (an owner) restores every relation above exactly.")
    head = r.get("audit_head")
    if head:
        lines += ["", f"Audit log head when this receipt was written: entry {head['seq']}, "
                      f"hash {head['hash']} (`splice audit-log verify` checks the log against it)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def _recomputed_lines(rec: dict[str, Any] | None, total: Any) -> list[str]:
    """The recomputation of a verification: per node, equal or what differs, and its cost."""
    if not rec:
        return []
    lines = ["", "Recomputed from the repaired inputs (production against a fresh build):", "",
             "| node | intervals | rows | result |", "| --- | --- | --- | --- |"]  # fmt: skip
    for n in rec.get("nodes") or []:
        span = f"{n.get('from')}..{n.get('through')}" if n.get("from") else "whole table"
        if n.get("skipped"):
            result = f"not recomputed: {n['skipped']}"
        elif n.get("unread"):
            span = f"from {n.get('from')}"
            result = f"nothing to compare: {n['unread']}"
        elif n.get("differ"):
            days = list(n["differ"])
            result = (f"DIFFERS on {len(days)} interval(s) ({days[0]}"
                      + (f"..{days[-1]}" if len(days) > 1 else "") + f"): "
                      f"{sum(n['differ'].values())} row(s)")  # fmt: skip
        else:
            result = "equal"
        lines.append(f"| {n.get('node')} | {span} | {count(n.get('rows_prod'))} | {result} |")
    cost = f"{_num(rec.get('seconds'))} s"
    if isinstance(total, (int, float)) and total:
        cost += f" of the verification's {_num(total)} s"
    lines += ["", f"Recomputation cost: {cost}."]
    return lines
