"""A BI tool's last read (:mod:`splice.bi.snapshot`) as nodes of the joined graph.

Per ``[[bi]]`` entry ``NAME``: a ``dashboard`` node per dashboard (``NAME:dashboard:SLUG``)
depending on a ``chart`` node per chart (``NAME:chart:SLUG``). A chart reads what its dataset
reads: a physical dataset its table; a virtual one every table of its SQL, parsed by sqlglot in
the dialect of the dataset's database. Each chart carries a query (:func:`chart_query`) that
selects the columns and metrics it shows from its dataset, so column lineage runs through it
like through a model: ``splice lineage ... --downstream`` reaches the charts.

>>> q = chart_query({"kind": "physical", "schema": "finance", "name": "fct_gmv_qtd",
...                  "columns": {}, "metrics": {}},
...                 {"x_axis": "booking_date", "metrics": [{"expressionType": "SIMPLE",
...                  "column": {"column_name": "gmv_usd"}, "aggregate": "SUM", "label": "GMV"}]},
...                 "duckdb")
>>> q.sql("duckdb")
'SELECT booking_date AS booking_date, SUM(gmv_usd) AS GMV FROM finance.fct_gmv_qtd GROUP BY booking_date'
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from splice.graph.model import Node, Relation
from splice.graph.relations import relation_from_parts

#: Superset's database backends -> sqlglot dialects
BACKENDS = {"postgresql": "postgres", "duckdb": "duckdb", "databricks": "databricks",
            "hive": "spark", "sparksql": "spark", "spark": "spark", "snowflake": "snowflake",
            "bigquery": "bigquery", "redshift": "redshift", "trino": "trino", "mysql": "mysql",
            "sqlite": "sqlite", "clickhouse": "clickhouse"}  # fmt: skip


def slug(text: str) -> str:
    """``"GMV by day (USD)"`` -> ``"gmv_by_day_usd"``.

    >>> slug("GMV by day (USD)")
    'gmv_by_day_usd'
    """
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "unnamed"


def dialect_of(dataset: dict[str, Any], default: str) -> str:
    return BACKENDS.get(str(dataset.get("backend") or "").lower(), default)


def _column(name: str, dataset: dict[str, Any], dialect: str) -> exp.Expr:
    """A dataset column: its calculated expression when it has one, else the column."""
    expr = (dataset.get("columns") or {}).get(name)
    if expr:
        return sqlglot.parse_one(str(expr), read=dialect)
    return exp.column(name)


def _metric(m: Any, dataset: dict[str, Any], dialect: str) -> tuple[str, exp.Expr] | None:
    """(label, expression) of a chart metric: ad hoc SIMPLE or SQL, or a saved metric's name."""
    if isinstance(m, str):
        saved = (dataset.get("metrics") or {}).get(m)
        return (m, sqlglot.parse_one(str(saved), read=dialect)) if saved else None
    if not isinstance(m, dict):
        return None
    label = str(m.get("label") or m.get("metric_name") or "metric")
    if m.get("expressionType") == "SQL" and m.get("sqlExpression"):
        return label, sqlglot.parse_one(str(m["sqlExpression"]), read=dialect)
    col = (m.get("column") or {}).get("column_name")
    agg = str(m.get("aggregate") or "").upper()
    if not col:
        return None
    inner = _column(str(col), dataset, dialect)
    funcs = {"SUM": exp.Sum, "AVG": exp.Avg, "MIN": exp.Min, "MAX": exp.Max, "COUNT": exp.Count}
    if agg == "COUNT_DISTINCT":
        return label, exp.Count(this=exp.Distinct(expressions=[inner]))
    return label, funcs[agg](this=inner) if agg in funcs else inner


def _source(dataset: dict[str, Any], dialect: str) -> exp.Expr:
    if dataset.get("kind") == "virtual" and dataset.get("sql"):
        inner = sqlglot.parse_one(str(dataset["sql"]), read=dialect)
        return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(
            slug(str(dataset.get("name") or "dataset")))))  # fmt: skip
    return exp.table_(str(dataset.get("name")), db=dataset.get("schema") or None,
                      catalog=dataset.get("catalog") or None)  # fmt: skip


def chart_query(dataset: dict[str, Any], form: dict[str, Any], dialect: str) -> exp.Select:
    """What a chart selects from its dataset: its dimensions (x axis, group by, columns) and
    its metrics, grouped by the dimensions when it has metrics."""
    dims: list[str] = []
    for key in ("x_axis", "granularity_sqla", "x", "entity", "series"):
        v = form.get(key)
        if isinstance(v, str) and v not in dims:
            dims.append(v)
    for key in ("groupby", "columns", "all_columns"):
        for v in form.get(key) or []:
            if isinstance(v, str) and v not in dims:
                dims.append(v)
    metrics: list[tuple[str, exp.Expr]] = []
    for key in ("metrics", "percent_metrics"):
        for m in form.get(key) or []:
            got = _metric(m, dataset, dialect)
            if got is not None and got[0] not in {x[0] for x in metrics}:
                metrics.append(got)
    for key in ("metric", "secondary_metric", "timeseries_limit_metric", "size", "y"):
        got = _metric(form.get(key), dataset, dialect) if form.get(key) else None
        if got is not None and got[0] not in {x[0] for x in metrics}:
            metrics.append(got)
    selects = [exp.alias_(_column(d, dataset, dialect), d, quoted=None) for d in dims]
    selects += [exp.alias_(e, label, quoted=None) for label, e in metrics]
    if not selects:
        selects = [exp.Star()]
    q = exp.select(*selects).from_(_source(dataset, dialect))
    if metrics and dims:
        q = q.group_by(*[_column(d, dataset, dialect) for d in dims])
    return q


def dataset_reads(dataset: dict[str, Any], dialect: str, default_catalog: str | None,
                  workspace_dialect: str) -> list[Relation]:  # fmt: skip
    """The relations a dataset reads (its table, or every table of its SQL but its CTEs)."""
    if dataset.get("kind") == "virtual" and dataset.get("sql"):
        tree = sqlglot.parse_one(str(dataset["sql"]), read=dialect)
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        out = []
        for t in tree.find_all(exp.Table):
            if not t.name or (not t.db and t.name.lower() in ctes):
                continue
            rel = relation_from_parts(t.catalog or default_catalog, t.db or None, t.name,
                                      dialect=workspace_dialect)  # fmt: skip
            if rel not in out:
                out.append(rel)
        return out
    if not dataset.get("name"):
        return []
    return [relation_from_parts(dataset.get("catalog") or default_catalog,
                                dataset.get("schema") or None, str(dataset["name"]),
                                dialect=workspace_dialect)]  # fmt: skip


def bi_nodes(name: str, tool: str, read: dict[str, Any], *, dialect: str,
             default_catalog: str | None, owner: str | None) -> list[Node]:  # fmt: skip
    """The nodes of one BI tool's last read (see the module doc)."""
    datasets = {int(d["id"]): d for d in read.get("datasets") or []}
    nodes: list[Node] = []
    chart_ids: dict[int, str] = {}
    taken: set[str] = set()

    def unique(kind: str, text: str, pk: int) -> str:
        base = f"{kind}:{slug(text)}"
        nid = base if base not in taken else f"{base}_{pk}"
        taken.add(nid)
        return nid

    for c in read.get("charts") or []:
        ds = datasets.get(int(c["dataset"])) if c.get("dataset") is not None else None
        local = unique("chart", str(c["name"]), int(c["id"]))
        chart_ids[int(c["id"])] = f"{name}:{local}"
        sql = None
        reads: list[Relation] = []
        meta: dict[str, object] = {"label": c["name"], "url": c.get("url"), "bi_id": c["id"],
                                   "viz_type": c.get("viz_type"), "bi": name}  # fmt: skip
        d = dialect
        if ds is not None:
            d = dialect_of(ds, dialect)
            reads = dataset_reads(ds, d, default_catalog, dialect)
            meta["dataset"] = {"id": ds["id"], "name": ds.get("name"), "kind": ds.get("kind"),
                               "database": ds.get("database")}  # fmt: skip
            try:
                sql = chart_query(ds, c.get("form_data") or {}, d).sql(dialect=d)
            except (sqlglot.errors.SqlglotError, KeyError) as e:
                meta["opaque_reason"] = f"its query could not be read ({e})"
        nodes.append(Node(
            id=f"{name}:{local}", project=name, name=local, kind="chart", tool=tool,
            reads=reads, sql=sql, dialect=d, language="sql" if sql else "none", owner=owner,
            description=c["name"], meta=meta,
        ))  # fmt: skip
    for dash in read.get("dashboards") or []:
        local = unique("dashboard", str(dash.get("slug") or dash["title"]), int(dash["id"]))
        deps = [chart_ids[i] for i in dash.get("charts") or [] if i in chart_ids]
        nodes.append(Node(
            id=f"{name}:{local}", project=name, name=local, kind="dashboard", tool=tool,
            depends_on=deps, language="none", owner=owner, description=dash["title"],
            meta={"label": dash["title"], "url": dash.get("url"), "bi_id": dash["id"], "bi": name},
        ))  # fmt: skip
    return nodes


def workspace_bi_nodes(root: Any, entries: list[Any], *, dialect: str,
                       default_catalog: str | None) -> list[Node]:  # fmt: skip
    """The nodes of every ``[[bi]]`` entry, from its read (refreshed as
    :func:`splice.bi.snapshot.refresh` says; an entry never read yet has none)."""
    from splice.bi.snapshot import refresh

    out: list[Node] = []
    for cfg in entries:
        read = refresh(root, cfg)
        if read is not None:
            out += bi_nodes(cfg.name, cfg.type, read, dialect=dialect,
                            default_catalog=default_catalog, owner=cfg.owner)  # fmt: skip
    return out
