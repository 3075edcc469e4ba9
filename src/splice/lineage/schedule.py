"""Analyse a workspace's models in dependency order on one process pool, each as soon as what it
reads is known.

A model's lineage needs the columns of what it reads, which its upstream models' lineage gives:
so models cannot all be analysed at once. Levels (every model of depth k together, then k + 1)
leave cores idle at every level's end, and a level of few models ran in this process alone.
Here a model is handed to the pool as soon as each model it waits on is done, with one pool for
the whole workspace; this process meanwhile prepares the next requests (their schemas from the
results so far) and records results.

>>> from splice.lineage.parallel import LineageRequest
>>> done = {}
>>> def prepare(ids):
...     return {i: LineageRequest(f"SELECT 1 AS {i}") for i in ids}
>>> def finish(i, ml, fresh):
...     done[i] = list(ml.columns)
>>> analyse_in_order(["a", "b", "c"], {"b": {"a"}, "c": {"a", "b"}}, prepare, finish, workers=1)
3
>>> done
{'a': ['a'], 'b': ['b'], 'c': ['c']}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from splice.lineage.parallel import (
    MIN_PARALLEL,
    LineageRequest,
    available_cores,
    pool_context,
    run_chunk,
)
from splice.lineage.types import ModelLineage

#: Requests per task handed to a worker: enough to amortise the hand-over, few enough that a
#: model's dependents need not wait long for the rest of its chunk.
CHUNK = 4


def analyse_in_order(
    order: list[str],
    waits_on: Mapping[str, set[str]],
    prepare: Callable[[list[str]], Mapping[str, LineageRequest | ModelLineage]],
    finish: Callable[[str, ModelLineage, bool], None],
    workers: int | None = None,
) -> int:
    """Analyse ``order`` (ids, a topological order) where ``waits_on[id]`` are the ids it needs
    done first. ``prepare(ids)`` gives each ready id a request, or its lineage when no analysis
    is needed (a cached or opaque one); ``finish(id, lineage, fresh)`` is called once per id, in
    this process, before any id waiting on it is prepared. Returns how many were analysed.
    The first requests run in this process; a pool of ``workers`` (default: every core) starts
    once ``MIN_PARALLEL`` have been asked.

    Ids waiting on each other (a cycle) are taken in ``order`` once nothing else is ready."""
    wanted = set(order)
    pending = {i: {d for d in waits_on.get(i, ()) if d in wanted and d != i} for i in order}
    children: dict[str, list[str]] = {}
    for i, deps in pending.items():
        for d in deps:
            children.setdefault(d, []).append(i)
    ready = [i for i in order if not pending[i]]
    queued = set(ready)
    left = set(order)
    n_workers = available_cores() if workers is None else max(1, workers)
    use_pool = n_workers > 1
    pool: ProcessPoolExecutor | None = None
    inflight: dict[Future[list[ModelLineage]], list[str]] = {}
    analysed = 0

    def complete(i: str, ml: ModelLineage, fresh: bool) -> None:
        finish(i, ml, fresh)
        left.discard(i)
        for c in children.get(i, ()):
            pending[c].discard(i)
            if not pending[c] and c not in queued:
                queued.add(c)
                ready.append(c)

    try:
        while left:
            if ready:
                batch = list(ready)
                ready.clear()
                prepared = prepare(batch)
                todo: list[tuple[str, LineageRequest]] = []
                for i in batch:
                    p = prepared[i]
                    if isinstance(p, ModelLineage):
                        complete(i, p, False)
                    else:
                        todo.append((i, p))
                if not todo:
                    continue
                analysed += len(todo)
                # a pool once there is enough to analyse (a cold pass): a few models changed
                # since the last pass are analysed here, without forking this process
                if use_pool and pool is None and analysed >= MIN_PARALLEL:
                    try:
                        pool = ProcessPoolExecutor(max_workers=n_workers, mp_context=pool_context())
                    except (OSError, RuntimeError, ImportError):  # no processes here: serially
                        use_pool = False
                if pool is None:
                    for i, req in todo:
                        complete(i, req.run(), True)
                    continue
                size = max(1, min(CHUNK, -(-len(todo) // (n_workers * 2))))
                for k in range(0, len(todo), size):
                    part = todo[k : k + size]
                    fut = pool.submit(run_chunk, [r for _, r in part])
                    inflight[fut] = [i for i, _ in part]
                continue
            if inflight:
                done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                for fut in done:
                    ids = inflight.pop(fut)
                    for i, ml in zip(ids, fut.result(), strict=True):
                        complete(i, ml, True)
                continue
            # nothing ready, nothing running, ids left: they wait on each other
            first = next(i for i in order if i in left and i not in queued)
            queued.add(first)
            ready.append(first)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return analysed
