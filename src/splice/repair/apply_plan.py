"""A proposal as a :class:`~splice.plan.model.Plan`, so the runner applies it like any plan.

One segment per step, each depending on the one before (a failed reload skips the
restatement and the rebuild; a failed restatement skips the rebuild):

- ``reload``  -> format ``ingestion``: the job's command for the scope's days, or the runs
  queued through the orchestrator that owns the job (Dagster), exactly as approved
  (:class:`splice.run.executors.ingestion.IngestionExecutor`);
- ``restate`` -> format ``sqlmesh`` with ``tool_view["restate"]`` on the restated model:
  SQLMesh's own plan with ``restate_models``, ``start`` and ``end`` (the cascade is SQLMesh's),
  with the models' audits; ``restate["then"]`` lists the further restatements of models
  downstream whose damage reaches beyond that cascade, each its own plan, in order;
- ``rebuild`` -> format ``dbt``: ``dbt build`` with exact selection of the models and their
  tests (``--full-refresh`` when an incremental model is among them:
  ``tool_view["full_refresh"]``).

So the repair is one journaled run (``splice runs show``), holds the lock spanning both tools,
records evidence for what it rebuilt, and follows the runner's failure semantics.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.plan.model import NodeDecision, Plan, Reason, Segment

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

FORMAT = {"reload": "ingestion", "restate": "sqlmesh", "rebuild": "dbt"}


def _checks_of(graph: Any, ids: list[str], kind: str) -> list[str]:
    """The tests / audits of any of ``ids`` (they run with the rebuilt models)."""
    wanted = set(ids)
    return sorted(
        n.id
        for n in graph.nodes.values()
        if n.kind == kind and (set(n.depends_on) | {str(n.meta.get("model"))}) & wanted
    )


def repair_plan(ws: Workspace, proposal: Any) -> Plan:
    """The runner's plan for ``proposal`` (a :class:`splice.repair.model.Proposal`)."""
    from splice.run.segments import build_evidence

    graph = ws.graph()
    decisions: dict[str, NodeDecision] = {}
    segments: list[Segment] = []
    # a rebuilt dbt model is recorded with its code and inputs, as a planned build is
    rebuilt = [
        n for s in proposal.steps if s.kind == "rebuild" for n in s.nodes if n in graph.nodes
    ]
    evidence = build_evidence(ws, rebuilt)
    why = f"repair {proposal.proposal_id} of incident {proposal.incident_id}"
    for i, step in enumerate(proposal.steps, 1):
        fmt = FORMAT[step.kind]
        nodes = [n for n in step.nodes if n in graph.nodes]
        if step.kind == "restate":
            nodes += _checks_of(graph, nodes, "audit")
        elif step.kind == "rebuild":
            nodes += _checks_of(graph, nodes, "test")
        env = (
            "prod"
            if step.kind == "reload"
            else step.detail.get("environment") or ws.environment(step.project)
        )
        text = f"{why}: {step.kind} {step.start or ''}..{step.end or ''}".rstrip(".")
        for nid in nodes:
            view: dict[str, Any] = {}
            if step.kind == "reload":
                view = {"command": list(step.command)}
                if step.detail.get("orchestrator"):  # queued through Dagster, as approved
                    view["orchestrator"] = dict(step.detail["orchestrator"])
            elif step.kind == "restate":
                # the origin's restatement, then those of models downstream whose damage
                # reaches beyond its cascade (each one SQLMesh plan, in order)
                more = (step.detail.get("restatements") or [])[1:]
                view = {
                    "restate": {
                        "models": list(step.detail.get("restate") or []),
                        "start": step.start.isoformat() if step.start else None,
                        "end": step.end.isoformat() if step.end else None,
                        "then": [{"models": list(r["models"]), "start": r["start"],
                                  "end": r["end"]} for r in more],
                    }
                }  # fmt: skip
            elif step.kind == "rebuild" and nid in (step.detail.get("full_refresh") or []):
                view = {"full_refresh": True}
            decisions[nid] = NodeDecision(
                node_id=nid,
                project=graph.nodes[nid].project,
                action="build",
                reasons=[Reason("repair", text, data={"proposal": proposal.proposal_id})],
                fingerprint=evidence.get(nid, ({}, []))[0],
                tool_view=view,
                inputs=evidence.get(nid, ({}, []))[1],
            )
        segments.append(
            Segment(
                id=f"s{i}",
                project=step.project,
                format=fmt,
                environment=env,
                node_ids=nodes,
                depends_on=[f"s{i - 1}"] if i > 1 else [],
            )
        )
    return Plan(
        target=proposal.target,
        environments={s.project: s.environment for s in segments},
        decisions=decisions,
        segments=segments,
        selector=f"repair:{proposal.proposal_id}",
        created_at=time.time(),
    )
