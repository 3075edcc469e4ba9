"""Reloading an ingestion job for named days: the executor of a repair's ``reload`` segment
(:mod:`splice.repair.apply_plan` plans it; the runner runs it like any other segment).

The job runs through the runner that owns it, as ``[[ingestion]].command`` declares it (a dlt
pipeline script or any shell command), in the workspace directory, with ``{start}`` and
``{end}`` filled in; ``python`` as the first word means this Python.  Its output goes to the
tools' log; a non-zero exit fails the segment (and so skips the restatement and the rebuild
after it), with the last lines of its output as the reason.

A job an orchestrator owns (``[ingestion.dagster]``) is not run here: its runs are queued
there exactly as the proposal recorded them (run config or partition tags), tagged with the
proposal, and polled to the end; each run's id, status and link go into the journal
(``NodeResult.external``) and so into the receipt. A failed or cancelled run fails the
segment. While a run is queued, ``.splice/locks/children/`` names it, so that whoever takes
over a killed apply stops it in the orchestrator too (:func:`splice.run.children.kill_orphans`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice.run.children import run_child
from splice.run.executors.base import (
    ExecutorCapabilities,
    SegmentJob,
    SegmentOutcome,
    Sink,
    release_all,
)
from splice.run.report import NodeResult

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

TIMEOUT_S = 3600

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


def job_argv(command: list[str]) -> list[str]:
    """The command to run: ``python`` means this interpreter.

    >>> job_argv(["python", "x.py"])[0] == sys.executable
    True
    """
    return [sys.executable if command[0] in ("python", "python3") else command[0], *command[1:]]


@dataclass
class IngestionExecutor:
    ws: Workspace
    project: str
    format: str = "ingestion"
    capabilities = INGESTION_CAPABILITIES

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome:
        outcome = SegmentOutcome(method="ingestion reload")
        release_all(self.ws)  # the job is another process: DuckDB lets one process write
        for node in job.nodes:
            decision = job.decisions.get(node.id)
            view = decision.tool_view if decision is not None else {}
            if view.get("orchestrator"):
                outcome.method = f"{view['orchestrator']['system']} reload"
                outcome.nodes[node.id] = self._orchestrated(job, node, decision, view, sink)
                continue
            argv = job_argv(list(view.get("command") or []))
            sink.node_started(node.id)
            t0 = time.perf_counter()
            with open(self.ws.log_path, "a") as log:
                log.write(f"\n===== reload {node.id}: {' '.join(argv)}\n")
                log.flush()
                try:  # the job is a child of this run: it dies with it (splice.run.children)
                    out, code = run_child(argv, cwd=self.ws.root, splice_dir=self.ws.splice_dir,
                                          timeout=TIMEOUT_S)  # fmt: skip
                except OSError as e:
                    out, code = str(e), -1
                log.write(out)
            outcome.log += f"$ {' '.join(argv)}\n{out}"
            duration = time.perf_counter() - t0
            ok = code == 0
            sink.node_reported(node.id, "success" if ok else "error", duration)
            tail = " | ".join([ln for ln in out.strip().splitlines() if ln.strip()][-3:])
            msg = (tail or None) if ok else f"exit {code}: {tail or 'no output'}"
            outcome.nodes[node.id] = _result(job, node, ok, duration, msg)
        return outcome

    def _orchestrated(self, job: SegmentJob, node: Any, decision: Any, view: dict[str, Any],
                      sink: Sink) -> NodeResult:  # fmt: skip
        """Queue the approved runs in the orchestrator that owns the job and wait for them."""
        from splice.errors import OrchestratorError
        from splice.orchestrators import for_step
        from splice.run.children import remote_run

        spec = view["orchestrator"]
        name = node.id.split(":", 1)[1]
        sink.node_started(node.id)
        t0 = time.perf_counter()
        runs: list[Any] = []
        error: str | None = None
        proposal = next((r.data.get("proposal") for r in decision.reasons if r.data), None)
        tags = {"splice/workspace": self.ws.config.workspace.name, "splice/node": node.id,
                **({"splice/proposal": str(proposal)} if proposal else {})}  # fmt: skip
        marks: list[Any] = []
        try:
            orch = for_step(self.ws.config.ingestion, self.ws.root, node.id, spec)
            requests = [(r["run_config"], {**r["tags"], **tags}) for r in spec["runs"]]

            def submitted(run: Any) -> None:
                marks.append(remote_run(self.ws.splice_dir, run, url=spec["url"],
                                        ingestion=name))  # fmt: skip
                with open(self.ws.log_path, "a") as log:
                    log.write(f"\n===== reload {node.id}: {run.system} run {run.run_id} "
                              f"queued ({run.url})\n")  # fmt: skip

            runs = orch.run_requests(requests, on_submit=submitted)
        except OrchestratorError as e:
            error = e.one_line()
        finally:
            for m in marks:
                m.unlink(missing_ok=True)
        duration = time.perf_counter() - t0
        bad = [r for r in runs if not r.ok]
        ok = error is None and not bad and bool(runs)
        sink.node_reported(node.id, "success" if ok else "error", duration)
        if error is None and bad:
            r = bad[0]
            error = (f"{r.system} run {r.run_id} {r.status}"
                     + (f": {r.message}" if r.message else "") + f" ({r.url})")  # fmt: skip
        done = ", ".join(f"{r.system} run {r.run_id} {r.status}" for r in runs)
        return _result(job, node, ok, duration, done if ok else error,
                       external=[r.as_dict() for r in runs] or None)  # fmt: skip


def _result(job: SegmentJob, node: Any, ok: bool, duration: float, message: str | None,
            external: list[dict[str, Any]] | None = None) -> NodeResult:  # fmt: skip
    return NodeResult(
        node_id=node.id,
        project=node.project,
        segment_id=job.segment.id,
        kind=node.kind,
        status="success" if ok else "failed",
        duration=duration,
        message=message,
        external=external,
    )
