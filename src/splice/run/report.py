"""What a run did, as plain data: per node, per check (dbt test / SQLMesh audit), per segment.

Node statuses:

- ``success``: the tool built it and its blocking checks passed; committed as evidence;
- ``noop``: the tool had nothing to do (SQLMesh: no missing intervals); committed as evidence;
- ``failed``: the tool failed to build it, or a blocking check of it failed, or (SQLMesh) it
  was evaluated in a plan that SQLMesh did not promote; recorded as a failed attempt;
- ``ephemeral``: a dbt ephemeral model: dbt inlines its SQL into the models that read it and
  builds nothing for it; committed as evidence (its code is part of what they built), counted
  neither as built nor as failed;
- ``skipped``: not attempted because a node upstream of it failed (``skipped_because``: the
  nearest failed node(s) upstream on its own paths, comma-separated);
- ``interrupted``: its run died while it was being built (found by the next run).

Check statuses: ``pass``, ``warn`` (non-blocking), ``fail``, ``error``, ``skipped``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FAILED_NODE = ("failed", "interrupted")
FAILED_CHECK = ("fail", "error")


@dataclass
class NodeResult:
    node_id: str
    project: str
    segment_id: str
    kind: str
    status: str
    duration: float | None = None
    rows: int | None = None
    message: str | None = None
    skipped_because: str | None = None  # the failed node upstream of a skipped one
    version: int | None = None  # the evidence version recorded for it
    intervals: list[list[int]] | None = None  # SQLMesh: the model's intervals after the run
    checks_failed: list[str] = field(default_factory=list)  # failed tests/audits of this node
    # runs an orchestrator made for it (a reload queued through Dagster): id, status, link
    external: list[dict[str, Any]] | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILED_NODE


@dataclass
class CheckResult:
    node_id: str  # the test / audit node
    project: str
    segment_id: str
    of: list[str]  # the node(s) it checks
    status: str
    duration: float | None = None
    failures: int | None = None  # failing rows, where the tool counts them
    message: str | None = None
    blocking: bool = True

    @property
    def failed(self) -> bool:
        return self.status in FAILED_CHECK


@dataclass
class SegmentResult:
    id: str
    project: str
    format: str
    environment: str
    # success | failed (nothing built) | partial (some built, some failed) | incomplete (nothing
    # failed here, but an upstream failure left nodes out) | skipped (all left out) | interrupted
    status: str
    method: str | None = None  # "dbt build", "sqlmesh run", "sqlmesh plan"
    duration: float | None = None
    node_ids: list[str] = field(default_factory=list)  # what was handed to the tool
    skipped: list[str] = field(default_factory=list)  # planned nodes left out (upstream failed)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RunReport:
    run_id: str
    target: str
    status: str  # success | failed | interrupted
    started_at: float
    finished_at: float | None = None
    selector: str | None = None
    exclude: str | None = None
    execution_time: str | None = None
    segments: list[SegmentResult] = field(default_factory=list)
    nodes: dict[str, NodeResult] = field(default_factory=dict)
    checks: dict[str, CheckResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    planner: str = "splice.plan.planner"  # or "full" (splice run --full)
    # project -> the tool's own target / environment it ran (dbt target, SQLMesh environment)
    environments: dict[str, str] = field(default_factory=dict)
    # seconds: "tools" (inside dbt/SQLMesh, summed over tool invocations), "total" (the run)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "success"

    @property
    def duration(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.started_at

    @property
    def built(self) -> list[str]:
        return [n for n, r in self.nodes.items() if r.status == "success"]

    @property
    def failed_nodes(self) -> list[str]:
        return [n for n, r in self.nodes.items() if r.failed]

    @property
    def skipped_nodes(self) -> list[str]:
        return [n for n, r in self.nodes.items() if r.status == "skipped"]

    @property
    def failed_checks(self) -> list[str]:
        return [c for c, r in self.checks.items() if r.failed]

    @property
    def failed_segments(self) -> list[str]:
        return [s.id for s in self.segments if s.status in ("failed", "partial", "interrupted")]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.nodes.values():
            out[r.status] = out.get(r.status, 0) + 1
        for c in self.checks.values():
            key = f"checks_{c.status}"
            out[key] = out.get(key, 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "counts": self.counts(),
            "failed_segments": self.failed_segments,
            "failed_nodes": self.failed_nodes,
            "failed_checks": self.failed_checks,
            "skipped_nodes": self.skipped_nodes,
            "environments": dict(self.environments),
            "notes": self.notes,
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["duration"] = self.duration
        d.update(self.summary())
        d["ok"] = self.ok
        return d
