"""Measuring in the warehouse: one pushed-down query per spec, on one connection per call.

:func:`measure_jobs` measures one watch's specs: those a code change may have rewritten over
every interval they have stored (:mod:`splice.watch.restated`), the others from their start;
then, as of the newest day found, the tables without a time column; and it keeps only the
closed intervals of coarse grains (:func:`splice.watch.table_monitors.closed_rows`).
"""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import TYPE_CHECKING, Any

from splice.errors import WarehouseError
from splice.watch.damage import SOURCE_KINDS
from splice.watch.grid import as_date
from splice.watch.restated import Restatements
from splice.watch.specs import MetricSpec
from splice.watch.table_monitors import closed_rows

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def measure(
    ws: Workspace, jobs: list[tuple[MetricSpec, date | None]]
) -> list[list[tuple[Any, ...]]]:
    """Run each spec's query from its start; one connection for the call, closed at once."""
    import duckdb

    from splice.warehouse.connect import connect

    out: list[list[tuple[Any, ...]]] = []
    with connect(ws, "splice watch") as con:
        for spec, start in jobs:
            sql = spec.sql(ws.dialect, start)
            try:
                out.append(con.execute(sql).fetchall())
            except duckdb.Error as e:
                first = str(e).splitlines()[0]
                raise WarehouseError(
                    f"metric {spec.name!r} on {spec.node_id}: the warehouse refused its query "
                    f"({first}).",
                    fix=f"check that {spec.relation.key} is built in this target "
                    "(splice run), and the metric's columns and value",
                ) from None
    return out


def _loaded_ahead(graph: Any, node_id: str) -> bool:
    """A source's relation (what an ingestion job or another system loads) is loaded ahead of
    the models that read it: its newest day says nothing about how far they should be built
    (a watch between the morning's load and the run would call every model "missing")."""
    node = graph.nodes.get(node_id) if graph is not None else None
    return node is not None and node.kind in SOURCE_KINDS


def measure_jobs(ws: Workspace, graph: Any, jobs: list[Any], known: dict[str, Any]
                 ) -> tuple[date | None, Restatements]:  # fmt: skip
    """Measure every job's rows (``job.rows``); returns the newest day anywhere (what "late"
    and "missing" are judged against) and the code changes' comparisons to make."""
    restate = Restatements(ws, graph, ws.state.conn)
    timed = [j for j in jobs if not j.spec.per_table]
    measured = measure(ws, [(j.spec, restate.start(j)) for j in timed]) if timed else []
    for job, rows in zip(timed, measured, strict=True):
        job.rows = rows
    judging = [j for j in timed
               if j.spec.grain == "day" and getattr(j.spec, "judges_freshness", True)]  # fmt: skip
    built = [j for j in judging if not _loaded_ahead(graph, j.spec.node_id)]
    ref_end: date | None = None
    for job in built or judging:  # sources alone judge freshness only where nothing is built
        stored_end = None if job.reset else known[job.spec.name].measured_through
        starts = {r[0] for r in job.rows}  # a year of 10,000 series has 365 distinct ones
        starts.discard(None)
        for cand in [stored_end, *(as_date(t) for t in starts)]:
            if cand is not None and (ref_end is None or cand > ref_end):
                ref_end = cand
    # tables without a time column: as of the newest interval; coarse grains: closed ones only
    untimed = [j for j in jobs if j.spec.per_table]
    for job in untimed:
        job.spec = dataclasses.replace(job.spec, at=ref_end or date.today())
    if untimed:
        for job, rows in zip(untimed, measure(ws, [(j.spec, None) for j in untimed]), strict=True):
            job.rows = rows
    for job in jobs:
        job.rows = closed_rows(job.spec, job.rows, ref_end)
    return ref_end, restate
