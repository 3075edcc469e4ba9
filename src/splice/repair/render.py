"""A proposal as a readable plan (what `splice propose` prints and MCP returns as text)."""

from __future__ import annotations

from typing import Any


def proposal_lines(p: Any) -> list[str]:
    """Plain lines: what runs, in order; what a person could run instead; undo; cost; audit."""
    from splice.principals import describe

    lines = [f"{p.proposal_id} [{p.status}] {p.title}"]
    by = describe(p.requester) if p.requester else p.created_by
    lines.append(f"  incident {p.incident_id}; domain {p.domain}; change class {p.change_class}; "
                 f"requested by {by}")  # fmt: skip
    lines.append(f"Cause: {p.cause}")
    lines.append(f"Scope: {p.scope_start}..{p.scope_end}")
    lines.append("Steps (one journaled run; a failed step skips the ones after it):")
    for i, s in enumerate(p.steps, 1):
        span = f" for {s.start}..{s.end}" if s.start else ""
        lines.append(f"  {i}. {s.kind} {s.project}{span}: {', '.join(s.nodes)}")
        cascade = s.detail.get("cascade") if s.detail else None
        if cascade:
            lines.append("     SQLMesh's cascade: " + ", ".join(
                f"{c['node']} ({c['intervals']} interval{'s' if c['intervals'] != 1 else ''})"
                for c in cascade))  # fmt: skip
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
            f"Cost: {cost.get('rows_scoped', 0):,} rows rewritten of {cost['rows_full_rebuild']:,} "
            f"a full rebuild of the same relations would ({100 * (cost.get('share') or 0):.1f}%)"
            + (
                f"; {cost['intervals_scoped']} SQLMesh intervals"
                if cost.get("intervals_scoped")
                else ""
            )  # fmt: skip
        )
    if p.undo:
        lines.append("Undo (captured and verified restorable; splice undo "
                     f"{p.proposal_id} restores it):")  # fmt: skip
        for u in p.undo:
            rng = f" {u.start}..{u.end}" if u.start else " (all rows)"
            lines.append(f"  {u.relation}{rng}: {u.rows} rows, checksum {u.checksum[:12]}")
    audit = cost.get("audit")
    if audit and p.audit_diff:
        lines.append(f"New audit that would have caught it: {audit['name']} ({audit['why']})")
        lines.append(f"  in the {audit.get('project')} project directory: patch -p1 < this diff")
        lines += ["    " + ln for ln in p.audit_diff.splitlines()]
    return lines
