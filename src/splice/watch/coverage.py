"""Default monitors a declared metric already covers: left out, so one finding counts once.

A default monitor (:func:`splice.watch.metrics.default_monitors`) that computes the same
aggregate of the same node, by the same time column, grain and dimensions as a declared
``[[metrics]]`` entry finds every anomaly of that metric a second time (the demo's
``avg(rate_to_usd)`` per currency and its declared ``fx_rate``): the declared metric, which has
an owner, is kept and the monitor's measure is dropped.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from splice.watch.specs import Measure, MetricSpec


def _same_sql(e: exp.Expr, dialect: str) -> str:
    """``e`` as SQL with identifiers unquoted and lower-cased: ``AVG("Rate")`` is ``avg(rate)``."""

    def plain(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Identifier):
            return exp.to_identifier(n.name.lower())
        return n

    return e.copy().transform(plain).sql(dialect=dialect).lower()


def covered_by(
    monitor: MetricSpec, measure: Measure, declared: list[MetricSpec], dialect: str
) -> str | None:
    """The declared metric that measures exactly what ``measure`` (a default monitor's) does:
    the same aggregate of the same node, by the same time column, grain and dimensions; None
    when none does.  Such a monitor would find every anomaly of the metric a second time."""
    mine = _same_sql(measure.expr, dialect)
    for d in declared:
        if (
            d.node_id == monitor.node_id
            and d.time == monitor.time
            and d.grain == monitor.grain
            and sorted(d.dimensions) == sorted(monitor.dimensions)
            and any(_same_sql(m.expr, dialect) == mine for m in d.measures)
        ):
            return d.name
    return None


def uncovered(
    monitors: list[MetricSpec], declared: list[MetricSpec], dialect: str
) -> list[MetricSpec]:
    """``monitors`` without the measures a declared metric already covers (:func:`covered_by`):
    one finding is counted once, under the metric its owner declared."""
    out = []
    for spec in monitors:
        keep = [m for m in spec.measures if covered_by(spec, m, declared, dialect) is None]
        if len(keep) == len(spec.measures):
            out.append(spec)
        elif keep:
            out.append(dataclasses.replace(spec, measures=keep))
    return out
