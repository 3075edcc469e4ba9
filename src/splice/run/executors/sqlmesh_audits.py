"""A model's changed audits that SQLMesh's plan would not run: SQLMesh audits a metadata-only
change (new or changed audits, the table reused) in the plan that first stores the model's new
snapshot, and a later plan promotes that stored snapshot without auditing it (see
:func:`audit_stored_changes`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.graph.model import Node
    from splice.run.executors.base import SegmentOutcome
    from splice.run.executors.sqlmesh_console import SqlmeshRecorder


class BlockedByAudits(Exception):
    """A blocking audit run by :func:`audit_stored_changes` failed: the plan is not applied."""


def audit_stored_changes(
    ctx: Any,
    env_name: str,
    by_fqn: dict[str, Node],
    local_ids: dict[str, str],
    execution_time: Any,
    rec: SqlmeshRecorder,
    outcome: SegmentOutcome,
) -> bool:
    """Run the changed audits of models whose metadata-only change SQLMesh would promote
    without auditing; False when a blocking one failed (the plan must not be applied).

    SQLMesh runs a model's new or changed audits (a metadata change: the table is reused) in
    the plan that first stores the model's new snapshot. A later plan finds that snapshot
    stored (an earlier plan failed, on that very audit or elsewhere) and promotes it without
    auditing, so a failing audit would pass the second time. These audits are run here, as
    SQLMesh's own audit-only stage runs them, over the intervals the environment holds; each
    result is recorded as SQLMesh's console would report it. ``local_ids``: the project's
    ``local_snapshot_ids()``.
    """
    from sqlmesh.utils.errors import AuditError, NodeAuditsErrors

    env = ctx.state_reader.get_environment(env_name)
    if env is None:
        return True
    in_env = {s.name: s.snapshot_id for s in env.snapshots}
    # the cheap filter first (``Context.snapshots`` reads every stored snapshot)
    changed = [
        f
        for f in by_fqn
        if f in in_env
        and local_ids.get(f) not in (None, in_env[f].identifier)
        and getattr(ctx.get_model(f), "audits", None)
    ]
    if not changed:
        return True
    local = {f: ctx.snapshots[f] for f in changed if f in ctx.snapshots}
    todo = {
        f: s
        for f, s in local.items()
        if in_env.get(f) not in (None, s.snapshot_id)
        and s.is_model
        and s.evaluatable
        and s.model.audits
    }
    if not todo:
        return True
    stored = ctx.state_reader.get_snapshots(
        [*(s.snapshot_id for s in todo.values()), *(in_env[f] for f in todo)]
    )
    ok = True
    for fqn, s in todo.items():
        new, prev = stored.get(s.snapshot_id), stored.get(in_env[fqn])
        if new is None or prev is None or not prev.intervals:
            continue  # a new snapshot: SQLMesh's plan audits it itself
        if new.version != prev.version or not new.is_metadata:
            continue  # it is rebuilt: SQLMesh audits what it builds
        if new.model.audit_metadata_hash() == prev.model.audit_metadata_hash():
            continue
        start, end = prev.intervals[0][0], prev.intervals[-1][1]
        t0 = time.perf_counter()
        results = ctx.snapshot_evaluator.audit(
            snapshot=new,
            snapshots=ctx.snapshots,
            start=start,
            end=end,
            execution_time=execution_time,
        )
        errors = [
            (
                r.blocking,
                AuditError(
                    audit_name=r.audit.name,
                    audit_args=r.audit_args,
                    model=new.model,
                    count=int(r.count),
                    query=r.query,
                    adapter_dialect=ctx.snapshot_evaluator.adapter.dialect,
                ),
            )
            for r in results
            if r.count
        ]
        outcome.notes.append(
            f"ran the changed audits of {by_fqn[fqn].id} (SQLMesh's plan would promote its "
            "stored snapshot without auditing it)"
        )
        blocking = [e for b, e in errors if b]
        with rec.lock:
            if blocking:
                ok = False
                rec.failed[fqn] = NodeAuditsErrors(blocking)
                rec.failed_node_kind[fqn] = "EvaluateNode"
                continue
            for _, e in errors:
                rec.warnings.append(f"{fqn}: {e}.")
            rec.batches.setdefault(fqn, []).append(
                {
                    "interval": [int(start), int(end)],
                    "ok": True,
                    "duration_ms": int((time.perf_counter() - t0) * 1000),
                    "audits_passed": sum(1 for r in results if not r.count and not r.skipped),
                    "audits_failed": len(errors),
                    "rows": None,
                }
            )
    return ok
