"""Column lineage of one query in one pass: parse and qualify once, then walk the scopes once.

For every output column the walk collects the upstream ``(relation, column, kind)`` refs:

- ``direct``: the value flows into the column, possibly transformed (``amount * rate`` is direct
  from both), with OpenLineage subtype IDENTITY, TRANSFORMATION or AGGREGATION;
- ``indirect``: the column only affects it.  Per column: window PARTITION BY / ORDER BY (WINDOW),
  CASE / IF conditions (CONDITIONAL).  Per query (stored once, they apply to every output column):
  WHERE / HAVING / QUALIFY (FILTER), JOIN ON (JOIN), GROUP BY (GROUP_BY), ORDER BY (SORT), and
  the same edges of every CTE or derived table the query reads.

Nothing raises: what cannot be analysed is *opaque* with a reason a person can act on.

>>> ml = analyse_model(
...     "SELECT o.id, o.amount * r.rate AS amount_usd FROM raw.orders o "
...     "JOIN raw.rates r ON o.ccy = r.ccy WHERE o.status = 'paid'",
...     dialect="duckdb", default_catalog="warehouse",
...     schema={"warehouse": {"raw": {"orders": {"id": "", "amount": "", "ccy": "", "status": ""},
...                                   "rates": {"ccy": "", "rate": ""}}}})
>>> [r.text for r in ml.columns["amount_usd"].sources]
['warehouse.raw.orders.amount:direct', 'warehouse.raw.rates.rate:direct']
>>> sorted(r.text for r in ml.query_indirect)  # doctest: +NORMALIZE_WHITESPACE
['warehouse.raw.orders.ccy:indirect', 'warehouse.raw.orders.status:indirect',
 'warehouse.raw.rates.ccy:indirect']
>>> analyse_model("SELECT (1 FROM t", dialect="duckdb").opaque_reason
'could not parse: Expecting ). Line 1, Col: 14.'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from splice.graph.model import Relation
from splice.lineage.schema import for_sqlglot, iter_tables, norm_ident, normalise_schema
from splice.lineage.types import ColumnLineage, ColumnRef, ModelLineage

# (relation, column, kind) -> subtypes.  "MASKED" rides along as a pseudo-subtype.
Refs = dict[tuple[Relation, str, str], set[str]]
_MASKED = "MASKED"
_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}
_MASKING_FUNCS: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, n)
    for n in ("MD5", "MD5Digest", "SHA", "SHA2", "SHA1Digest", "SHA2Digest")
    if hasattr(exp, n)
)


@dataclass
class _Info:
    """What one scope produces: its output columns and its query-level indirect refs."""

    names: list[str] = field(default_factory=list)
    cols: dict[str, Refs] = field(default_factory=dict)
    opaque: dict[str, str] = field(default_factory=dict)
    qlevel: Refs = field(default_factory=dict)
    unknown_star: list[str] = field(default_factory=list)  # relations behind an unexpanded *
    fallback: Callable[[str], tuple[Refs, str | None]] | None = None

    def lookup(self, name: str) -> tuple[Refs, str | None]:
        if name in self.cols:
            return self.cols[name], self.opaque.get(name)
        if self.fallback is not None:
            return self.fallback(name)
        return {}, f"column {name} is not an output of the subquery it is read from"


def _merge(into: Refs, refs: Refs) -> None:
    for key, subs in refs.items():
        cur = into.get(key)
        if cur is None:
            into[key] = set(subs)
        else:
            cur.update(subs)


def _compose(into: Refs, refs: Refs, kind: str, sub: str, masked: bool) -> None:
    """Add ``refs`` (an upstream column's lineage) seen through a context of ``kind``/``sub``."""
    for (rel, col, rkind), subs in refs.items():
        if kind == "direct":
            if rkind == "direct":
                outer = _RANK.get(sub, 1)
                new = {s if s == _MASKED or _RANK.get(s, 0) >= outer else sub for s in subs} or {
                    sub
                }
            else:
                new = set(subs)
            key = (rel, col, rkind)
        else:
            new = {sub} | ({s for s in subs if s != "IDENTITY" and s not in _RANK})
            if rkind == "direct" and _MASKED in subs:
                new.add(_MASKED)
            key = (rel, col, "indirect")
        if masked:
            new.add(_MASKED)
        cur = into.get(key)
        if cur is None:
            into[key] = new
        else:
            cur.update(new)


class _Walker:
    """Walks the scope tree of one qualified query, memoising each scope's result."""

    def __init__(
        self,
        dialect: str,
        known: dict[tuple[str | None, str, str], set[str]],
        catalog_of: dict[tuple[str, str], str | None],
        default_catalog: str | None,
        default_schema: str | None,
    ) -> None:
        self.dialect = dialect
        self.known = known
        self.catalog_of = catalog_of
        self.default_catalog = default_catalog
        self.default_schema = default_schema
        self.infos: dict[int, _Info] = {}
        self.by_expr: dict[int, Scope] = {}
        self.reads: dict[Relation, None] = {}
        self.warnings: list[str] = []
        self._rel_cache: dict[int, Relation | None] = {}

    # -- relations ---------------------------------------------------------------------------
    def relation(self, table: exp.Table) -> Relation | None:
        """The normalised relation of a table node; None for table functions (a leaf)."""
        key = id(table)
        if key in self._rel_cache:
            return self._rel_cache[key]
        rel: Relation | None = None
        if not isinstance(table.this, exp.Func) and table.name and not _is_file(table):
            d = self.dialect
            name = norm_ident(table.name, d)
            db = norm_ident(table.db, d) if table.db else (self.default_schema or "main")
            cat = norm_ident(table.catalog, d) if table.catalog else None
            if cat is None:
                cat = self.catalog_of.get((db, name), self.default_catalog)
            rel = Relation(cat or None, db, name)
            self.reads[rel] = None
        elif _is_file(table):
            self.warnings.append(f"reads the file '{table.name}': its columns start here")
        else:
            self.warnings.append(
                f"reads the table function {table.this.sql(dialect=self.dialect)}: "
                "its columns start here"
            )
        self._rel_cache[key] = rel
        return rel

    def columns_of(self, rel: Relation) -> set[str] | None:
        return self.known.get((rel.catalog, rel.schema, rel.name))

    # -- scopes --------------------------------------------------------------------------------
    def info(self, scope: Scope) -> _Info:
        # A recursive CTE's self-reference is a scope sqlglot never traversed: use the traversed
        # scope of the same expression (the base case) instead.
        scope = self.by_expr.get(id(scope.expression), scope)
        key = id(scope)
        got = self.infos.get(key)
        if got is not None:
            return got
        self.infos[key] = _Info(fallback=lambda n: ({}, f"column {n} is read recursively"))
        expr = scope.expression
        if isinstance(expr, exp.SetOperation) and len(scope.union_scopes) == 2:
            info = self._union_info(scope)
        elif isinstance(expr, exp.Select):
            info = self._select_info(scope)
        else:
            info = self._udtf_info(scope)
        self.infos[key] = info
        return info

    def _udtf_info(self, scope: Scope) -> _Info:
        """UNNEST / LATERAL / VALUES: every column it yields comes from the columns inside it."""
        expr = scope.expression
        info = _Info()
        if isinstance(expr, exp.Values):
            info.fallback = lambda n: ({}, None)
            return info
        for sub in scope.subquery_scopes:  # LATERAL (SELECT ...)
            inner = self.info(sub)
            _merge(info.qlevel, inner.qlevel)
            info.fallback = inner.lookup
            return info
        refs: Refs = {}
        reasons: list[str] = []
        for arg in expr.args.values():
            for node in arg if isinstance(arg, list) else [arg]:
                if isinstance(node, exp.Expr) and not isinstance(node, exp.TableAlias):
                    self.collect(node, scope, "direct", "TRANSFORMATION", refs, reasons)
        reason = reasons[0] if reasons else None
        info.fallback = lambda n: (refs, reason)
        return info

    def _union_info(self, scope: Scope) -> _Info:
        left, right = (self.info(s) for s in scope.union_scopes)
        info = _Info()
        _merge(info.qlevel, left.qlevel)
        _merge(info.qlevel, right.qlevel)
        info.unknown_star = left.unknown_star + right.unknown_star
        if scope.expression.args.get("by_name"):
            pairs = [
                (n, n if n in left.cols else None, n if n in right.cols else None)
                for n in dict.fromkeys(left.names + right.names)
            ]
        else:
            if len(left.names) != len(right.names) and not info.unknown_star:
                self.warnings.append(
                    f"the sides of a {scope.expression.key.upper()} have "
                    f"{len(left.names)} and {len(right.names)} columns"
                )
            pairs = [
                (n, n, right.names[i] if i < len(right.names) else None)
                for i, n in enumerate(left.names)
            ]
        for name, lname, rname in pairs:
            refs: Refs = {}
            reason = None
            for side, sname in ((left, lname), (right, rname)):
                if sname is None:
                    continue
                r, why = side.lookup(sname)
                _merge(refs, r)
                reason = reason or why
            info.names.append(name)
            info.cols[name] = refs
            if reason:
                info.opaque[name] = reason
        if info.unknown_star:

            def fallback(n: str) -> tuple[Refs, str | None]:
                refs: Refs = {}
                reasons = []
                for side in (left, right):
                    r, why = side.lookup(n)
                    _merge(refs, r)
                    if why:
                        reasons.append(why)
                return refs, reasons[0] if reasons else None

            info.fallback = fallback
        order = scope.expression.args.get("order")
        if order is not None:
            aliases = {n: (info.cols[n], info.opaque.get(n)) for n in info.names}
            self.collect(order, scope, "indirect", "SORT", info.qlevel, [], aliases)
        return info

    def _select_info(self, scope: Scope) -> _Info:
        select = scope.expression
        info = _Info()
        star_sources: list[str] = []
        for _name, (_node, src) in scope.selected_sources.items():
            if isinstance(src, Scope):
                _merge(info.qlevel, self.info(src).qlevel)
            else:
                self.relation(src)
        for proj in select.expressions:
            if isinstance(proj, exp.Star) or (
                isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)
            ):
                table = proj.table if isinstance(proj, exp.Column) else ""
                names = [table] if table else list(scope.selected_sources)
                star_sources.extend(names)
                info.unknown_star.extend(self._star_unknowns(scope, names))
                continue
            name = proj.alias_or_name
            node = proj.this if isinstance(proj, exp.Alias) else proj
            refs: Refs = {}
            reasons: list[str] = []
            if _COLUMNS is not None and node.find(_COLUMNS):
                reasons.append(
                    "COLUMNS(...) picks columns by pattern, which lineage does not follow"
                )
            sub = "IDENTITY" if type(node) is exp.Column else "TRANSFORMATION"
            self.collect(node, scope, "direct", sub, refs, reasons)
            if name in info.cols:
                _merge(info.cols[name], refs)
            else:
                info.names.append(name)
                info.cols[name] = refs
            if reasons and name not in info.opaque:
                info.opaque[name] = reasons[0]
        if star_sources:
            info.fallback = lambda n: self._resolve_among(scope, star_sources, n)
        aliases = {n: (info.cols[n], info.opaque.get(n)) for n in info.names}
        reasons = []
        q = info.qlevel
        for key in ("where", "prewhere", "having", "qualify", "connect"):
            clause = select.args.get(key)
            if clause is not None:
                self.collect(clause, scope, "indirect", "FILTER", q, reasons, aliases)
        for join in select.args.get("joins") or ():
            for key in ("on", "match_condition"):
                cond = join.args.get(key)
                if cond is not None:
                    self.collect(cond, scope, "indirect", "JOIN", q, reasons, aliases)
        group = select.args.get("group")
        if group is not None:
            self.collect(group, scope, "indirect", "GROUP_BY", q, reasons, aliases)
            if group.args.get("all"):
                for proj in select.expressions:
                    if not proj.find(exp.AggFunc) and proj.alias_or_name in aliases:
                        _compose(q, aliases[proj.alias_or_name][0], "indirect", "GROUP_BY", False)
        distinct = select.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            self.collect(distinct.args["on"], scope, "indirect", "GROUP_BY", q, reasons, aliases)
        order = select.args.get("order")
        if order is not None:
            self.collect(order, scope, "indirect", "SORT", q, reasons, aliases)
        for r in dict.fromkeys(reasons):
            self.warnings.append(f"a filter, join or grouping could not be resolved: {r}")
        return info

    def _star_unknowns(self, scope: Scope, names: list[str]) -> list[str]:
        """The relations whose unknown columns keep a ``*`` over ``names`` from expanding."""
        out: list[str] = []
        for n in names:
            src = scope.sources.get(n)
            if isinstance(src, exp.Table):
                rel = self.relation(src)
                if rel is None and _is_file(src):
                    out.append(f"the file '{src.name}'")
                elif rel is None:
                    out.append(f"the table function {src.this.sql(dialect=self.dialect)}")
                elif self.columns_of(rel) is None:
                    out.append(rel.key)
            elif isinstance(src, Scope):
                out.extend(self.info(src).unknown_star)
        return out

    # -- columns -------------------------------------------------------------------------------
    def resolve(self, scope: Scope, table: str, column: str) -> tuple[Refs, str | None]:
        s: Scope | None = scope
        src = None
        while s is not None:
            src = s.sources.get(table)
            if src is not None:
                break
            s = s.parent
        if src is None:
            pivot = self._pivot(scope, table)
            if pivot is not None:
                return self._resolve_pivot(scope, pivot, column)
            return {}, f"{table}.{column} refers to no table of the query"
        if isinstance(src, exp.Table):
            pivots = src.args.get("pivots")
            if pivots and pivots[0].args.get("unpivot"):
                return self._resolve_pivot(scope, (src, pivots[0]), column)
            rel = self.relation(src)
            if rel is None:
                return {}, None  # a table function or a file: the column starts here
            return {(rel, column, "direct"): {"IDENTITY"}}, None
        return self.info(src).lookup(column)

    def _pivot(self, scope: Scope, alias: str) -> tuple[exp.Table, exp.Pivot] | None:
        for src in scope.sources.values():
            if isinstance(src, exp.Table):
                for pivot in src.args.get("pivots") or ():
                    if pivot.alias == alias:
                        return src, pivot
        return None

    def _resolve_pivot(
        self, scope: Scope, found: tuple[exp.Table, exp.Pivot], column: str
    ) -> tuple[Refs, str | None]:
        """A column of ``t PIVOT (agg(x) FOR k IN (...))``: a pivoted column is the aggregate of
        ``x`` filtered by ``k``; any other column passes through from ``t``."""
        table, pivot = found
        if pivot.args.get("unpivot"):
            rel = self.relation(table)
            known = self.columns_of(rel) if rel is not None else None
            if rel is not None and known is not None and column in known:
                return {(rel, column, "direct"): {"IDENTITY"}}, None
            return {}, f"column {column} comes out of an UNPIVOT, which lineage does not follow"
        pivoted = {c.name for c in pivot.args.get("columns") or ()}
        if column not in pivoted:
            return self.resolve(scope, table.alias_or_name, column)
        refs: Refs = {}
        reasons: list[str] = []
        for agg in pivot.expressions:
            self.collect(agg, scope, "direct", "TRANSFORMATION", refs, reasons)
        for fld in pivot.args.get("fields") or ():
            key = fld.this if isinstance(fld, exp.In) else fld
            self.collect(key, scope, "indirect", "FILTER", refs, reasons)
        return refs, reasons[0] if reasons else None

    def _resolve_among(
        self, scope: Scope, names: list[str], column: str
    ) -> tuple[Refs, str | None]:
        """An unqualified column (or one passed through a ``*``) among several sources."""
        if len(names) == 1:
            return self.resolve(scope, names[0], column)
        definite: list[str] = []
        maybe: list[str] = []
        for n in names:
            src = scope.sources.get(n)
            if isinstance(src, exp.Table):
                rel = self.relation(src)
                cols = self.columns_of(rel) if rel is not None else None
                if cols is None:
                    maybe.append(n)
                elif column in cols:
                    definite.append(n)
            elif isinstance(src, Scope):
                inner = self.info(src)
                if column in inner.cols:
                    definite.append(n)
                elif inner.fallback is not None:
                    maybe.append(n)
        if len(definite) == 1:
            return self.resolve(scope, definite[0], column)
        if not definite and len(maybe) == 1:
            return self.resolve(scope, maybe[0], column)
        candidates = [self._describe(scope, n) for n in (definite or maybe)]
        if candidates:
            return {}, (
                f"column {column} is ambiguous: it could come from {', '.join(candidates)}"
                " (qualify it, or add column types for the tables it reads)"
            )
        return {}, f"column {column} is in none of the tables read ({', '.join(names)})"

    def _describe(self, scope: Scope, name: str) -> str:
        src = scope.sources.get(name)
        rel = self.relation(src) if isinstance(src, exp.Table) else None
        return (
            f"{name} ({rel.key})"
            if rel is not None and rel.name != name
            else (rel.key if rel is not None else name)
        )

    def collect(
        self,
        root: exp.Expr,
        scope: Scope,
        kind: str,
        sub: str,
        out: Refs,
        reasons: list[str],
        aliases: dict[str, tuple[Refs, str | None]] | None = None,
    ) -> None:
        """Add the refs of every column under ``root`` (in ``scope``) to ``out``."""
        subqueries: dict[int, Scope] | None = None
        stack: list[tuple[exp.Expr, str, str, bool]] = [(root, kind, sub, False)]
        while stack:
            node, k, s, m = stack.pop()
            t = type(node)
            if t is exp.Column:
                assert isinstance(node, exp.Column)
                if isinstance(node.this, exp.Star):
                    continue
                table = node.table
                if table:
                    refs, why = self.resolve(scope, table, node.name)
                elif aliases and node.name in aliases:
                    refs, why = aliases[node.name]
                else:
                    refs, why = self._resolve_among(scope, list(scope.selected_sources), node.name)
                if why:
                    reasons.append(why)
                _compose(out, refs, k, s, m)
                continue
            if isinstance(node, (exp.Select, exp.SetOperation)):
                if subqueries is None:
                    subqueries = {id(c.expression): c for c in scope.subquery_scopes}
                child = subqueries.get(id(node))
                if child is None:
                    continue
                inner = self.info(child)
                vsub = s if k == "indirect" else ("TRANSFORMATION" if s == "IDENTITY" else s)
                for n in inner.names:
                    refs, why = inner.lookup(n)
                    if why:
                        reasons.append(why)
                    _compose(out, refs, k, vsub, m)
                _compose(out, inner.qlevel, "indirect", s if k == "indirect" else "FILTER", m)
                continue
            if k == "direct" and s == "IDENTITY":
                s = "TRANSFORMATION"
            if t is exp.Window:
                stack.append((node.this, k, s, m))
                for p in node.args.get("partition_by") or ():
                    stack.append((p, "indirect", "WINDOW" if k == "direct" else s, m))
                order = node.args.get("order")
                if order is not None:
                    stack.append((order, "indirect", "WINDOW" if k == "direct" else s, m))
                continue
            cond = "CONDITIONAL" if k == "direct" else s
            if t is exp.Case:
                if node.this is not None:
                    stack.append((node.this, "indirect", cond, m))
                for branch in node.args.get("ifs") or ():
                    stack.append((branch.this, "indirect", cond, m))
                    if branch.args.get("true") is not None:
                        stack.append((branch.args["true"], k, s, m))
                if node.args.get("default") is not None:
                    stack.append((node.args["default"], k, s, m))
                continue
            if t is exp.If:
                stack.append((node.this, "indirect", cond, m))
                for key in ("true", "false"):
                    if node.args.get(key) is not None:
                        stack.append((node.args[key], k, s, m))
                continue
            if t is exp.Filter:  # agg(...) FILTER (WHERE ...)
                stack.append((node.this, k, s, m))
                stack.append((node.expression, "indirect", "FILTER" if k == "direct" else s, m))
                continue
            if k == "direct" and isinstance(node, exp.AggFunc):
                s = "AGGREGATION"
            if _MASKING_FUNCS and isinstance(node, _MASKING_FUNCS):
                m = True
            for v in node.args.values():
                if isinstance(v, exp.Expr):
                    stack.append((v, k, s, m))
                elif isinstance(v, list):
                    for item in v:
                        if isinstance(item, exp.Expr):
                            stack.append((item, k, s, m))


_COLUMNS: type[exp.Expr] | None = getattr(exp, "Columns", None)


def _is_file(table: exp.Table) -> bool:
    """DuckDB's ``FROM 'data/*.parquet'``: a quoted one-part name that looks like a path."""
    ident = table.this
    return (
        isinstance(ident, exp.Identifier)
        and bool(ident.args.get("quoted"))
        and not table.db
        and any(ch in ident.name for ch in "/.*:")
    )


def _to_refs(refs: Refs) -> list[ColumnRef]:
    out = []
    for (rel, col, kind), subs in refs.items():
        masked = _MASKED in subs
        out.append(
            ColumnRef(rel, col, kind, tuple(sorted(x for x in subs if x != _MASKED)), masked)  # type: ignore[arg-type]
        )
    out.sort(key=lambda r: (r.relation.key, r.column, r.kind))
    return out


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]


def _query_of(parsed: list[exp.Expr | None]) -> tuple[exp.Expr | None, list[str], Relation | None]:
    """The query of the statements (the last SELECT; CREATE ... AS / INSERT ... SELECT unwrap)."""
    warnings: list[str] = []
    stmts = [s for s in parsed if s is not None]
    found: list[tuple[exp.Expr, exp.Table | None]] = []
    for stmt in stmts:
        if isinstance(stmt, exp.Query):
            found.append((stmt, None))
        elif isinstance(stmt, (exp.Create, exp.Insert)) and isinstance(stmt.expression, exp.Query):
            target = stmt.this
            if isinstance(target, exp.Schema):
                target = target.this
            found.append((stmt.expression, target if isinstance(target, exp.Table) else None))
    if not found:
        return None, warnings, None
    if len(stmts) > 1:
        warnings.append(f"{len(stmts)} statements: the lineage is that of the last query")
    query, _target = found[-1]
    return query, warnings, None


def analyse_model(
    sql: str | exp.Expr | None,
    *,
    dialect: str = "duckdb",
    schema: Any = None,
    output: Relation | None = None,
    default_catalog: str | None = None,
    default_schema: str | None = None,
) -> ModelLineage:
    """Column lineage of every output column of one query.  Never raises.

    ``schema`` is ``{catalog: {schema: {table: {column: type}}}}`` for the tables the query reads
    (types may be empty strings).  Two-part names in the SQL get ``default_catalog`` (or the one
    catalog the schema holds for that table); one-part names get ``default_schema`` (``main``).

    >>> analyse_model(None, dialect="duckdb").opaque_reason
    'no SQL to analyse (a Python model, or a model the tool did not render)'
    >>> ml = analyse_model("SELECT * FROM raw.x", dialect="duckdb", default_catalog="warehouse")
    >>> ml.opaque_reason
    'SELECT * over warehouse.raw.x whose columns are unknown: add column types'
    """
    base: dict[str, Any] = {"output": output, "dialect": dialect}
    try:
        if sql is None or (isinstance(sql, str) and not sql.strip()):
            return ModelLineage.opaque(
                "no SQL to analyse (a Python model, or a model the tool did not render)", **base
            )
        if isinstance(sql, str):
            if "{{" in sql or "{%" in sql:
                return ModelLineage.opaque(
                    "the SQL still contains Jinja ({{ ... }} or {% ... %}): pass the compiled SQL",
                    **base,
                )
            try:
                parsed = sqlglot.parse(sql, read=dialect)
            except Exception as e:  # noqa: BLE001 - sqlglot raises several kinds
                return ModelLineage.opaque(f"could not parse: {_first_line(e)}", **base)
        else:
            parsed = [sql.copy()]
        query, warnings, _ = _query_of(parsed)
        if query is None:
            kinds = ", ".join(sorted({type(s).__name__.upper() for s in parsed if s})) or "nothing"
            return ModelLineage.opaque(f"not a query (the SQL is {kinds})", **base)
        return _analyse_query(
            query, dialect, schema, default_catalog, default_schema, warnings, base
        )
    except RecursionError:
        return ModelLineage.opaque("the query is nested too deeply to analyse", **base)
    except Exception as e:  # noqa: BLE001 - the contract is: never crash
        return ModelLineage.opaque(
            f"could not analyse: {type(e).__name__}: {_first_line(e)}", **base
        )


def _analyse_query(
    query: exp.Expr,
    dialect: str,
    schema: Any,
    default_catalog: str | None,
    default_schema: str | None,
    warnings: list[str],
    base: dict[str, Any],
) -> ModelLineage:
    nschema = normalise_schema(schema, dialect, default_catalog=default_catalog)
    known: dict[tuple[str | None, str, str], set[str]] = {}
    catalogs: dict[tuple[str, str], set[str | None]] = {}
    for cat, db, table, cols in iter_tables(nschema):
        known[(cat, db, table)] = set(cols)
        catalogs.setdefault((db, table), set()).add(cat)
    catalog_of = {k: next(iter(v)) for k, v in catalogs.items() if len(v) == 1}
    cat_n = norm_ident(default_catalog, dialect) if default_catalog else None
    db_n = norm_ident(default_schema, dialect) if default_schema else None
    try:
        qualified = qualify(
            query,
            dialect=dialect,
            schema=MappingSchema(for_sqlglot(nschema), dialect=dialect, normalize=False),
            catalog=cat_n,
            db=db_n,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
    except Exception as e:  # noqa: BLE001
        return ModelLineage.opaque(f"could not qualify columns: {_first_line(e)}", **base)
    scopes = traverse_scope(qualified)
    if not scopes:
        return ModelLineage.opaque("not a query sqlglot can walk", **base)
    walker = _Walker(dialect, known, catalog_of, cat_n, db_n)
    walker.by_expr = {id(s.expression): s for s in scopes}
    root = walker.info(scopes[-1])
    for s in scopes:  # record every relation read, even in scopes the output does not use
        for _n, (_node, src) in s.selected_sources.items():
            if isinstance(src, exp.Table):
                walker.relation(src)
    columns = {n: ColumnLineage(n, _to_refs(root.cols[n]), root.opaque.get(n)) for n in root.names}
    reason = None
    if not root.names and not root.unknown_star:
        reason = "the query has no output columns"
    if root.unknown_star:
        rels = ", ".join(dict.fromkeys(root.unknown_star))
        reason = f"SELECT * over {rels} whose columns are unknown: add column types"
    for rel in walker.reads:
        if (rel.catalog, rel.schema, rel.name) not in known:
            warnings.append(f"{rel.key} has no known columns")
    return ModelLineage(
        columns=columns,
        query_indirect=_to_refs(root.qlevel),
        opaque_reason=reason,
        warnings=list(dict.fromkeys(warnings + walker.warnings)),
        reads=sorted(walker.reads, key=lambda r: r.key),
        **base,
    )
