"""Plans are plain data: what to build, why, and in which segments. An evaluator applies them.

The planner (:mod:`splice.plan.planner`) produces a :class:`Plan`; the runner
(:mod:`splice.run.runner`) executes its segments and records what it built, which is the
evidence the next plan reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Action = Literal["build", "reuse"]
ReasonCode = Literal[
    "never_built",  # no successful build recorded for this node in this target
    "code_changed",  # its own fingerprint changed; `components` names which
    "upstream_code_changed",  # an upstream node's code changed (and it builds in this plan)
    "upstream_data_changed",  # an upstream relation's version moved (e.g. 41 -> 42)
    "source_fresher",  # a source / ingestion relation was observed fresher
    "sqlmesh_missing_intervals",  # SQLMesh's own plan: intervals missing
    "sqlmesh_change",  # SQLMesh's own plan: a change category (breaking, non-breaking, ...)
    "incomplete_upstream_intervals",  # a binding's upstream still has intervals missing
    "failed_last_time",  # the last attempt failed or was interrupted
    "selected_test",  # a test/audit of a node that builds
    "check_changed",  # a test whose code is new or changed since it last passed
    "repair",  # an approved repair rewrites it (splice apply; see splice.repair)
    "ingest",  # an ingestion job run for named days (splice ingest; splice.run.ingest_job)
    "unchanged",
]


@dataclass(frozen=True)
class Reason:
    """One piece of evidence for a decision, with the words a person reads.

    >>> Reason("upstream_data_changed", "pricing:marts.agg_gmv_daily changed: version 41 -> 42",
    ...        upstream="pricing:marts.agg_gmv_daily").text
    'pricing:marts.agg_gmv_daily changed: version 41 -> 42'
    """

    code: ReasonCode
    text: str
    upstream: str | None = None
    components: tuple[
        str, ...
    ] = ()  # fingerprint components that changed: sql, config, macros, ...
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class NodeDecision:
    node_id: str
    project: str
    action: Action
    reasons: list[Reason] = field(default_factory=list)
    fingerprint: dict[str, str] = field(default_factory=dict)  # component -> hash
    # SQLMesh's own view for its nodes (authoritative; Splice never overrides it):
    # {"missing_intervals": [[start_ms, end_ms], ...], "change_category": "breaking" | ...}
    tool_view: dict[str, Any] = field(default_factory=dict)
    # the nearest built nodes (and ingestion jobs) it reads, through sources: pass them to
    # splice.plan.evidence.record_build(upstream=...) so the versions it saw are recorded
    inputs: list[str] = field(default_factory=list)

    @property
    def because(self) -> str:
        return "; ".join(r.text for r in self.reasons)


@dataclass
class Segment:
    """A maximal connected run of planned nodes of one project, executed by that project's executor."""

    id: str  # "s1", "s2", ... in run order
    project: str
    format: str  # dbt | sqlmesh
    environment: str
    node_ids: list[str]  # topological order; tests/audits included
    depends_on: list[str] = field(default_factory=list)  # segment ids that must succeed first


@dataclass
class Plan:
    target: str
    environments: dict[str, str]  # project -> tool environment for this target
    decisions: dict[str, NodeDecision]
    segments: list[Segment]  # in run order
    selector: str | None = None
    created_at: float = 0.0
    warnings: list[str] = field(default_factory=list)  # what the plan says beside decisions
    execution_time: str | None = None  # the clock SQLMesh planned with (ISO), None: now
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    # what the plan memo needs to remember the next no-op plan once this one ran
    # ({"code": ..., "exclude": ...}, see splice.plan.planner.remember_after_run); empty when
    # the planner did not make it. Not part of the plan's data.
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def to_build(self) -> list[str]:
        return [n for n, d in self.decisions.items() if d.action == "build"]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("memo", None)
        return d
