"""The segment scheduler: topological order, parallel only where the warehouse and tools allow.

The warehouse's capabilities are data (:func:`splice.warehouse.engines.capabilities`): DuckDB
allows one writer process, so its segments run one after another; a warehouse with concurrent
writers runs independent segments in a thread pool, at most one at a time per *exclusive*
executor format (dbt keeps process-global state). When segments run one at a time, ready
segments of the same project and environment are handed to the tool together (one dbt build
instead of two), which keeps the overhead over running the tools by hand small; each keeps its
own result.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from splice.plan.model import Segment


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
