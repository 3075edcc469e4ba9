"""A dbt manifest read as Splice's graph: node names (versions, packages, prefixes), the unit
tests and semantic layer as extra nodes, and what each node says about keys, columns, owners
and versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from splice.graph.model import Node

#: dbt resource types Splice builds or tests -> Splice's node kind.
KINDS = {"model": "model", "seed": "seed", "snapshot": "snapshot", "test": "test"}

#: dbt resources that are neither built nor tested by Splice's plan, listed with their edges:
#: manifest attribute -> (Splice kind, id prefix)
SEMANTIC = {
    "semantic_models": ("semantic_model", "semantic_model"),
    "metrics": ("metric", "metric"),
    "saved_queries": ("saved_query", "saved_query"),
}


def node_names(m: Any, root_pkg: str | None) -> dict[str, str]:
    """unique_id -> the node's name in Splice (the part after ``project:``).

    A versioned model is ``name.vN`` (dbt's own selector form, and its fqn's tail); a name two
    packages share is prefixed with its package outside the root package; sources, exposures,
    unit tests and the semantic layer carry a prefix, as in ``source:shop.orders``.
    """
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for n in m.nodes.values():
        if n.resource_type.value in KINDS:
            counts[versioned(n)] = counts.get(versioned(n), 0) + 1
    for uid, n in m.nodes.items():
        if n.resource_type.value not in KINDS:
            continue
        name = versioned(n)
        clash = counts[name] > 1
        names[uid] = f"{n.package_name}.{name}" if clash and n.package_name != root_pkg else name
    for uid, s in m.sources.items():
        names[uid] = f"source:{s.source_name}.{s.name}"
    for uid, e in m.exposures.items():
        names[uid] = f"exposure:{e.name}"
    for attr, (_, prefix) in SEMANTIC.items():
        for uid, x in (getattr(m, attr, None) or {}).items():
            names[uid] = f"{prefix}:{x.name}"
    for uid, u in (getattr(m, "unit_tests", None) or {}).items():
        # unique per model (dbt's rule); a unit test of a versioned model runs per version
        suffix = f".v{u.version}" if getattr(u, "version", None) is not None else ""
        names[uid] = f"unit_test:{u.model}{suffix}.{u.name}"
    return names


def versioned(n: Any) -> str:
    """``dim_customers.v2`` for version 2 of a versioned model, else the name."""
    version = getattr(n, "version", None)
    return f"{n.name}.v{version}" if version is not None else n.name


def version_meta(n: Any) -> dict[str, object]:
    """A versioned model's version facts, for selectors (``version:latest``) and the ls."""
    version = getattr(n, "version", None)
    if version is None:
        return {}
    latest = getattr(n, "latest_version", None)
    return {
        "model_name": n.name,
        "version": str(version),
        "latest_version": str(latest) if latest is not None else None,
    }


#: the model MetricFlow takes for its calendar when none is configured (its legacy default)
LEGACY_TIME_SPINE = "metricflow_time_spine"


def time_spine_meta(n: Any) -> dict[str, object]:
    """A semantic layer's calendar (a model with ``time_spine:``, or MetricFlow's legacy
    ``metricflow_time_spine``): a row per day into the future, never judged as data.

    >>> class M: name, time_spine = "all_days", {"standard_granularity_column": "date_day"}
    >>> time_spine_meta(M())
    {'time_spine': True}
    """
    if getattr(n, "time_spine", None) is not None or n.name == LEGACY_TIME_SPINE:
        return {"time_spine": True}
    return {}


def extra_nodes(m: Any, names: dict[str, str], rel_of: dict[str, Any], p: str) -> list[Node]:
    """Unit tests (built with their model, as ``dbt build`` does) and the semantic layer
    (semantic models, metrics, saved queries: listed with their edges, never built)."""
    out: list[Node] = []
    for uid, u in (getattr(m, "unit_tests", None) or {}).items():
        deps = [d for d in (u.depends_on.nodes or []) if d in names]
        out.append(
            Node(
                id=f"{p}:{names[uid]}",
                project=p,
                name=names[uid],
                kind="test",
                tool="dbt",
                depends_on=[f"{p}:{names[d]}" for d in deps],
                language="none",
                path=u.original_file_path,
                description=u.description or None,
                meta={"unique_id": uid, "package": u.package_name, "test_type": "unit"},
            )
        )
    for attr, (kind, _) in SEMANTIC.items():
        for uid, x in (getattr(m, attr, None) or {}).items():
            deps = [d for d in (x.depends_on.nodes or []) if d in names]
            meta: dict[str, object] = {"unique_id": uid, "package": x.package_name}
            if getattr(x, "label", None):
                meta["label"] = x.label
            if kind == "metric":
                meta["type"] = str(getattr(x.type, "value", x.type))
            out.append(
                Node(
                    id=f"{p}:{names[uid]}",
                    project=p,
                    name=names[uid],
                    kind=kind,  # type: ignore[arg-type]
                    tool="dbt",
                    depends_on=[f"{p}:{names[d]}" for d in deps],
                    reads=[rel_of[d] for d in deps if rel_of.get(d) is not None],
                    tags=list(getattr(x, "tags", None) or []),
                    language="none",
                    path=x.original_file_path,
                    description=getattr(x, "description", None) or None,
                    meta=meta,
                )
            )
    return out


def reads_files(relation_name: str, dialect: str) -> bool:
    """True when a relation_name is a table function or a file path, not a relation.

    dbt-duckdb renders a source with ``meta.external_location`` as, e.g.,
    ``read_csv_auto('data/refunds.csv')`` or ``'s3://bucket/x.parquet'``.

    >>> reads_files("read_csv_auto('data/refunds.csv')", "duckdb"), reads_files("'x.parquet'", "duckdb")
    (True, True)
    >>> reads_files('"jaffle"."raw"."orders"', "duckdb")
    False
    """
    import sqlglot
    from sqlglot import exp

    from splice.graph.relations import is_plain_name

    text = relation_name.strip()
    if text.startswith("'"):
        return True
    if is_plain_name(text, dialect):  # "db"."schema"."table": no parser needed
        return False
    try:
        table = sqlglot.parse_one(f"SELECT * FROM {text}", dialect=dialect).find(exp.Table)
    except sqlglot.errors.ParseError:
        return False  # parse_relation reports it
    return table is None or not isinstance(table.this, exp.Identifier)


def key_meta(n: Any, names: dict[str, str], p: str) -> dict[str, object]:
    """What a node says about row keys: a model's ``unique_key`` config; a generic test's name,
    the node it tests and its columns (``unique``, ``dbt_utils.unique_combination_of_columns``),
    as ``test_name`` / ``test_of`` / ``test_columns`` (splice review compares rows by them)."""
    out: dict[str, object] = {}
    uk = getattr(n.config, "unique_key", None)
    if uk:
        out["unique_key"] = [uk] if isinstance(uk, str) else [str(u) for u in uk]
    tm = getattr(n, "test_metadata", None)
    if tm is not None:
        kwargs = dict(getattr(tm, "kwargs", None) or {})
        cols = kwargs.get("combination_of_columns") or kwargs.get("column_name")
        attached = getattr(n, "attached_node", None)
        out["test_name"] = str(tm.name)
        if attached in names:
            out["test_of"] = f"{p}:{names[attached]}"
        if cols:
            out["test_columns"] = [cols] if isinstance(cols, str) else [str(c) for c in cols]
    return out


def column_descriptions(n: Any) -> dict[str, dict[str, str]]:
    """``{"column_descriptions": {column: text}}`` of the columns dbt's YAML describes."""
    described = {c.name: c.description for c in (n.columns or {}).values() if c.description}
    return {"column_descriptions": described} if described else {}


def seed_columns(n: Any) -> dict[str, str]:
    """A seed's columns: the CSV header, typed by ``+column_types`` (or its YAML) where declared."""
    import csv

    typed = {
        str(k).lower(): str(v) for k, v in (getattr(n.config, "column_types", None) or {}).items()
    }
    typed.update({c.name.lower(): c.data_type for c in n.columns.values() if c.data_type})
    header: list[str] = []
    try:
        with open(Path(n.root_path) / n.original_file_path, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, csv.Error, UnicodeDecodeError):
        pass
    names = [h.strip() for h in header if h.strip()] or [c.name for c in n.columns.values()]
    return {c: typed.get(c.lower(), "") for c in names}


def selector_for(node: Any) -> str:
    """A dbt selector for ``node``: its fqn (unique ids are not selectable; fqn-based
    selection is exact for models)."""
    return ".".join(node.fqn) if getattr(node, "fqn", None) else node.name


def owner_of(n: Any) -> str | None:
    """The ``owner`` a node's config or meta names, if any."""
    meta = getattr(n.config, "meta", None) or getattr(n, "meta", None) or {}
    owner = meta.get("owner") if isinstance(meta, dict) else None
    return str(owner) if owner else None
