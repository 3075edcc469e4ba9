"""How Splice renders a dbt project for column lineage: in its adapter's dialect, and with each
incremental model's incremental branch.

- The dialect: dbt compiles SQL for the adapter of the profile's target (``metadata.adapter_type``
  in the manifest); Splice parses it in that adapter's sqlglot dialect, so a Snowflake project's
  ``DATEADD(month, 1, x)`` is a function of ``x``, not a read of a column ``month``.
- The incremental branch: ``{% if is_incremental() %} ... {{ this }} ... {% endif %}`` is false
  when dbt compiles a model whose table does not exist yet, and true once it does, so the
  lineage would change with the warehouse.  For lineage Splice compiles every incremental model
  as an incremental run sees it (``is_incremental()`` true; no query to the warehouse), which is
  what runs every day: its reads of its own table (``{{ this }}``) show as edges to the model's
  own earlier state.  The project's files are never touched: the macro is swapped in the
  manifest held in memory for the duration of the compile only.  When that branch cannot be
  compiled without the warehouse (``run_query("select max(ts) from " ~ this)`` inside it), the
  project is compiled again with ``is_incremental()`` false everywhere: the first run's SQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: dbt adapter type -> sqlglot dialect, where the names differ or the adapter speaks another
#: engine's SQL.  An adapter not listed uses the sqlglot dialect of the same name, if any.
ADAPTER_DIALECTS = {
    "duckdb": "duckdb",
    "motherduck": "duckdb",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "postgres": "postgres",
    "redshift": "redshift",
    "databricks": "databricks",
    "spark": "spark",
    "glue": "spark",
    "trino": "trino",
    "starburst": "trino",
    "athena": "athena",
    "clickhouse": "clickhouse",
    "sqlserver": "tsql",
    "fabric": "tsql",
    "synapse": "tsql",
    "materialize": "postgres",
    "greenplum": "postgres",
    "risingwave": "risingwave",
    "oracle": "oracle",
    "mysql": "mysql",
    "mariadb": "mysql",
    "sqlite": "sqlite",
    "teradata": "teradata",
    "doris": "doris",
    "starrocks": "starrocks",
    "hive": "hive",
    "impala": "hive",
    "dremio": "dremio",
    "exasol": "exasol",
    "singlestore": "singlestore",
}


def dialect_for_adapter(adapter_type: str | None, default: str) -> str:
    """The sqlglot dialect for a dbt adapter type (``default``: the workspace's dialect, for an
    adapter sqlglot does not know).

    >>> [dialect_for_adapter(a, "duckdb") for a in ("snowflake", "bigquery", "postgres", "duckdb")]
    ['snowflake', 'bigquery', 'postgres', 'duckdb']
    >>> [dialect_for_adapter(a, "duckdb") for a in ("databricks", "spark", "redshift", "sqlserver")]
    ['databricks', 'spark', 'redshift', 'tsql']
    >>> dialect_for_adapter("some_new_adapter", "duckdb"), dialect_for_adapter(None, "postgres")
    ('duckdb', 'postgres')
    """
    if not adapter_type:
        return default
    name = adapter_type.lower()
    if name in ADAPTER_DIALECTS:
        return ADAPTER_DIALECTS[name]
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(name)
    except ValueError:
        return default
    return name


#: is_incremental() as an incremental run sees it, without asking the warehouse.
INCREMENTAL_BRANCH_MACRO = (
    "{% macro is_incremental() %}"
    "{{ return(model.config.materialized == 'incremental') }}"
    "{% endmacro %}"
)
#: is_incremental() as the first run (or a full refresh) sees it.
FIRST_RUN_MACRO = "{% macro is_incremental() %}{{ return(False) }}{% endmacro %}"


@contextlib.contextmanager
def incremental_branch(manifest: Any, incremental: bool = True) -> Iterator[None]:
    """While open, every ``is_incremental`` macro of ``manifest`` (dbt's, or a project's own
    override) is true for incremental models (``incremental=False``: false for every model);
    the originals come back on exit.  The manifest must not be used by another thread meanwhile
    (a Workspace, and so its providers, serves one caller at a time).

    Every node is marked uncompiled first: dbt injects an ephemeral model's CTE only into a
    node it has not injected before, so a second compile on the same manifest in memory would
    give SQL that reads ``__dbt__cte__x`` without defining it."""
    _uncompiled(manifest)
    saved: list[tuple[Any, str]] = []
    for macro in getattr(manifest, "macros", {}).values():
        if getattr(macro, "name", None) == "is_incremental":
            saved.append((macro, macro.macro_sql))
            macro.macro_sql = INCREMENTAL_BRANCH_MACRO if incremental else FIRST_RUN_MACRO
    try:
        yield
    finally:
        for macro, sql in saved:
            macro.macro_sql = sql


def _uncompiled(manifest: Any) -> None:
    for node in getattr(manifest, "nodes", {}).values():
        if getattr(node, "extra_ctes_injected", False):
            node.extra_ctes_injected = False
            node.extra_ctes = []
            node.compiled = False
