"""The scope walk behind :func:`splice.lineage.analyse_model`.

sqlglot's qualified tree is split into scopes (the query, each CTE, derived table, subquery,
UNION branch).  :class:`Walker` computes, once per scope and memoised, each output column's refs
``{(relation, column, kind): subtypes}`` and the scope's query-level indirect refs; an outer scope
composes what its sources produce.  Nothing here raises on purpose: what cannot be resolved comes
back as a reason, which the caller turns into an opaque column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from splice.graph.model import Relation
from splice.lineage.schema import norm_ident

# (relation, column, kind) -> subtypes.  "MASKED" rides along as a pseudo-subtype.
Refs = dict[tuple[Relation, str, str], set[str]]
MASKED = "MASKED"
_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}
_MASKING_FUNCS: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, n)
    for n in ("MD5", "MD5Digest", "SHA", "SHA2", "SHA1Digest", "SHA2Digest")
    if hasattr(exp, n)
)


@dataclass
class Info:
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


def merge(into: Refs, refs: Refs) -> None:
    for key, subs in refs.items():
        cur = into.get(key)
        if cur is None:
            into[key] = set(subs)
        else:
            cur.update(subs)


def compose(into: Refs, refs: Refs, kind: str, sub: str, masked: bool) -> None:
    """Add ``refs`` (an upstream column's lineage) seen through a context of ``kind``/``sub``."""
    for (rel, col, rkind), subs in refs.items():
        if kind == "direct":
            if rkind == "direct":
                outer = _RANK.get(sub, 1)
                new = {s if s == MASKED or _RANK.get(s, 0) >= outer else sub for s in subs} or {sub}
            else:
                new = set(subs)
            key = (rel, col, rkind)
        else:
            new = {sub} | ({s for s in subs if s != "IDENTITY" and s not in _RANK})
            if rkind == "direct" and MASKED in subs:
                new.add(MASKED)
            key = (rel, col, "indirect")
        if masked:
            new.add(MASKED)
        cur = into.get(key)
        if cur is None:
            into[key] = new
        else:
            cur.update(new)


class Walker:
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
        self.infos: dict[int, Info] = {}
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
        if not isinstance(table.this, exp.Func) and table.name and not is_file(table):
            d = self.dialect
            name = norm_ident(table.name, d)
            db = norm_ident(table.db, d) if table.db else (self.default_schema or "main")
            cat = norm_ident(table.catalog, d) if table.catalog else None
            if cat is None:
                cat = self.catalog_of.get((db, name), self.default_catalog)
            rel = Relation(cat or None, db, name)
            self.reads[rel] = None
        elif is_file(table):
            self.warnings.append(f"reads the file '{table.name}': its columns start here")
        else:
            self.warnings.append(
                f"reads the table function {table.this.sql(dialect=self.dialect)}: "
                "its columns start here"
            )
        self._rel_cache[key] = rel
        return rel

    def columns_of(self, rel: Relation) -> set[str] | None:
        """The known columns of ``rel`` (None: unknown).  A schema given without catalogs
        matches any catalog."""
        got = self.known.get((rel.catalog, rel.schema, rel.name))
        if got is None and rel.catalog is not None:
            got = self.known.get((None, rel.schema, rel.name))
        return got

    # -- scopes --------------------------------------------------------------------------------
    def info(self, scope: Scope) -> Info:
        # A recursive CTE's self-reference is a scope sqlglot never traversed: use the traversed
        # scope of the same expression (the base case) instead.
        scope = self.by_expr.get(id(scope.expression), scope)
        key = id(scope)
        got = self.infos.get(key)
        if got is not None:
            return got
        self.infos[key] = Info(fallback=lambda n: ({}, f"column {n} is read recursively"))
        expr = scope.expression
        if isinstance(expr, exp.SetOperation) and len(scope.union_scopes) == 2:
            info = self._union_info(scope)
        elif isinstance(expr, exp.Select):
            info = self._select_info(scope)
        else:
            info = self._udtf_info(scope)
        self.infos[key] = info
        return info

    def _udtf_info(self, scope: Scope) -> Info:
        """UNNEST / LATERAL / VALUES: every column it yields comes from the columns inside it."""
        expr = scope.expression
        info = Info()
        if isinstance(expr, exp.Values):
            info.fallback = lambda n: ({}, None)
            return info
        for sub in scope.subquery_scopes:  # LATERAL (SELECT ...)
            inner = self.info(sub)
            merge(info.qlevel, inner.qlevel)
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

    def _union_info(self, scope: Scope) -> Info:
        left, right = (self.info(s) for s in scope.union_scopes)
        info = Info()
        merge(info.qlevel, left.qlevel)
        merge(info.qlevel, right.qlevel)
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
                merge(refs, r)
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
                    merge(refs, r)
                    if why:
                        reasons.append(why)
                return refs, reasons[0] if reasons else None

            info.fallback = fallback
        order = scope.expression.args.get("order")
        if order is not None:
            aliases = {n: (info.cols[n], info.opaque.get(n)) for n in info.names}
            self.collect(order, scope, "indirect", "SORT", info.qlevel, [], aliases)
        return info

    def _select_info(self, scope: Scope) -> Info:
        select = scope.expression
        info = Info()
        star_sources: list[str] = []
        for _name, (_node, src) in scope.selected_sources.items():
            if isinstance(src, Scope):
                merge(info.qlevel, self.info(src).qlevel)
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
            sub = "IDENTITY" if type(node) is exp.Column else "TRANSFORMATION"
            self.collect(node, scope, "direct", sub, refs, reasons)
            if name in info.cols:
                merge(info.cols[name], refs)
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
                        compose(q, aliases[proj.alias_or_name][0], "indirect", "GROUP_BY", False)
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
                if rel is None and is_file(src):
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
                compose(out, refs, k, s, m)
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
                    compose(out, refs, k, vsub, m)
                compose(out, inner.qlevel, "indirect", s if k == "indirect" else "FILTER", m)
                continue
            if t is _COLUMNS:
                reasons.append(
                    "COLUMNS(...) picks columns by pattern, which lineage does not follow"
                )
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


def is_file(table: exp.Table) -> bool:
    """DuckDB's ``FROM 'data/*.parquet'``: a quoted one-part name that looks like a path."""
    ident = table.this
    return (
        isinstance(ident, exp.Identifier)
        and bool(ident.args.get("quoted"))
        and not table.db
        and any(ch in ident.name for ch in "/.*:")
    )
