"""A proposal as a readable plan (what `splice propose` prints and MCP returns as text)."""

from __future__ import annotations

from typing import Any

from splice.support.numbers import checksum, count, percent


def proposal_lines(p: Any) -> list[str]:
    """Plain lines: what runs, in order; what a person could run instead; undo; cost; audit."""
    from splice.support.principals import describe

    lines = [f"{p.proposal_id} [{p.status}] {p.title}"]
    by = describe(p.requester) if p.requester else p.created_by
    lines.append(f"  incident {p.incident_id}; domain {p.domain}; change class {p.change_class}; "
                 f"requested by {by}")  # fmt: skip
    doms = getattr(p, "touched_domains", None) or [p.domain]
    lines.append(f"Approvals: an owner of each domain it rewrites: {', '.join(doms)}")
    if getattr(p, "unowned", None):
        lines.append(f"  in no domain (nobody approves for them; splice doctor: SPL403): "
                     f"{', '.join(p.unowned)}")  # fmt: skip
    lines.append(f"Cause: {p.cause}")
    lines.append(f"Scope: {p.scope_start}..{p.scope_end}")
    lines += scope_lines(p.scope or {})
    lines.append("Steps (one journaled run; a failed step skips the ones after it):")
    for i, s in enumerate(p.steps, 1):
        span = f" for {s.start}..{s.end}" if s.start else ""
        lines.append(f"  {i}. {s.kind} {s.project}{span}: {', '.join(s.nodes)}")
        restatements = (s.detail or {}).get("restatements") or [
            {"cascade": (s.detail or {}).get("cascade") or []}
        ]
        for j, r in enumerate(restatements):
            if j:
                lines.append(f"     then restate {r['node']} for {_span(r['start'], r['end'])}: "
                             f"{r['why']}")  # fmt: skip
            if r.get("cascade"):
                lines.append("     SQLMesh's cascade: " + ", ".join(
                    f"{c['node']} ({_span(c['start'], c['end'])})" if c.get("start") else
                    f"{c['node']} ({c['intervals']} interval{'s' if c['intervals'] != 1 else ''})"
                    for c in r["cascade"]))  # fmt: skip
        if s.detail and s.detail.get("full_refresh"):
            lines.append("     with --full-refresh (incremental dbt models, rebuilt whole): "
                         + ", ".join(s.detail["full_refresh"]))  # fmt: skip
    envs = (p.cost or {}).get("environments") or []
    if envs:
        lines.append("Environments:")
        for e in envs:
            if "error" in e:
                continue
            where = f"{e['project']}@{e['environment']}"
            lines.append(f"  {where}: {e['effect']}")
    lines.append("By hand instead:")
    for c in p.commands:
        lines.append(f"  {c}")
    cost = p.cost or {}
    if cost.get("rows_full_rebuild"):
        lines.append(
            f"Cost: {count(cost.get('rows_scoped', 0))} rows rewritten of "
            f"{count(cost['rows_full_rebuild'])} a full rebuild of the same relations would "
            f"({percent(cost.get('share') or 0)})"
            + (
                f"; {cost['intervals_scoped']} SQLMesh intervals"
                if cost.get("intervals_scoped")
                else ""
            )  # fmt: skip
        )
    if p.undo:
        how = {"copy": "the rows copied aside, put back in one transaction",
               "overwrite": "the rows copied aside, put back by partition overwrite, relation "
                            "by relation (the warehouse has no transactions)",
               "version": "each table's version recorded, restored by time travel"}  # fmt: skip
        lines.append(f"Undo ({how.get(p.undo[0].method, p.undo[0].method)}; verified "
                     f"restorable; splice undo {p.proposal_id} restores it):")  # fmt: skip
        for u in p.undo:
            rng = f" {u.start}..{u.end}" if u.start else " (all rows)"
            lines.append(
                f"  {u.relation}{rng}: {count(u.rows)} rows, checksum {checksum(u.checksum)}"
            )
    audit = cost.get("audit")
    if audit and p.audit_diff:
        lines.append(f"New audit that would have caught it: {audit['name']} ({audit['why']})")
        lines.append(f"  in the {audit.get('project')} project directory: patch -p1 < this diff")
        lines += ["    " + ln for ln in p.audit_diff.splitlines()]
    return lines


def _span(a: str, b: str) -> str:
    return a if a == b else f"{a}..{b}"


def scope_lines(scope: dict[str, Any]) -> list[str]:
    """The damage per node and how the repair rewrites it; the intervals a blocking audit
    left missing, with the audit named.

    >>> print("\\n".join(scope_lines({"nodes": [
    ...     {"node": "p:fx", "ranges": [["2026-09-25", "2026-09-25"]], "full": False,
    ...      "repair": "restated 2026-09-25", "rows_scoped": 30, "rows_total": 2700},
    ...     {"node": "p:bookings", "ranges": [["2026-09-25", "2026-09-27"]], "full": False,
    ...      "repair": "restated 2026-09-26..2026-09-27", "not_rewritten": [["2026-09-25",
    ...      "2026-09-25"]]}],
    ...     "blocked": [{"node": "p:gmv", "intervals": ["2026-09-28"], "audit": "assert_x",
    ...                  "audited_node": "p:fx", "run_id": "r1"}]})))
    Damage per node (intervals; how the repair rewrites them):
      p:fx: 2026-09-25; restated 2026-09-25 (30 of 2,700 rows)
      p:bookings: 2026-09-25..2026-09-27; restated 2026-09-26..2026-09-27; NOT rewritten: 2026-09-25
    Missing because a blocking audit stopped the run (part of the scope):
      p:gmv: 2026-09-28 (audit assert_x on p:fx, run r1)
    """
    lines: list[str] = []
    nodes = scope.get("nodes") or []
    if nodes:
        lines.append("Damage per node (intervals; how the repair rewrites them):")
    for n in nodes:
        days = ", ".join(_span(a, b) for a, b in n.get("ranges") or [])
        if n.get("full") and not days:
            days = "every interval (rebuilt whole)"
        elif n.get("full"):
            days += " (rebuilt whole)"
        text = f"  {n['node']}: {days or 'no damaged interval listed'}; {n.get('repair', '')}"
        if n.get("rows_total"):
            text += f" ({count(n.get('rows_scoped', 0))} of {count(n['rows_total'])} rows)"
        if n.get("not_rewritten"):
            text += "; NOT rewritten: " + ", ".join(_span(a, b) for a, b in n["not_rewritten"])
        lines.append(text)
    blocked = scope.get("blocked") or []
    if blocked:
        lines.append("Missing because a blocking audit stopped the run (part of the scope):")
    for b in blocked:
        where = f" on {b['audited_node']}" if b.get("audited_node") else ""
        run = f", run {b['run_id']}" if b.get("run_id") else ""
        lines.append(f"  {b['node']}: {', '.join(b.get('intervals') or [])} "
                     f"(audit {b.get('audit')}{where}{run})")  # fmt: skip
    return lines
