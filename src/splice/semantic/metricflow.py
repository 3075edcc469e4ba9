"""dbt's semantic layer through MetricFlow's own compiler (dbt-metricflow).

A ``[[metrics]] semantic = "gmv"`` entry means exactly what the team's dashboards mean by
``gmv``: its per-interval SQL is what MetricFlow's engine plans and renders for
``metric_time__<grain>`` and the entry's ``group_by``, from the ``semantic_manifest.json``
that ``dbt parse`` writes, never re-derived by hand. MetricFlow only compiles here: its SQL
client is :class:`_CompileOnly`, which names the engine (so the SQL is in the warehouse's
dialect) and refuses to run anything; Splice runs the query itself, on its own connection.

MetricFlow is imported lazily (half a second): a workspace without semantic metrics never
pays for it.

>>> engine_for("duckdb"), engine_for("postgres"), engine_for("spark")
('DUCKDB', 'POSTGRES', 'DATABRICKS')
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.errors import ConfigError

#: sqlglot dialect -> MetricFlow's SqlEngine member (Spark SQL renders as Databricks does)
ENGINES = {
    "duckdb": "DUCKDB",
    "postgres": "POSTGRES",
    "spark": "DATABRICKS",
    "databricks": "DATABRICKS",
    "snowflake": "SNOWFLAKE",
    "bigquery": "BIGQUERY",
    "redshift": "REDSHIFT",
    "trino": "TRINO",
    "athena": "ATHENA",
}
#: the renderer module and class of each engine
_RENDERERS = {
    "DUCKDB": ("metricflow.sql.render.duckdb_renderer", "DuckDbSqlPlanRenderer"),
    "POSTGRES": ("metricflow.sql.render.postgres", "PostgresSQLSqlPlanRenderer"),
    "DATABRICKS": ("metricflow.sql.render.databricks", "DatabricksSqlPlanRenderer"),
    "SNOWFLAKE": ("metricflow.sql.render.snowflake", "SnowflakeSqlPlanRenderer"),
    "BIGQUERY": ("metricflow.sql.render.big_query", "BigQuerySqlPlanRenderer"),
    "REDSHIFT": ("metricflow.sql.render.redshift", "RedshiftSqlPlanRenderer"),
    "TRINO": ("metricflow.sql.render.trino", "TrinoSqlPlanRenderer"),
    "ATHENA": ("metricflow.sql.render.athena", "AthenaSqlPlanRenderer"),
}
METRIC_TIME = "metric_time"


def engine_for(dialect: str) -> str:
    """MetricFlow's engine for a sqlglot dialect; a one-line error for one it has none for."""
    try:
        return ENGINES[dialect]
    except KeyError:
        raise ConfigError(
            f"MetricFlow renders no SQL for the {dialect} dialect "
            f"(it knows {', '.join(sorted(ENGINES))}).",
            fix="watch this number as a metric written as SQL ([[metrics]] node/time/value)",
        ) from None


class _CompileOnly:
    """The SQL client MetricFlow's engine is given: it names the engine and renders its SQL,
    and refuses to execute (Splice measures on its own connection)."""

    def __init__(self, engine: str) -> None:
        import importlib

        from metricflow.protocols.sql_client import SqlEngine

        self.sql_engine_type = SqlEngine[engine]
        module, cls = _RENDERERS[engine]
        self.sql_plan_renderer = getattr(importlib.import_module(module), cls)()

    def render_bind_parameter_key(self, bind_parameter_key: str) -> str:
        return f"${bind_parameter_key}"

    def _refuse(self, *_a: Any, **_k: Any) -> Any:
        raise RuntimeError("Splice uses MetricFlow to compile only")

    query = execute = dry_run = _refuse

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class Compiled:
    """One metric's per-interval query as its tool renders it, parsed (the tool's comments
    on its plan left out)."""

    query: Any  # sqlglot's exp.Select
    time_alias: str  # the output column of the interval (metric_time__day)
    dimension_aliases: tuple[str, ...]  # one per group_by, in its order
    value_alias: str  # the metric's output column


@dataclass(frozen=True)
class SemanticMetric:
    """A metric a dbt project declares, as ``splice metrics discover`` lists it."""

    name: str
    label: str | None
    description: str | None
    type: str
    dimensions: tuple[str, ...]  # the names group_by accepts (entity-qualified)
    models: tuple[str, ...]  # the semantic models it is computed from


_LOCK = threading.Lock()
_ENGINES: dict[tuple[str, float, str], Any] = {}


def _engine(manifest: Path, dialect: str) -> Any:
    """MetricFlow's engine over ``manifest`` for ``dialect`` (one per file version)."""
    engine = engine_for(dialect)
    try:
        mtime = manifest.stat().st_mtime
    except OSError:
        raise ConfigError(
            f"no semantic manifest at {manifest}.",
            fix="run `splice ls` once (dbt parse writes it), or check the project is a dbt project",
        ) from None
    key = (str(manifest), mtime, engine)
    with _LOCK:
        if key not in _ENGINES:
            import logging

            from metricflow.engine.metricflow_engine import MetricFlowEngine
            from metricflow_semantics.model.dbt_manifest_parser import (
                parse_manifest_from_dbt_generated_manifest,
            )
            from metricflow_semantics.model.semantic_manifest_lookup import (
                SemanticManifestLookup,
            )

            for name in ("metricflow", "metricflow_semantics"):
                logging.getLogger(name).setLevel(logging.WARNING)  # its own chatter
            parsed = parse_manifest_from_dbt_generated_manifest(
                manifest_json_string=manifest.read_text()
            )
            for stale in [k for k in _ENGINES if k[0] == key[0]]:  # an older version
                del _ENGINES[stale]
            _ENGINES[key] = MetricFlowEngine(
                semantic_manifest_lookup=SemanticManifestLookup(parsed),
                sql_client=_CompileOnly(engine),  # type: ignore[arg-type]
            )
        return _ENGINES[key]


def metrics(manifest: Path, dialect: str = "duckdb") -> list[SemanticMetric]:
    """Every metric ``manifest`` declares, with the dimensions it may be grouped by."""
    mf = _engine(manifest, dialect)
    out = []
    for m in mf.list_metrics(include_dimensions=True):
        dims = sorted(
            {
                d.dunder_name if hasattr(d, "dunder_name") else d.qualified_name
                for d in (m.dimensions or [])
                if str(getattr(d, "type", "")).lower().endswith("categorical")
            }
        )
        models = sorted(
            {
                r.semantic_model_name
                for r in mf._semantic_manifest_lookup.metric_lookup.get_derived_from_semantic_models(
                    _metric_ref(m.name)
                )
            }
        )
        out.append(SemanticMetric(
            name=m.name, label=getattr(m, "label", None), description=m.description,
            type=str(getattr(m.type, "value", m.type)), dimensions=tuple(dims),
            models=tuple(models),
        ))  # fmt: skip
    return sorted(out, key=lambda s: s.name)


def _metric_ref(name: str) -> Any:
    from metricflow_semantic_interfaces.references import MetricReference

    return MetricReference(element_name=name)


def compile_metric(
    manifest: Path, metric: str, group_by: list[str], grain: str, dialect: str
) -> Compiled:
    """``metric`` per ``grain`` and ``group_by`` as MetricFlow's engine renders it."""
    from metricflow.engine.metricflow_engine import MetricFlowQueryRequest
    from metricflow_semantics.errors.error_classes import MetricFlowException

    mf = _engine(manifest, dialect)
    known = [
        str(r.element_name) for r in mf._semantic_manifest_lookup.metric_lookup.metric_references
    ]
    if metric not in known:
        raise ConfigError(
            f"the semantic layer has no metric {metric!r} (it declares "
            f"{', '.join(sorted(known)) or 'none'}).",
            fix="set semantic to one `splice metrics discover` lists",
        )
    time = f"{METRIC_TIME}__{grain}"
    request = MetricFlowQueryRequest.create(metric_names=[metric], group_by_names=[time, *group_by])
    try:
        explained = mf.explain(request)
    except MetricFlowException as e:
        has = next((m.dimensions for m in metrics(manifest, dialect) if m.name == metric), ())
        unknown = [g for g in group_by if g not in has]
        if unknown:
            raise ConfigError(
                f"the semantic metric {metric!r} has no dimension {', '.join(map(repr, unknown))}"
                f" (it has: {', '.join(has) or 'none'}).",
                fix="set group_by to some of those (`splice metrics discover` lists them)",
            ) from None
        first = " ".join(str(e).split())[:400]
        raise ConfigError(
            f"MetricFlow cannot compile metric {metric!r} grouped by {', '.join(group_by) or 'day'}: {first}",
            fix="correct group_by (`splice metrics discover` lists each metric's dimensions)",
        ) from None
    import sqlglot
    from sqlglot import exp

    parsed = sqlglot.parse_one(explained.sql_statement.sql, read=dialect)
    assert isinstance(parsed, exp.Select)
    for part in parsed.walk():
        part.comments = None  # MetricFlow's notes on its plan: the query is the same without
    outputs = [p.alias_or_name for p in parsed.selects]
    dims = [a for a in outputs if a not in (time, metric)]
    dims.sort(key=lambda a: group_by.index(a) if a in group_by else len(group_by))
    return Compiled(query=parsed, time_alias=time, dimension_aliases=tuple(dims),
                    value_alias=metric)  # fmt: skip
