"""Analyse many models at once: serially for a few, on a process pool for many.

Parsing and qualifying a model costs milliseconds of pure Python, so threads do not help; a pool of
processes (one per core) does.  Workers are forked when this process has one thread, else started
through ``forkserver`` (forking a process that has threads, such as a server, can deadlock).

>>> reqs = [LineageRequest("SELECT 1 AS one"), ("SELECT 2 AS two", {"dialect": "duckdb"})]
>>> [list(m.columns) for m in analyse_many(reqs)]
[['one'], ['two']]
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from splice.graph.model import Relation
from splice.lineage.cache import lineage_key
from splice.lineage.engine import analyse_model
from splice.lineage.types import ModelLineage

#: Below this many models a pool costs more than it saves (starting it is ~0.2-0.4 s).
MIN_PARALLEL = 48


@dataclass
class LineageRequest:
    """The inputs of one :func:`~splice.lineage.analyse_model` call."""

    sql: str | None
    dialect: str = "duckdb"
    schema: Any = None
    output: Relation | None = None
    default_catalog: str | None = None
    default_schema: str | None = None
    identity_dialect: str | None = None

    def key(self) -> str:
        """The content hash to cache the result by (see :func:`~splice.lineage.lineage_key`)."""
        return lineage_key(
            self.sql,
            self.dialect,
            self.schema,
            default_catalog=self.default_catalog,
            default_schema=self.default_schema,
            output=self.output,
            identity_dialect=self.identity_dialect,
        )

    def run(self) -> ModelLineage:
        return analyse_model(
            self.sql,
            dialect=self.dialect,
            schema=self.schema,
            output=self.output,
            default_catalog=self.default_catalog,
            default_schema=self.default_schema,
            identity_dialect=self.identity_dialect,
        )


Item = LineageRequest | Mapping[str, Any] | tuple[str | None, Mapping[str, Any]] | str | None


def _as_request(item: Item) -> LineageRequest:
    """A request from a :class:`LineageRequest`, a mapping of its fields, ``(sql, {fields})``
    or bare SQL."""
    if isinstance(item, LineageRequest):
        return item
    if isinstance(item, Mapping):
        return LineageRequest(**item)
    if isinstance(item, tuple):
        sql, kwargs = item
        return LineageRequest(sql, **kwargs)
    return LineageRequest(item)


def run_chunk(chunk: list[LineageRequest]) -> list[ModelLineage]:
    return [r.run() for r in chunk]


def _run_chunk_with_stats(
    chunk: list[LineageRequest],
) -> tuple[list[ModelLineage], int, float, int]:
    """Run a chunk in a worker; also report the worker's pid, CPU seconds and max RSS (KiB)."""
    import resource

    t0 = time.process_time()
    out = run_chunk(chunk)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out, os.getpid(), time.process_time() - t0, rss


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def pool_context() -> multiprocessing.context.BaseContext:
    """``fork`` when this process runs a single thread (fast, nothing re-imported), else
    ``forkserver`` (forking a process with threads can deadlock), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["splice.lineage.parallel"])
        return ctx
    return multiprocessing.get_context("spawn")


def analyse_many(
    items: Iterable[Item],
    workers: int | None = None,
    *,
    min_parallel: int = MIN_PARALLEL,
    stats: dict[str, Any] | None = None,
) -> list[ModelLineage]:
    """Analyse every request, in order.

    ``workers=None`` uses every core when there are at least ``min_parallel`` requests;
    ``workers=1`` forces a serial run.  Never raises for a bad model (each result carries its own
    opaque reason).  ``stats``, when given, is filled with how the work ran: ``mode`` (serial or
    pool), ``workers``, ``seconds``, and for a pool ``worker_cpu_s`` and ``worker_max_rss_mb``.
    """
    t0 = time.perf_counter()
    reqs = [_as_request(i) for i in items]
    n_workers = available_cores() if workers is None else max(1, workers)
    n_workers = min(n_workers, max(1, len(reqs) // 8))
    info: dict[str, Any] = {"mode": "serial", "workers": 1, "models": len(reqs)}
    out: list[ModelLineage] | None = None
    if n_workers > 1 and len(reqs) >= min_parallel:
        # Contiguous chunks, several per worker so a slow chunk does not leave a core idle.
        n_chunks = n_workers * 6
        size = -(-len(reqs) // n_chunks)
        chunks = [reqs[i : i + size] for i in range(0, len(reqs), size)]
        try:
            with ProcessPoolExecutor(max_workers=n_workers, mp_context=pool_context()) as pool:
                out = []
                cpu = 0.0
                rss: dict[int, int] = {}
                for part, pid, cpu_s, rss_kb in pool.map(_run_chunk_with_stats, chunks):
                    out.extend(part)
                    cpu += cpu_s
                    rss[pid] = max(rss.get(pid, 0), rss_kb)
            info.update(
                mode="pool",
                workers=len(rss),
                worker_cpu_s=round(cpu, 3),
                worker_max_rss_mb=round(max(rss.values(), default=0) / 1024, 1),
            )
        except (OSError, RuntimeError, ImportError):  # no processes here (sandbox): run serially
            out = None
    if out is None:
        out = run_chunk(reqs)
    info["seconds"] = round(time.perf_counter() - t0, 3)
    if stats is not None:
        stats.update(info)
    return out
