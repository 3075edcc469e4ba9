"""Which output columns of a model a code change touches, from the SQL before and after.

Each output column gets a *shape*: a hash of the expression that defines it and, through every
CTE and derived table, of the expressions it is computed from, plus the query around each of
them that decides which rows there are (FROM, JOIN, WHERE, GROUP BY, HAVING, QUALIFY,
DISTINCT, LIMIT).  A column whose shape differs between the base and the head changed; a
column only in the head was added, one only in the base removed.  Renaming a CTE or
re-indenting the SQL changes no shape: the shapes hash SQL that sqlglot qualified and
regenerated, with every CTE and derived table named by what it computes, not by its alias.

>>> base = "SELECT a, b * 2 AS b2 FROM raw.t"
>>> head = "SELECT a, b * 3 AS b2, c FROM raw.t"
>>> schema = {"warehouse": {"raw": {"t": {"a": "", "b": "", "c": ""}}}}
>>> d = compare(base, head, dialect="duckdb", schema=schema, default_catalog="warehouse")
>>> (d.changed, d.added, d.removed, d.rows)
(['b2'], ['c'], [], False)
>>> d = compare(base, "SELECT a, b * 2 AS b2 FROM raw.t WHERE a > 0", dialect="duckdb",
...             schema=schema, default_catalog="warehouse")
>>> (d.changed, d.rows)
(['a', 'b2'], True)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema

from splice.lineage.engine import query_of
from splice.lineage.schema import for_sqlglot, norm_ident, normalise_schema

#: The clauses of a SELECT that decide which rows it returns (not what each column holds).
ROW_CLAUSES = ("joins", "where", "group", "having", "qualify", "distinct", "limit", "offset")


@dataclass
class Shapes:
    """Per output column, its shape hash; ``rows`` hashes what decides the rows; ``opaque`` says
    why the SQL could not be shaped (then no column can be compared)."""

    columns: dict[str, str] = field(default_factory=dict)
    rows: str = ""
    opaque: str | None = None


@dataclass
class ColumnDiff:
    """What a change did to a model's output columns."""

    changed: list[str] = field(default_factory=list)  # in both, computed differently
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rows: bool = False  # which rows the query returns may differ (every column is then changed)
    opaque: str | None = None  # could not compare: every column counts as changed

    @property
    def any(self) -> bool:
        return bool(self.changed or self.added or self.removed or self.rows or self.opaque)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "changed": self.changed,
            "added": self.added,
            "removed": self.removed,
            "rows_may_differ": self.rows,
        }
        if self.opaque:
            out["not_compared"] = self.opaque
        return out


def _h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


class _Shaper:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, str], str] = {}
        self.scope_memo: dict[int, str] = {}

    def source_name(self, scope: Scope, alias: str) -> str:
        """What a FROM/JOIN alias stands for: a table's name, or the rows shape of a CTE."""
        src = scope.sources.get(alias)
        if isinstance(src, Scope):
            return "q:" + self.rows(src)
        if isinstance(src, exp.Table):
            return "t:" + ".".join(p for p in (src.catalog, src.db, src.name) if p)
        return "?:" + alias

    def refs(self, scope: Scope, e: exp.Expr) -> list[str]:
        """The shapes of the columns ``e`` reads, each named by what it reads from."""
        out = []
        for c in e.find_all(exp.Column):
            if c.find_ancestor(exp.Select) is not scope.expression:
                continue  # a column of a nested subquery: part of that subquery's text
            src = scope.sources.get(c.table)
            if isinstance(src, Scope):
                out.append(self.column(src, c.name))
            else:
                out.append(self.source_name(scope, c.table) + "." + c.name)
        return sorted(out)

    def text(self, e: exp.Expr) -> str:
        """``e``'s SQL with column qualifiers dropped (aliases are names, not meaning)."""
        e = e.copy()
        for c in e.find_all(exp.Column):
            c.set("table", None)
        return e.sql(dialect="duckdb", comments=False)

    def rows(self, scope: Scope) -> str:
        key = id(scope)
        if key in self.scope_memo:
            return self.scope_memo[key]
        self.scope_memo[key] = "cycle"
        q = scope.expression
        if scope.union_scopes:
            parts = [type(q).__name__, str(q.args.get("distinct"))]
            parts += [self.rows(s) for s in scope.union_scopes]
        elif isinstance(q, exp.Select):
            # what is read, by what it is (a table's name, a CTE's shape), never by its alias
            parts = sorted(self.source_name(scope, a) for a in scope.selected_sources)
            for clause in ROW_CLAUSES:
                v = q.args.get(clause)
                if not v:
                    continue
                for item in v if isinstance(v, list) else [v]:
                    if isinstance(item, exp.Join):  # its source is among the sources above
                        on = item.args.get("on")
                        using = item.args.get("using") or []
                        parts.append(f"join:{item.side}:{item.kind}")
                        parts += [self.text(u) for u in using]
                        if on is not None:
                            parts += [self.text(on), *self.refs(scope, on)]
                        continue
                    parts.append(clause + ":" + self.text(item))
                    parts += self.refs(scope, item)
        else:
            parts = [q.sql(dialect="duckdb")]
        self.scope_memo[key] = _h(*parts)
        return self.scope_memo[key]

    def column(self, scope: Scope, name: str) -> str:
        key = (id(scope), name)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = "cycle"
        q = scope.expression
        if scope.union_scopes:
            shape = _h("union", *(self.column(s, name) for s in scope.union_scopes))
        elif isinstance(q, exp.Select):
            proj = next((p for p in q.selects if p.alias_or_name == name), None)
            if proj is None:
                shape = _h("missing", name)
            else:
                inner = proj.this if isinstance(proj, exp.Alias) else proj
                shape = _h(self.text(inner), *self.refs(scope, inner), self.rows(scope))
        else:
            shape = _h(q.sql(dialect="duckdb"))
        self.memo[key] = shape
        return shape


def shapes(
    sql: str | None,
    *,
    dialect: str,
    schema: dict[str, Any] | None = None,
    default_catalog: str | None = None,
    default_schema: str | None = None,
) -> Shapes:
    """The shapes of every output column of ``sql`` (never raises: opaque says why not)."""
    if not sql or not sql.strip():
        return Shapes(opaque="no SQL (a Python model, or one the tool did not render)")
    try:
        query, _ = query_of(sqlglot.parse(sql, read=dialect))
        if query is None:
            return Shapes(opaque="not a query")
        nschema = normalise_schema(schema or {}, dialect, default_catalog=default_catalog)
        qualified = qualify(
            query,
            dialect=dialect,
            schema=MappingSchema(for_sqlglot(nschema), dialect=dialect, normalize=False),
            catalog=norm_ident(default_catalog, dialect) if default_catalog else None,
            db=norm_ident(default_schema, dialect) if default_schema else None,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
        root = build_scope(qualified)
        if root is None:
            return Shapes(opaque="not a query sqlglot can walk")
        if not isinstance(qualified, exp.Query):
            return Shapes(opaque="not a query")
        if any(isinstance(s, exp.Star) for s in qualified.selects):
            return Shapes(opaque="SELECT * over columns that are not known")
        shaper = _Shaper()
        names = [s.alias_or_name for s in qualified.selects]
        return Shapes({n: shaper.column(root, n) for n in names}, shaper.rows(root))
    except RecursionError:
        return Shapes(opaque="the query is nested too deeply to compare")
    except Exception as e:  # noqa: BLE001 - a query sqlglot cannot shape is reported, not raised
        return Shapes(
            opaque=f"could not compare: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        )


def diff(base: Shapes, head: Shapes) -> ColumnDiff:
    """What changed from ``base`` to ``head`` (either opaque: every head column counts)."""
    if base.opaque or head.opaque:
        return ColumnDiff(
            changed=sorted(set(head.columns) & set(base.columns)) or sorted(head.columns),
            opaque=head.opaque or base.opaque,
        )
    rows = base.rows != head.rows
    both = [c for c in head.columns if c in base.columns]
    return ColumnDiff(
        changed=[c for c in both if rows or base.columns[c] != head.columns[c]],
        added=[c for c in head.columns if c not in base.columns],
        removed=[c for c in base.columns if c not in head.columns],
        rows=rows,
    )


def compare(base_sql: str | None, head_sql: str | None, **kwargs: Any) -> ColumnDiff:
    """:func:`diff` of the :func:`shapes` of two versions of one query."""
    return diff(shapes(base_sql, **kwargs), shapes(head_sql, **kwargs))
