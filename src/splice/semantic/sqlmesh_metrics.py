"""SQLMesh's ``METRIC`` definitions through SQLMesh's own metric rewriter.

A ``[[metrics]] semantic = "NAME"`` whose metric a SQLMesh project declares (``metrics/*.sql``:
``METRIC (name ..., expression SUM(schema.model.column))``) is measured by the query SQLMesh's
rewriter (:func:`sqlmesh.core.metric.rewrite`) expands from ``SELECT <time> AS metric_time__day,
<group_by>, METRIC(NAME) FROM __semantic.__table GROUP BY ...`` over the project's models: the
measure's model aggregated by the interval and dimensions (and the joins the models' grains and
references give, when a dimension lives in another model). The interval is the measure model's
time column (SQLMesh's ``time_column``), truncated to the grain.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from splice.errors import ConfigError
from splice.semantic.metricflow import METRIC_TIME, Compiled

SEMANTIC_TABLE = "__semantic.__table"


def metric_query(metric: str, time_column: str, group_by: list[str], grain: str) -> exp.Select:
    """The semantic query SQLMesh's rewriter expands.

    >>> metric_query("gmv", "booking_date", ["currency"], "week").sql()
    "SELECT DATE_TRUNC('WEEK', booking_date) AS metric_time__week, currency AS currency, METRIC_AGG(gmv) AS gmv FROM __semantic.__table GROUP BY DATE_TRUNC('WEEK', booking_date), currency"
    """
    from sqlmesh.core.dialect import MetricAgg

    time: exp.Expr = exp.column(time_column)
    if grain != "day":
        time = exp.DateTrunc(this=time, unit=exp.Literal.string(grain.upper()))
    dims = [exp.column(g) for g in group_by]
    return (
        exp.select(
            exp.alias_(time, f"{METRIC_TIME}__{grain}"),
            *[exp.alias_(d, d.name) for d in dims],
            exp.alias_(MetricAgg(this=exp.column(metric)), metric),
        )
        .from_(exp.to_table(SEMANTIC_TABLE))
        .group_by(time.copy(), *[d.copy() for d in dims])
    )


def compile_sqlmesh_metric(context: Any, metric: str, group_by: list[str], grain: str,
                           time_column: str, dialect: str) -> Compiled:  # fmt: skip
    """``metric`` per ``grain`` and ``group_by`` as SQLMesh's rewriter expands it, in
    ``dialect``; a one-line error naming what SQLMesh could not resolve."""
    from sqlmesh.core.metric import rewrite
    from sqlmesh.core.reference import ReferenceGraph

    metrics = dict(context.metrics)
    if metric not in metrics:
        raise ConfigError(
            f"the SQLMesh project has no metric {metric!r} (it declares "
            f"{', '.join(sorted(metrics)) or 'none'}).",
            fix="set semantic to one `splice metrics discover` lists",
        )
    q = metric_query(metric, time_column, group_by, grain)
    try:
        graph = ReferenceGraph(context.models.values())
        out = rewrite(q, graph, metrics, dialect=dialect)
    except Exception as e:  # noqa: BLE001 - the rewriter's own errors are plain KeyErrors
        raise ConfigError(
            f"SQLMesh cannot expand metric {metric!r} grouped by "
            f"{', '.join(group_by) or 'day'} ({type(e).__name__}: {e}).",
            fix="group_by names columns of the metric's models (`splice metrics discover`)",
        ) from None
    return Compiled(query=out, time_alias=f"{METRIC_TIME}__{grain}",
                    dimension_aliases=tuple(group_by), value_alias=metric)  # fmt: skip
