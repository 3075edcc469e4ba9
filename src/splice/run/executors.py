"""Executors: one per format, each running one segment through its tool, in process.

- dbt: ``dbtRunner`` (with the manifest Splice already parsed) ``build`` with exact node
  selection: one selector per node, derived from its unique_id and checked against dbt's own
  matcher, and ``--indirect-selection empty`` so that only the planned tests run.
- SQLMesh: the project's ``Context``: ``run`` for missing intervals with ``select_models`` and
  ``no_auto_upstream`` (only the planned models), or ``plan(..., auto_apply=True)`` when the
  environment has never been planned, did not finish its last plan, or a planned model's code
  differs from the environment's. Per-model outcomes come from SQLMesh's console protocol
  (:class:`_SqlmeshRecorder`): ``start_snapshot_evaluation_progress`` /
  ``update_snapshot_evaluation_progress`` per batch, ``log_failed_models`` (the scheduler's
  ``NodeExecutionFailedError`` list, each with the cause: ``NodeAuditsErrors`` for blocking
  audits) and ``log_skipped_models``; after a plan, the environment's snapshots say what was
  promoted.

The dbt executor lives in :mod:`splice.run.dbt_executor`, the SQLMesh one in
:mod:`splice.run.sqlmesh_executor`; this module holds what they share. Each executor
declares what it can do as data (:class:`ExecutorCapabilities`); the scheduler
reads those, never the class. All tool chatter goes to the workspace log (splice.support.capture).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from splice.graph.model import Graph, Node
from splice.plan.model import NodeDecision, Segment
from splice.run.report import CheckResult, NodeResult


@dataclass(frozen=True)
class ExecutorCapabilities:
    """What an executor can do, as data.

    exact_selection: builds exactly the nodes handed to it (nothing upstream or downstream).
    in_process: runs inside Splice's process (no subprocess).
    owns_state: the tool keeps its own record of what is built (SQLMesh's intervals), so an
        interrupted build needs no marker in Splice's evidence: the tool still sees it missing.
    exclusive: keeps process-global state (dbt's flags and adapters): at most one segment of
        this format runs at a time, whatever the warehouse allows.
    check_kind: the graph kind of its checks (tests or audits), reported as check_finished.
    rows: where row counts come from, or None when the tool does not report them.
    on_failure: what a failed build leaves in the warehouse (for the report and docs).
    """

    exact_selection: bool
    in_process: bool
    owns_state: bool
    exclusive: bool
    check_kind: str
    rows: str | None
    on_failure: str


DBT_CAPABILITIES = ExecutorCapabilities(
    exact_selection=True,
    in_process=True,
    owns_state=False,
    exclusive=True,
    check_kind="test",
    rows="adapter_response.rows_affected (dbt-duckdb does not report it)",
    on_failure=(
        "a model whose SQL fails keeps its previous relation: tables and views are built "
        "under a temporary name and renamed in one transaction, incrementals roll back the "
        "failed insert/merge; a model whose blocking test fails has already replaced its "
        "relation (dbt builds, then tests): Splice records it as failed and skips everything "
        "downstream"
    ),
)

SQLMESH_CAPABILITIES = ExecutorCapabilities(
    exact_selection=True,
    in_process=True,
    owns_state=True,
    exclusive=False,
    check_kind="audit",
    rows="execution_stats.total_rows_processed (not reported on DuckDB)",
    on_failure=(
        "a failed plan does not promote: the environment keeps its previous versions; a failed "
        "run does not record the failed interval (it is retried next time), but an interval "
        "whose blocking audit fails has already been written to the table the environment "
        "reads (SQLMesh audits after inserting)"
    ),
)

INGESTION_CAPABILITIES = ExecutorCapabilities(
    exact_selection=True,
    in_process=False,
    owns_state=False,
    exclusive=True,
    check_kind="none",
    rows=None,
    on_failure=(
        "whatever the job wrote before it failed stays written (a dlt merge commits per load); "
        "the undo recorded before a repair restores the rows of its days"
    ),
)

CAPABILITIES: dict[str, ExecutorCapabilities] = {
    "dbt": DBT_CAPABILITIES,
    "sqlmesh": SQLMESH_CAPABILITIES,
    "ingestion": INGESTION_CAPABILITIES,  # a repair's reload (splice.run.ingestion)
}

#: Node kinds an executor hands to its tool; the rest (sources, externals, dashboards) are
#: graph nodes with nothing to build.
EXECUTABLE = {"dbt": ("model", "seed", "snapshot", "test"), "sqlmesh": ("model", "seed", "audit")}


class Sink(Protocol):
    """Where an executor reports live progress (the journal and the progress display)."""

    def node_started(self, node_id: str) -> None: ...

    def node_reported(self, node_id: str, status: str, duration: float | None) -> None:
        """The tool finished a node (shown live; committed by the runner after the segment)."""
        ...


@dataclass
class SegmentJob:
    segment: Segment
    nodes: list[Node]  # what to hand to the tool (executable, not skipped), in topological order
    decisions: dict[str, NodeDecision]
    graph: Graph
    execution_time: datetime | None = None


@dataclass
class SegmentOutcome:
    method: str
    nodes: dict[str, NodeResult] = field(default_factory=dict)
    checks: dict[str, CheckResult] = field(default_factory=dict)
    error: str | None = None  # the segment as a whole failed (the tool raised)
    notes: list[str] = field(default_factory=list)
    #: the tool's own output while it ran this segment (what it printed and logged)
    log: str = ""


#: The tool's output kept in the journal per segment: its last lines, each cut to a length.
LOG_LINES, LOG_LINE_CHARS = 400, 2000
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def tool_log(text: str) -> dict[str, Any]:
    r"""A segment's tool output as the journal keeps it: ``{"log": [lines], "log_lines": total}``
    (the last :data:`LOG_LINES` lines, terminal colour codes removed, blank lines dropped, a line
    rewritten with ``\r`` as the terminal shows it last; the whole output stays in
    ``.splice/logs/tools.log``).

    >>> tool_log("\x1b[32mOK\x1b[0m created model\n\nDone.\n")
    {'log': ['OK created model', 'Done.'], 'log_lines': 2}
    >>> tool_log("10%\r100%\r\nok")["log"]
    ['100%', 'ok']
    >>> tool_log("")
    {}
    """
    lines = []
    for raw in _ANSI.sub("", text or "").split("\n"):
        shown = [p for p in raw.split("\r") if p.strip()]  # a terminal shows the last rewrite
        if shown:
            lines.append(shown[-1].rstrip()[:LOG_LINE_CHARS])
    if not lines:
        return {}
    return {"log": lines[-LOG_LINES:], "log_lines": len(lines)}


class Executor(Protocol):
    format: str
    capabilities: ExecutorCapabilities

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome: ...


def executor_for(ws: Any, project: str, fmt: str) -> Executor:
    if fmt == "dbt":
        from splice.run.dbt_executor import DbtExecutor

        return DbtExecutor(ws, project)
    if fmt == "sqlmesh":
        from splice.run.sqlmesh_executor import SqlmeshExecutor

        return SqlmeshExecutor(ws, project)
    if fmt == "ingestion":  # a repair's reload step (splice.repair.apply_plan)
        from splice.run.ingestion import IngestionExecutor

        return IngestionExecutor(ws, project)
    raise ValueError(f"no executor for format {fmt!r}")


def release_all(ws: Any) -> None:
    """Release the warehouse file: every tool connection of every project of ``ws``."""
    from splice.providers.dbt import release_warehouse

    for spec in ws.config.projects:
        if spec.format == "sqlmesh" and spec.name in ws._providers:  # only those opened
            ws.provider(spec.name).release()  # SQLMesh's connections; the Context stays
    release_warehouse()  # dbt-duckdb keeps the file until close_all_connections()


def without_jvm_trace(text: str) -> str:
    """A tool's error message without the JVM stack Spark appends to it.

    >>> without_jvm_trace("[X] bad column\\n  \\n  JVM stacktrace:\\n  at a.b(C.scala:1)")
    '[X] bad column'
    """
    return text.split("JVM stacktrace:", 1)[0].rstrip()


def _short(text: str, n: int = 4) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return " ".join(lines[:n])[:600]
