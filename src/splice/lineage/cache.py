"""Content hashes for column lineage, so an unchanged model is never analysed twice.

The caller keeps ``{lineage_key(...): ModelLineage.to_dict()}`` (Splice keeps it in its SQLite
state) and only calls :func:`~splice.lineage.analyse_model` on a miss.  The key covers everything
the result depends on: the SQL text, the dialect it is parsed in and the one that names the
result (``identity_dialect``), the columns and types of the tables it reads (normalised, so key
order and identifier case do not matter), the defaults for 1- and 2-part names, the output
relation, the engine, sqlglot and Splice versions, and whatever else the caller adds
(``extra``: Splice adds the versions of the tools that rendered the SQL).

>>> s = {"warehouse": {"raw": {"t": {"a": "INT"}}}}
>>> k = lineage_key("SELECT a FROM raw.t", "duckdb", s, default_catalog="warehouse")
>>> len(k), k == lineage_key("SELECT a FROM raw.t", "duckdb", {"WAREHOUSE": {"RAW": {"T": {"A": "INT"}}}},
...                          default_catalog="warehouse")
(64, True)
>>> k == lineage_key("SELECT a FROM raw.t", "duckdb", {"warehouse": {"raw": {"t": {"a": "TEXT"}}}},
...                  default_catalog="warehouse")
False
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

import sqlglot

from splice.graph.model import Relation
from splice.lineage.schema import normalise_schema
from splice.lineage.types import ENGINE_VERSION


def lineage_key(
    sql_text: str | None,
    dialect: str,
    schema_subset: Any = None,
    *,
    default_catalog: str | None = None,
    default_schema: str | None = None,
    output: Relation | None = None,
    identity_dialect: str | None = None,
    extra: Any = None,
) -> str:
    """sha256 (hex) of the normalised inputs of :func:`~splice.lineage.analyse_model`.

    >>> k = lineage_key("SELECT 1 AS x", "snowflake")
    >>> k == lineage_key("SELECT 1 AS x", "snowflake", identity_dialect="duckdb")
    False
    >>> k == lineage_key("SELECT 1 AS x", "snowflake", extra={"sqlmesh": "0.1"})
    False
    """
    payload = {
        "engine": ENGINE_VERSION,
        "sqlglot": sqlglot.__version__,
        "splice": package_version("splice"),
        "dialect": dialect,
        "identity": identity_dialect or dialect,
        "extra": extra,
        "sql": (sql_text or "").strip(),
        "schema": normalise_schema(schema_subset, dialect, default_catalog=default_catalog),
        "catalog": default_catalog,
        "db": default_schema,
        "output": output.key if output is not None else None,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


@lru_cache(maxsize=64)
def package_version(name: str) -> str:
    """The installed version of a distribution (``splice`` is Splice itself), ``"-"`` if none.

    >>> package_version("sqlglot") == sqlglot.__version__, package_version("no-such-dist-x")
    (True, '-')
    """
    if name == "splice":
        from splice.version import __version__

        return __version__
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except (PackageNotFoundError, ValueError):
        return "-"


def tool_versions(tool: str, adapter_type: str | None = None) -> dict[str, str]:
    """The versions of what renders a model of ``tool`` and analyses it: a new dbt, adapter or
    SQLMesh may render the same model differently, a new sqlglot or Splice analyse it differently.

    >>> sorted(tool_versions("dbt", "duckdb"))
    ['dbt-core', 'dbt-duckdb', 'splice', 'sqlglot']
    >>> sorted(tool_versions("sqlmesh"))
    ['splice', 'sqlglot', 'sqlmesh']
    """
    names = ["splice", "sqlglot"]
    if tool == "dbt":
        names += ["dbt-core", f"dbt-{adapter_type or 'duckdb'}"]
    elif tool == "sqlmesh":
        names.append("sqlmesh")
    return {n: package_version(n) for n in names}
