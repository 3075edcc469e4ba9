"""How each SQLMesh model kind reads in Splice's plan, and SQLMesh's standalone audits.

SQLMesh fills incremental kinds interval by interval; VIEW, FULL, SEED and CUSTOM models are
evaluated whole when their cron is due (``sqlmesh plan`` prints "recreate view", "full
refresh", "insert seed file"); an EMBEDDED model has no table at all. A standalone audit is a
snapshot of its own that SQLMesh's plan applies when it is new or changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.plan.intervals import describe_intervals
from splice.plan.model import Reason

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: What ``sqlmesh plan`` prints for a kind that is not filled interval by interval.
_WHOLE_KINDS = {
    "VIEW": "recreates the view",
    "FULL": "refreshes the whole table",
    "SEED": "loads the seed file",
    "CUSTOM": "runs its custom materialization",
}


def missing_reason(kind: str, n: int, miss: list[list[int]]) -> Reason:
    """Why SQLMesh builds a model with missing intervals, in the words of its kind: a VIEW is
    recreated and a FULL model refreshed when its cron is due, an incremental fills intervals."""
    when = describe_intervals(miss)
    whole = _WHOLE_KINDS.get(kind.upper())
    text = (
        f"SQLMesh: {whole} ({kind}; due by its cron for {when})"
        if whole
        else f"SQLMesh: {n} interval{'s' if n != 1 else ''} missing ({when})"
    )
    return Reason("sqlmesh_missing_intervals", text, data={"missing_intervals": miss, "count": n})


def unchanged_reason(kind: str, env_name: str) -> Reason:
    if kind.upper() == "EMBEDDED":
        return Reason(
            "unchanged",
            f"SQLMesh: EMBEDDED, no table of its own (inlined into the models that read it); "
            f"unchanged in {env_name!r}",
        )
    return Reason("unchanged", f"SQLMesh: no changes and no missing intervals in {env_name!r}")


def changed_standalone_audits(ws: Workspace, project: str, state: Any) -> dict[str, Reason]:
    """Standalone audit nodes of ``project`` that SQLMesh's plan would apply (new, or their code
    differs from the environment's), with why. SQLMesh lists them under "Standalone Audits" and
    runs them once applied; none when the environment was never planned (every model builds)."""
    if state is None or not state.exists:
        return {}
    local = ws.provider(project).local_audit_ids()
    out: dict[str, Reason] = {}
    for n in ws.graph().nodes.values():
        if n.project != project or not n.meta.get("standalone"):
            continue
        name = str(n.meta.get("snapshot_name"))
        held = state.audits.get(name)
        if name not in local or held == local[name]:
            continue
        change = "added" if held is None else "directly modified"
        text = (
            f"SQLMesh: a new standalone audit in {state.environment!r}"
            if held is None
            else f"SQLMesh: the standalone audit changed (not in {state.environment!r} yet)"
        )
        out[n.id] = Reason("sqlmesh_change", text, data={"change": change})
    return out
