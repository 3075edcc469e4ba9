"""Metrics and monitors: what ``splice watch`` measures, and the SQL that measures it.

A :class:`MetricSpec` is one pushed-down query over one node's relation: it groups by the
interval (the time column truncated to the grain) and the dimensions, and computes one or more
:class:`Measure` s, each an aggregate sqlglot expression.  Every ``(measure, dimension values)``
pair is a series; every ``(series, interval)`` a point.

There are two sources of specs:

- declared metrics (``[[metrics]]`` in splice.toml), validated against the graph: the node
  exists and has a relation, the columns exist, the time column is a date or timestamp, the
  value is one aggregate expression the dialect can express.  A bad declaration is a
  :class:`~splice.errors.ConfigError` naming the metric and the fix.
- default monitors, derived from the graph for every node with a time column: row volume,
  null rate of the key columns, distinct values and duplicates of the grain (per interval);
  and, for aggregate tables whose grain is ``(time, dimensions...)``, every numeric column per
  dimension value (so the rates in ``fx.daily_rates`` are watched per currency) and the lag in
  days of every other date column behind the time column (``as_of``).  Key columns come from
  the tools' own metadata: SQLMesh audits (``unique_combination_of_columns``,
  ``unique_values``, ``not_null``).  A monitor that measures exactly what a declared metric
  does (the same aggregate of the same node, time column, grain and dimensions) is left out:
  the metric's owner watches it, and one finding is counted once.  From the column lineage
  (:mod:`splice.watch.graph_monitors`): the coverage of every join and the rows per value
  (slice) of the dimensions the graph knows.

SQL is built as sqlglot expressions and transpiled to the warehouse dialect; nothing from a
declaration is pasted into SQL text.

>>> from datetime import date
>>> from splice.graph.model import Relation
>>> spec = MetricSpec(
...     name="gmv_usd", node_id="p:marts.agg", relation=Relation("wh", "marts", "agg"),
...     time="booking_date", time_type="DATE", dimensions=["currency"], grain="day",
...     measures=[Measure("gmv_usd", "sum(gmv_usd)", "value", parse_value("sum(gmv_usd)"))])
>>> print(spec.sql("duckdb", start=date(2026, 9, 21)))
SELECT CAST("booking_date" AS DATE) AS "interval_start", "currency" AS "d0", SUM("gmv_usd") AS "m0" FROM "wh"."marts"."agg" WHERE "booking_date" >= CAST('2026-09-21' AS DATE) GROUP BY CAST("booking_date" AS DATE), "currency"
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from splice.config.workspace import CONFIG_FILE, MetricSection
from splice.errors import ConfigError
from splice.graph.model import Graph
from splice.watch.specs import (
    INTERVAL,
    KIND_DETECTORS,
    VALUE_DETECTORS,
    ColumnTypes,
    Measure,
    MetricSpec,
    NodeKeys,
    declared_fields,
    is_date,
    is_numeric,
    is_temporal,
    is_text,
    node_keys,
    relation_of,
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: What other packages read from here: the specs' types and helpers (:mod:`splice.watch.specs`),
#: and the builders of this module.
__all__ = [
    "INTERVAL",
    "KIND_DETECTORS",
    "VALUE_DETECTORS",
    "ColumnTypes",
    "Measure",
    "MetricSpec",
    "NodeKeys",
    "declared_metric",
    "default_monitors",
    "is_numeric",
    "is_temporal",
    "is_text",
    "node_keys",
    "parse_value",
    "relation_of",
    "watch_specs",
]
MAX_NULL_RATE_COLUMNS = 20


# -- declared metrics -------------------------------------------------------------------------
def parse_value(text: str, dialect: str = "duckdb") -> exp.Expr:
    """Parse a metric's value: exactly one aggregate expression, or a ValueError saying why.

    >>> parse_value("sum(gmv_usd) / count(*)").sql("duckdb")
    'SUM(gmv_usd) / COUNT(*)'
    >>> parse_value("gmv_usd")
    Traceback (most recent call last):
    ...
    ValueError: 'gmv_usd' is not an aggregate (no sum, count, avg, min, max, ...)
    """
    try:
        e = sqlglot.parse_one(text, read=dialect)
    except ParseError as err:
        first = str(err).splitlines()[0]
        raise ValueError(f"{text!r} is not one SQL expression ({first})") from None
    if e is None:
        raise ValueError("the value is empty")
    if isinstance(e, exp.Alias):
        raise ValueError(f"{text!r} has an alias; the metric's name is its alias")
    if isinstance(e, exp.Query | exp.Block | exp.Command | exp.DDL | exp.DML | exp.Tuple):
        raise ValueError(f"{text!r} is a statement or list, not one expression")
    for bad, what in (
        (exp.Window, "a window function"),
        (exp.Subquery, "a subquery"),
        (exp.Select, "a subquery"),
        (exp.Placeholder, "a placeholder"),
        (exp.Parameter, "a parameter"),
    ):
        if e.find(bad) is not None:
            raise ValueError(f"{text!r} contains {what}")
    aggs = list(e.find_all(exp.AggFunc))
    if not aggs:
        raise ValueError(f"{text!r} is not an aggregate (no sum, count, avg, min, max, ...)")
    for a in aggs:
        if any(inner is not a for inner in a.find_all(exp.AggFunc)):
            raise ValueError(f"{text!r} nests one aggregate inside another")
    for c in e.find_all(exp.Column):
        if c.find_ancestor(exp.AggFunc) is None and not _in_agg_filter(c):
            raise ValueError(f"column {c.sql()!r} in {text!r} is outside any aggregate")
        if c.table:
            raise ValueError(f"column {c.sql()!r} is qualified; name the column alone")
    return e


def _in_agg_filter(c: exp.Column) -> bool:
    f = c.find_ancestor(exp.Filter)
    return f is not None and isinstance(f.this, exp.AggFunc)


def _closest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def declared_metric(
    index: int,
    m: MetricSection,
    graph: Graph,
    types: ColumnTypes,
    *,
    dialect: str,
    sensitivity: str,
    calendar: str | None,
) -> MetricSpec:
    """Validate one ``[[metrics]]`` entry against the graph and build its spec."""
    assert m.node is not None and m.time is not None and m.value is not None  # its validator
    where = f"{CONFIG_FILE}: metric {m.name!r} (metrics[{index}])"
    node = graph.nodes.get(m.node)
    if node is None:
        candidates = [
            n.id for n in graph.nodes.values() if n.kind in ("model", "source", "seed", "external")
        ]
        raise ConfigError(
            f"{where}: node {m.node!r} does not exist{_closest(m.node, candidates)}.",
            fix=f"set metrics[{index}].node to a node id from `splice ls` (project:name)",
        )
    relation = relation_of(node)
    if relation is None:
        raise ConfigError(
            f"{where}: node {m.node!r} ({node.kind}) has no warehouse relation to measure.",
            fix=f"point metrics[{index}].node at a model, seed or source",
        )
    cols = types.of(node)
    names = sorted(cols)

    def need(col: str, key: str) -> str:
        c = col.lower()
        if c not in cols:
            raise ConfigError(
                f"{where}: {key} {col!r} is not a column of {m.node}{_closest(c, names)}; "
                f"its columns are: {', '.join(names) or '(none known)'}.",
                fix=f"correct metrics[{index}].{key}",
            )
        return c

    time = need(m.time, "time")
    if not is_temporal(cols[time], dialect):
        what = f"of type {cols[time]}" if cols[time] else "of unknown type"
        raise ConfigError(
            f"{where}: time column {m.time!r} is {what}, not a date or timestamp.",
            fix=f"set metrics[{index}].time to a DATE or TIMESTAMP column of {m.node}"
            + (
                f" ({', '.join(c for c in names if is_temporal(cols[c], dialect))})"
                if any(is_temporal(cols[c], dialect) for c in names)
                else ""
            ),
        )
    dims = [need(d, "dimensions") for d in m.dimensions]
    try:
        expr = parse_value(m.value, dialect)
    except ValueError as e:
        raise ConfigError(
            f"{where}: value {e}.",
            fix=f'write metrics[{index}].value as one aggregate, e.g. "sum(amount)" or "count(*)"',
        ) from None
    for c in expr.find_all(exp.Column):
        need(c.name, "value column")
    spec = MetricSpec(
        node_id=node.id,
        relation=relation,
        time=time,
        time_type=cols[time],
        dimensions=dims,
        **declared_fields(m, where, m.value, expr, sensitivity=sensitivity, calendar=calendar),
    )
    spec.sql(dialect)  # refuses what the dialect cannot express, before anything is measured
    return spec


# -- default monitors --------------------------------------------------------------------------
def _agg(name: str, *args: exp.Expr) -> exp.Expr:
    return {
        "count": lambda: exp.Count(this=args[0] if args else exp.Star()),
        "avg": lambda: exp.Avg(this=args[0]),
    }[name]()


def _col(c: str) -> exp.Column:
    return exp.column(c, quoted=True)


def _null_rate(c: str) -> exp.Expr:
    # AVG(CASE WHEN c IS NULL THEN 1.0 ELSE 0.0 END)
    return exp.Avg(
        this=exp.Case(
            ifs=[
                exp.If(
                    this=exp.Is(this=_col(c), expression=exp.Null()),
                    true=exp.Literal.number("1.0"),
                )
            ],
            default=exp.Literal.number("0.0"),
        )
    )


def _duplicates(cols: list[str]) -> exp.Expr:
    # COUNT(CASE WHEN a IS NOT NULL AND ... THEN 1 END) - COUNT(DISTINCT a, ...)
    cond: exp.Expr | None = None
    for c in cols:
        part = exp.Not(this=exp.Is(this=_col(c), expression=exp.Null()))
        cond = part if cond is None else exp.And(this=cond, expression=part)
    assert cond is not None
    complete = exp.Count(this=exp.Case(ifs=[exp.If(this=cond, true=exp.Literal.number(1))]))
    distinct = exp.Count(this=exp.Distinct(expressions=[_col(c) for c in cols]))
    return exp.Sub(this=complete, expression=distinct)


def _lag_days(col: str, time: str) -> exp.Expr:
    # AVG(DATE_DIFF('day', col, time)): how many days col trails the time column
    return exp.Avg(
        this=exp.DateDiff(
            this=exp.cast(_col(time), exp.DataType.build("DATE")),
            expression=exp.cast(_col(col), exp.DataType.build("DATE")),
            unit=exp.var("DAY"),
        )
    )


def default_monitors(
    graph: Graph,
    types: ColumnTypes,
    *,
    dialect: str,
    sensitivity: str,
    calendar: str | None,
    exclude: list[str] | None = None,
) -> list[MetricSpec]:
    """Monitors derived from the graph for every node with a time column (see the module doc)."""
    specs: list[MetricSpec] = []
    skip = set(exclude or [])
    for node in sorted(graph.nodes.values(), key=lambda n: n.id):
        if node.id in skip or not node.time_column or node.kind not in ("model", "seed", "source"):
            continue
        rel = relation_of(node)
        if rel is None:
            continue
        cols = types.of(node)
        time = node.time_column.lower()
        if time not in cols or not is_temporal(cols[time] or "DATE", dialect):
            continue
        keys = node_keys(graph, node)
        grain = [c for c in keys.grain if c in cols]
        dims = [c for c in grain if c != time and is_text(cols[c], dialect)]
        if len(dims) != len(grain) - (1 if time in grain else 0) or len(dims) > 2:
            dims = []  # the grain is not (time, text dimensions...): no per-dimension values
        key_cols = [
            c
            for c in dict.fromkeys([*grain, *keys.unique, *keys.not_null])
            if c in cols and c != time
        ]
        if not key_cols:
            key_cols = [c for c in cols if c != time][:MAX_NULL_RATE_COLUMNS]
        base = node.id
        common = {
            "node_id": node.id,
            "relation": rel,
            "time": time,
            "time_type": cols[time] or "DATE",
            "grain": "day",
            "declared": False,
            "owner": node.owner,
            "sensitivity": sensitivity,
            "calendar": calendar,
        }
        rows: list[Measure] = [Measure(f"{base}/row_count", "row_count", "volume", _agg("count"))]
        for c in key_cols[:MAX_NULL_RATE_COLUMNS]:
            rows.append(Measure(f"{base}/null_rate({c})", f"null_rate({c})", "null_rate",
                                _null_rate(c), column=c))  # fmt: skip
        for d in dims:
            rows.append(Measure(f"{base}/distinct({d})", f"distinct({d})", "distinct",
                                exp.Count(this=exp.Distinct(expressions=[_col(d)])), column=d))  # fmt: skip
        if grain:
            label = f"duplicates({', '.join(grain)})"
            rows.append(Measure(f"{base}/{label}", label, "duplicates", _duplicates(grain)))
        for u in keys.unique:
            if u in cols and [u] != grain:
                rows.append(Measure(f"{base}/duplicates({u})", f"duplicates({u})", "duplicates",
                                    _duplicates([u]), column=u))  # fmt: skip
        lags = [c for c in cols if c != time and is_date(cols[c], dialect)]
        lag_measures = [
            Measure(f"{base}/lag_days({c})", f"lag_days({c})", "lag", _lag_days(c, time), column=c)
            for c in lags
        ]
        if not dims:
            rows += lag_measures
        specs.append(MetricSpec(name=f"{base}/rows", dimensions=[], measures=rows, **common))  # type: ignore[arg-type]
        if dims:
            values = [
                Measure(f"{base}/avg({c})", f"avg({c})", "value", exp.Avg(this=_col(c)), column=c)
                for c in cols
                if c != time and c not in grain and is_numeric(cols[c], dialect)
            ]
            values += lag_measures
            if values:
                specs.append(
                    MetricSpec(
                        name=f"{base}/by_{'_'.join(dims)}",
                        dimensions=dims,
                        measures=values,
                        **common,  # type: ignore[arg-type]
                    )
                )
    return specs


def watch_specs(
    ws: Workspace, graph: Graph | None = None, *, lineage: bool = True
) -> list[MetricSpec]:
    """Every spec ``splice watch`` measures in ``ws``: declared metrics first, then monitors
    (``lineage=False``: without the ones derived from column lineage, which may render models).

    Raises ConfigError on the first bad declaration (nothing has been measured yet).
    """
    graph = graph or ws.graph()
    wcfg = ws.config.watch
    from splice.watch.calendars import publishing_calendar

    publishing_calendar(wcfg.calendar)  # an unknown calendar is a config error, up front
    for m in ws.config.metrics:
        if m.calendar is not None:
            try:
                publishing_calendar(m.calendar)
            except ConfigError as e:
                raise ConfigError(
                    f"{CONFIG_FILE}: metric {m.name!r}: {e.message}", fix=e.fix
                ) from None
    types = ColumnTypes(ws)
    specs: list[MetricSpec] = []
    for i, m in enumerate(ws.config.metrics):
        if m.semantic is not None:
            from splice.watch.semantic import semantic_metric

            specs.append(semantic_metric(i, m, ws, graph, sensitivity=wcfg.sensitivity,
                                         calendar=wcfg.calendar))  # fmt: skip
            continue
        specs.append(declared_metric(i, m, graph, types, dialect=ws.dialect,
                                     sensitivity=wcfg.sensitivity, calendar=wcfg.calendar))  # fmt: skip
    if wcfg.default_monitors:
        # a semantic layer's calendar runs years ahead: never data to judge, never "newest"
        spines = [n.id for n in graph.nodes.values() if n.meta.get("time_spine")]
        exclude = [*wcfg.exclude, *spines]
        monitors = default_monitors(
            graph,
            types,
            dialect=ws.dialect,
            sensitivity=wcfg.sensitivity,
            calendar=wcfg.calendar,
            exclude=exclude,
        )
        from splice.watch.coverage import uncovered
        from splice.watch.graph_monitors import graph_monitors
        from splice.watch.table_monitors import table_monitors

        monitors += table_monitors(
            ws, graph, types, monitors, dialect=ws.dialect, sensitivity=wcfg.sensitivity,
            calendar=wcfg.calendar, exclude=exclude,
        )  # fmt: skip

        declared = list(specs)
        specs += uncovered(monitors, specs, ws.dialect)
        if lineage:
            specs += graph_monitors(ws, graph, types, declared, sensitivity=wcfg.sensitivity,
                                    calendar=wcfg.calendar, exclude=exclude)  # fmt: skip
    return specs
