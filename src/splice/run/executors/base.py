"""What every executor shares: the job it is given (:class:`SegmentJob`), the outcome it
returns (:class:`SegmentOutcome`), where it reports live progress (:class:`Sink`), what it can
do as data (:class:`ExecutorCapabilities`), and the helpers the tools' modules use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from splice.graph.model import Graph, Node
from splice.plan.model import NodeDecision, Segment
from splice.run.report import CheckResult, NodeResult

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


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
    kinds: the graph node kinds it hands to its tool; the rest (sources, externals,
        dashboards) are graph nodes with nothing to build.
    """

    exact_selection: bool
    in_process: bool
    owns_state: bool
    exclusive: bool
    check_kind: str
    rows: str | None
    on_failure: str
    kinds: tuple[str, ...] = ()


class Sink(Protocol):
    """Where an executor reports live progress (the journal and the progress display)."""

    def node_started(self, node_id: str) -> None: ...

    def node_reported(self, node_id: str, status: str, duration: float | None) -> None:
        """The tool finished a node (shown live; committed by the runner after the segment)."""
        ...


@dataclass
class SegmentJob:
    """One segment as an executor receives it: its nodes, their decisions, the graph."""

    segment: Segment
    nodes: list[Node]  # what to hand to the tool (executable, not skipped), in topological order
    decisions: dict[str, NodeDecision]
    graph: Graph
    execution_time: datetime | None = None


@dataclass
class SegmentOutcome:
    """What an executor returns: each node's and check's result, or the segment's error."""

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
    """One tool's executor: built for a project of a workspace, it runs one segment at a time."""

    format: str
    capabilities: ExecutorCapabilities

    def __init__(self, ws: Workspace, project: str) -> None: ...

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome: ...


def release_all(ws: Workspace) -> None:
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


def short_message(text: str, n: int = 4) -> str:
    """The first ``n`` non-blank lines of a tool's message, on one line, cut to 600 characters.

    >>> short_message("Error\\n\\n  in model x\\n  line 3", n=2)
    'Error in model x'
    """
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return " ".join(lines[:n])[:600]
