"""The segment scheduler: topological order, parallel only where the warehouse and tools allow.

The warehouse's capabilities are data (:data:`WAREHOUSES`): DuckDB allows one writer process,
so its segments run one after another; a warehouse with concurrent writers runs independent
segments in a thread pool, at most one at a time per *exclusive* executor format (dbt keeps
process-global state). When segments run one at a time, ready segments of the same project and
environment are handed to the tool together (one dbt build instead of two), which keeps the
overhead over running the tools by hand small; each keeps its own result.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from splice.plan.model import Segment


@dataclass(frozen=True)
class WarehouseCapabilities:
    """concurrent_writers: may several writers build at once; max_parallel: how many segments;
    grants: has roles, so read access is granted relation by relation (splice access);
    transactions: several statements commit or roll back as one (an undo restores every
    relation at once, and its restore test rolls back); undo: ``"copy"`` (the rows a repair
    rewrites are copied aside and put back) or ``"version"`` (an engine with table versions,
    such as Delta Lake: the version is recorded and restored; see
    :mod:`splice.repair.undo_spark`)."""

    concurrent_writers: bool
    max_parallel: int
    grants: bool = False
    transactions: bool = True
    undo: str = "copy"


WAREHOUSES: dict[str, WarehouseCapabilities] = {
    "duckdb": WarehouseCapabilities(concurrent_writers=False, max_parallel=1),
    # a server: several writers at once; a run's lock is per target (and an advisory lock)
    "postgres": WarehouseCapabilities(concurrent_writers=True, max_parallel=4, grants=True),
    # a Spark Connect server: clients in several processes at once, one metastore behind it
    "spark": WarehouseCapabilities(concurrent_writers=True, max_parallel=2, transactions=False),
}
DEFAULT_WAREHOUSE = WarehouseCapabilities(concurrent_writers=True, max_parallel=4)


def warehouse_capabilities(kind: str) -> WarehouseCapabilities:
    return WAREHOUSES.get(kind, DEFAULT_WAREHOUSE)


def dependencies(segments: list[Segment]) -> dict[str, set[str]]:
    known = {s.id for s in segments}
    return {s.id: {d for d in s.depends_on if d in known} for s in segments}


def schedule(
    segments: list[Segment],
    run_batch: Callable[[list[Segment]], None],
    *,
    max_parallel: int = 1,
    exclusive_formats: frozenset[str] = frozenset(),
    coalesce: bool = True,
) -> None:
    """Call ``run_batch`` on every segment once its dependencies have run (whatever their
    outcome: skipping downstream of a failure is the runner's decision, made at batch start).

    With ``max_parallel == 1`` batches run in this thread, in plan order; each batch is one
    ready segment plus (``coalesce``) every other ready segment of its project and
    environment. Otherwise single-segment batches run in a pool of ``max_parallel`` threads.
    """
    deps = dependencies(segments)
    order = {s.id: i for i, s in enumerate(segments)}
    pending = list(segments)
    done: set[str] = set()

    def ready() -> list[Segment]:
        return [s for s in pending if deps[s.id] <= done]

    if max_parallel <= 1:
        while pending:
            now = ready()
            if not now:  # a dependency cycle or an unknown id: run the rest in plan order
                now = [pending[0]]
            first = now[0]
            batch = [first]
            if coalesce:
                batch += [
                    s
                    for s in now[1:]
                    if (s.project, s.environment, s.format)
                    == (first.project, first.environment, first.format)
                ]
            for s in batch:
                pending.remove(s)
            run_batch(batch)
            done.update(s.id for s in batch)
        return

    running: dict[Future[None], Segment] = {}
    with ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="splice-seg") as pool:
        while pending or running:
            busy = {s.format for s in running.values() if s.format in exclusive_formats}
            started = False
            for s in sorted(ready(), key=lambda s: order[s.id]):
                if len(running) >= max_parallel:
                    break
                if s.format in exclusive_formats and s.format in busy:
                    continue
                pending.remove(s)
                running[pool.submit(run_batch, [s])] = s
                if s.format in exclusive_formats:
                    busy.add(s.format)
                started = True
            if not running:
                if pending and not started:  # unsatisfiable dependencies: run in plan order
                    s = pending.pop(0)
                    running[pool.submit(run_batch, [s])] = s
                continue
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for f in finished:
                seg = running.pop(f)
                done.add(seg.id)
                f.result()  # a batch that raised stops the run (the runner catches its own)
