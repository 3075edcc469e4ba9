"""SQLMesh's console protocol, recorded: the per-model outcomes of a SQLMesh plan or run
(batches, failures, skips, warnings) as SQLMesh reports them to its console."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class SqlmeshRecorder:
    """Collects per-model outcomes from SQLMesh's console calls (see :mod:`splice.run.executors`).

    Built lazily as a subclass of SQLMesh's TerminalConsole, so SQLMesh's own output still goes
    to the log.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[str, float] = {}
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.failed: dict[str, BaseException | str] = {}
        self.failed_node_kind: dict[str, str] = {}
        self.skipped: set[str] = set()
        self.warnings: list[str] = []
        self.on_start: Callable[[str], None] | None = None
        self.on_batch: Callable[[str, bool, float | None], None] | None = None


def make_console(rec: SqlmeshRecorder, stream: Any) -> Any:
    """A SQLMesh TerminalConsole writing to ``stream`` that also records into ``rec``."""
    from rich.console import Console as RichConsole

    from splice.support.sqlmesh_import import import_sqlmesh

    import_sqlmesh()
    from sqlmesh.core.console import TerminalConsole

    class RecordingConsole(TerminalConsole):  # type: ignore[misc]
        def start_snapshot_evaluation_progress(
            self, snapshot: Any, audit_only: bool = False
        ) -> None:
            with rec.lock:
                first = snapshot.name not in rec.started
                rec.started.setdefault(snapshot.name, time.perf_counter())
            if first and rec.on_start:
                rec.on_start(snapshot.name)
            super().start_snapshot_evaluation_progress(snapshot, audit_only)

        def update_snapshot_evaluation_progress(
            self,
            snapshot: Any,
            interval: Any,
            batch_idx: int,
            duration_ms: int | None,
            num_audits_passed: int,
            num_audits_failed: int,
            audit_only: bool = False,
            execution_stats: Any = None,
            auto_restatement_triggers: Any = None,
        ) -> None:
            rows = getattr(execution_stats, "total_rows_processed", None)
            with rec.lock:
                rec.batches.setdefault(snapshot.name, []).append(
                    {
                        "interval": [int(interval[0]), int(interval[1])],
                        "ok": duration_ms is not None,
                        "duration_ms": duration_ms,
                        "audits_passed": num_audits_passed,
                        "audits_failed": num_audits_failed,
                        "rows": rows,
                    }
                )
            if rec.on_batch:
                rec.on_batch(
                    snapshot.name, duration_ms is not None, (duration_ms or 0) / 1000.0 or None
                )
            super().update_snapshot_evaluation_progress(
                snapshot,
                interval,
                batch_idx,
                duration_ms,
                num_audits_passed,
                num_audits_failed,
                audit_only,
                execution_stats,
                auto_restatement_triggers,
            )

        def log_failed_models(self, errors: list[Any]) -> None:
            with rec.lock:
                for err in errors:
                    name = getattr(err.node, "snapshot_name", None)
                    if name:
                        rec.failed[name] = err.__cause__ or err
                        rec.failed_node_kind[name] = type(err.node).__name__
            super().log_failed_models(errors)

        def log_skipped_models(self, snapshot_names: set[str]) -> None:
            with rec.lock:
                rec.skipped.update(snapshot_names)
            super().log_skipped_models(snapshot_names)

        def log_warning(self, short_message: str, long_message: str | None = None) -> None:
            with rec.lock:
                rec.warnings.append(short_message.strip())
            super().log_warning(short_message, long_message)

    rich = RichConsole(file=stream, force_terminal=False, no_color=True, width=120)
    return RecordingConsole(console=rich)
