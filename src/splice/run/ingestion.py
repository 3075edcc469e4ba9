"""Reloading an ingestion job for named days: the executor of a repair's ``reload`` segment
(:mod:`splice.repair.apply_plan` plans it; the runner runs it like any other segment).

The job runs through the runner that owns it, as ``[[ingestion]].command`` declares it (a dlt
pipeline script or any shell command), in the workspace directory, with ``{start}`` and
``{end}`` filled in; ``python`` as the first word means this Python.  Its output goes to the
tools' log; a non-zero exit fails the segment (and so skips the restatement and the rebuild
after it), with the last lines of its output as the reason.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from splice.run.children import run_child
from splice.run.executors import (
    INGESTION_CAPABILITIES,
    SegmentJob,
    SegmentOutcome,
    Sink,
    release_all,
)
from splice.run.report import NodeResult

TIMEOUT_S = 3600


def job_argv(command: list[str]) -> list[str]:
    """The command to run: ``python`` means this interpreter.

    >>> job_argv(["python", "x.py"])[0] == sys.executable
    True
    """
    return [sys.executable if command[0] in ("python", "python3") else command[0], *command[1:]]


@dataclass
class IngestionExecutor:
    ws: Any
    project: str
    format: str = "ingestion"
    capabilities = INGESTION_CAPABILITIES

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome:
        outcome = SegmentOutcome(method="ingestion reload")
        release_all(self.ws)  # the job is another process: DuckDB lets one process write
        for node in job.nodes:
            decision = job.decisions.get(node.id)
            view = decision.tool_view if decision is not None else {}
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
            duration = time.perf_counter() - t0
            ok = code == 0
            sink.node_reported(node.id, "success" if ok else "error", duration)
            tail = " | ".join([ln for ln in out.strip().splitlines() if ln.strip()][-3:])
            outcome.nodes[node.id] = NodeResult(
                node_id=node.id,
                project=node.project,
                segment_id=job.segment.id,
                kind=node.kind,
                status="success" if ok else "failed",
                duration=duration,
                message=(tail or None) if ok else f"exit {code}: {tail or 'no output'}",
            )
        return outcome
