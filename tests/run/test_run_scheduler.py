"""The scheduler on its own: order, coalescing, parallelism by capability (no tools)."""

from __future__ import annotations

import threading
import time

from splice.plan.model import Segment
from splice.run.scheduler import schedule
from splice.warehouse.engines import capabilities as warehouse_capabilities


def seg(sid: str, project: str, fmt: str, deps: list[str] | None = None) -> Segment:
    return Segment(sid, project, fmt, "prod", [f"{project}:{sid}"], deps or [])


def test_serial_runs_in_dependency_order_and_coalesces_same_project() -> None:
    # s1 pricing; s2 and s3 finance, both only after s1; s4 finance after s2
    segs = [
        seg("s1", "pricing", "sqlmesh"),
        seg("s2", "finance", "dbt", ["s1"]),
        seg("s3", "finance", "dbt", ["s1"]),
        seg("s4", "finance", "dbt", ["s2"]),
    ]
    batches: list[list[str]] = []
    schedule(segs, lambda b: batches.append([s.id for s in b]), max_parallel=1)
    assert batches == [["s1"], ["s2", "s3"], ["s4"]]


def test_serial_without_coalescing_is_plan_order() -> None:
    segs = [seg("s1", "a", "dbt"), seg("s2", "a", "dbt"), seg("s3", "b", "sqlmesh", ["s1"])]
    batches: list[list[str]] = []
    schedule(segs, lambda b: batches.append([s.id for s in b]), max_parallel=1, coalesce=False)
    assert batches == [["s1"], ["s2"], ["s3"]]


def test_parallel_respects_dependencies_and_exclusive_formats() -> None:
    # three independent dbt segments and two independent sqlmesh ones, then one after all
    segs = [seg(f"d{i}", f"dbt{i}", "dbt") for i in range(3)]
    segs += [seg(f"m{i}", f"mesh{i}", "sqlmesh") for i in range(2)]
    segs.append(seg("last", "dbt9", "dbt", [s.id for s in segs]))
    lock = threading.Lock()
    running: dict[str, int] = {"dbt": 0, "sqlmesh": 0}
    peak: dict[str, int] = {"dbt": 0, "sqlmesh": 0, "all": 0}
    finished: list[str] = []

    def run_batch(batch: list[Segment]) -> None:
        (s,) = batch
        with lock:
            assert all(d in finished for d in s.depends_on), s.id
            running[s.format] += 1
            peak[s.format] = max(peak[s.format], running[s.format])
            peak["all"] = max(peak["all"], sum(running.values()))
        time.sleep(0.05)
        with lock:
            running[s.format] -= 1
            finished.append(s.id)

    schedule(segs, run_batch, max_parallel=4, exclusive_formats=frozenset({"dbt"}))
    assert finished[-1] == "last" and len(finished) == 6
    assert peak["dbt"] == 1  # dbt keeps process-global state: never two at once
    assert peak["sqlmesh"] == 2 and peak["all"] >= 2  # the others do run side by side


def test_duckdb_is_one_writer() -> None:
    caps = warehouse_capabilities("duckdb")
    assert not caps.concurrent_writers and caps.max_parallel == 1
    assert warehouse_capabilities("postgres").concurrent_writers
