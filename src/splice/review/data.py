"""What a change does to the data: the head's relations in the review environment against prod.

Per model, with the key its tool declares (SQLMesh's ``grain`` and uniqueness audits, dbt's
``unique`` tests and ``unique_key``): rows only in the head (added), only in prod (removed),
in both with a value that differs (changed), and per column how many values differ with a few
examples.  A model without a key of its own takes the key of the nearest node upstream that
has one, where it identifies a row on both sides (a staging model keeps its table's grain);
a model with no key at all is compared as a multiset of rows (added and removed only).
Columns only on one side are listed, not compared.  Above ``[review] max_rows`` rows, both sides
are compared on the same sample of keys (a hash of the key), and the result says so.

Every query is a sqlglot expression, transpiled to the warehouse's dialect.

>>> q = keyed_diff_query(_t("w.marts.a"), _t("w.marts__review.a"), ["k"], ["v"], "duckdb")
>>> "FULL OUTER JOIN" in q.sql("duckdb")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from splice.graph.model import Graph, Node, Relation
from splice.warehouse.rows import (
    plain,  # noqa: F401  (re-exported: review's callers)
    table,
)

P, H = "_prod", "_head"
IN_P, IN_H = "_splice_in_prod", "_splice_in_head"


def _t(key: str | Relation, alias: str | None = None) -> exp.Expr:
    return table(key, "duckdb", alias)


def _c(col: str, tbl: str | None = None) -> exp.Column:
    return exp.column(col, table=tbl, quoted=True)


@dataclass
class ModelDiff:
    node: str
    prod: str | None
    head: str | None
    key: list[str] = field(default_factory=list)
    rows_prod: int | None = None
    rows_head: int | None = None
    added: int = 0
    removed: int = 0
    changed: int = 0
    columns: dict[str, int] = field(default_factory=dict)  # column -> values that differ
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)
    sampled: str | None = None
    note: str | None = None  # why it was not compared, or how
    key_from: str | None = None  # the upstream node whose key this one takes (none of its own)

    @property
    def differs(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.columns_removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "differs": self.differs,
            "prod_relation": self.prod,
            "head_relation": self.head,
            "key": self.key,
            "key_from": self.key_from,
            "rows": {"prod": self.rows_prod, "head": self.rows_head},
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "changed_values": self.columns,
            "examples": self.examples,
            "columns_added": self.columns_added,
            "columns_removed": self.columns_removed,
            "sampled": self.sampled,
            "note": self.note,
        }


def node_key(graph: Graph, node: Node) -> list[str]:
    """The columns that identify a row of ``node``: its grain (SQLMesh ``grain``, a
    ``unique_combination_of_columns`` audit), else one unique column (a ``unique`` test or
    ``unique_values`` audit), else dbt's ``unique_key``; [] when none is declared."""
    from splice.watch.metrics import node_keys

    keys = node_keys(graph, node)
    for t in graph.nodes.values():  # dbt's generic tests on the node
        if t.kind != "test" or t.meta.get("test_of") != node.id:
            continue
        listed = t.meta.get("test_columns")
        cols = [str(c).strip('"').lower() for c in listed] if isinstance(listed, list) else []
        name = str(t.meta.get("test_name") or "")
        if name == "unique_combination_of_columns" and cols and not keys.grain:
            keys.grain = cols
        elif name == "unique" and cols:
            keys.unique += [c for c in cols if c not in keys.unique]
    grain = node.meta.get("grain")
    if isinstance(grain, list) and grain:
        return [str(g).lower() for g in grain]
    if keys.grain:
        return keys.grain
    if keys.unique:
        return keys.unique[:1]
    uk = node.meta.get("unique_key")  # dbt's, as a list
    if isinstance(uk, list) and uk:
        return [str(u).lower() for u in uk]
    return []


#: Nodes whose rows a downstream model may carry through with their key.
_DATA = frozenset({"model", "source", "seed", "snapshot"})


def review_keys(graph: Graph, node: Node, depth: int = 4) -> list[tuple[list[str], str | None]]:
    """The keys a review may compare ``node`` by, best first, each with where it comes from:
    its own (:func:`node_key`; None), else the keys of the nearest nodes upstream that declare
    one (their ids), as a staging model selecting from a table keeps that table's grain.
    Whether such a key really is in ``node`` and unique there is checked on the data
    (:func:`compare_model` takes the first that is)."""
    own = node_key(graph, node)
    if own:
        return [(own, None)]
    out: list[tuple[list[str], str | None]] = []
    seen, level = {node.id}, [node.id]
    for _ in range(depth):
        nxt = sorted(
            p
            for nid in level
            for p in graph.parents(nid)
            if p not in seen and p in graph.nodes and graph.nodes[p].kind in _DATA
        )
        for p in nxt:
            key = node_key(graph, graph.nodes[p])
            if key and all(key != k for k, _ in out):
                out.append((key, p))
        seen.update(nxt)
        level = nxt
    return out


def duplicate_keys_query(rel: exp.Expr, key: list[str]) -> exp.Select:
    """How many values of ``key`` occur on more than one row of ``rel``."""
    cols = [_c(k) for k in key]
    dupes = (
        exp.select(*cols)
        .from_(rel)
        .group_by(*cols)
        .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)))
    )
    return exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=dupes, alias="_d"))


def _sample_filter(key: list[str], every: int, dialect: str, alias: str | None) -> exp.Expr:
    from splice.warehouse.engines import engine_module

    cols = [_c(k, alias) for k in key]
    h: exp.Expr = engine_module(dialect, "rows").key_hash(cols)
    return exp.EQ(
        this=exp.Mod(this=h, expression=exp.Literal.number(every)), expression=exp.Literal.number(0)
    )


def _side(rel: exp.Expr, marker: str, where: exp.Expr | None) -> exp.Select:
    q = exp.select(exp.Star(), exp.alias_(exp.Literal.number(1), marker, quoted=True)).from_(rel)
    return q.where(where) if where is not None else q


def _joined(
    q: exp.Select,
    prod: exp.Expr,
    head: exp.Expr,
    key: list[str],
    dialect: str,
    sample: int | None,
    join_type: str,
) -> exp.Select:
    """``q`` over prod's rows (alias ``_prod``) joined to the head's (``_head``) on the key,
    each side marked and, when ``sample``, filtered to the same sample of keys."""
    where = _sample_filter(key, sample, dialect, None) if sample else None

    def side(rel: exp.Expr, marker: str, alias: str) -> exp.Subquery:
        return exp.Subquery(
            this=_side(rel, marker, where),
            alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
        )

    return q.from_(side(prod, IN_P, P)).join(
        side(head, IN_H, H),
        on=exp.and_(*(exp.EQ(this=_c(k, P), expression=_c(k, H)) for k in key)),
        join_type=join_type,
    )


def keyed_diff_query(
    prod: exp.Expr,
    head: exp.Expr,
    key: list[str],
    columns: list[str],
    dialect: str,
    sample: int | None = None,
) -> exp.Select:
    """One row: added, removed, changed rows, then per column the values that differ."""
    joined = _joined(exp.select(), prod, head, key, dialect, sample, "FULL OUTER")
    both = exp.and_(exp.Not(this=exp.Is(this=_c(IN_P, P), expression=exp.Null())),
                    exp.Not(this=exp.Is(this=_c(IN_H, H), expression=exp.Null())))  # fmt: skip

    def count_if(cond: exp.Expr) -> exp.Expr:
        return exp.Sum(
            this=exp.Case(
                ifs=[exp.If(this=cond, true=exp.Literal.number(1))], default=exp.Literal.number(0)
            )
        )

    def differs(c: str) -> exp.Expr:
        return exp.NullSafeNEQ(this=_c(c, P), expression=_c(c, H))

    selects = [
        count_if(exp.Is(this=_c(IN_P, P), expression=exp.Null())).as_("added"),
        count_if(exp.Is(this=_c(IN_H, H), expression=exp.Null())).as_("removed"),
        count_if(
            exp.and_(both, exp.or_(*(differs(c) for c in columns)) if columns else exp.false())
        ).as_("changed"),
    ]
    for i, c in enumerate(columns):
        selects.append(count_if(exp.and_(both, differs(c))).as_(f"c{i}"))
    return joined.select(*selects)


def examples_query(
    prod: exp.Expr,
    head: exp.Expr,
    key: list[str],
    column: str,
    n: int,
    dialect: str,
    sample: int | None,
) -> exp.Select:
    """Up to ``n`` rows whose ``column`` differs: the key, the prod value, the head value."""
    cols = [*(_c(k, P) for k in key), _c(column, P).as_("prod"), _c(column, H).as_("head")]
    q = (
        _joined(exp.select(*cols), prod, head, key, dialect, sample, "INNER")
        .where(exp.NullSafeNEQ(this=_c(column, P), expression=_c(column, H)))
        .order_by(*(_c(k, P) for k in key))
        .limit(n)
    )
    return q


def multiset_query(prod: exp.Expr, head: exp.Expr, columns: list[str]) -> exp.Select:
    """Rows of the head not in prod and of prod not in the head (duplicates counted)."""
    cols = [_c(c) for c in columns]
    only_h = exp.except_(
        exp.select(*cols).from_(head), exp.select(*cols).from_(prod), distinct=False
    )
    only_p = exp.except_(
        exp.select(*cols).from_(prod), exp.select(*cols).from_(head), distinct=False
    )
    return exp.select(
        exp.select(exp.Count(this=exp.Star()))
        .from_(exp.Subquery(this=only_h, alias="_a"))
        .subquery()
        .as_("added"),
        exp.select(exp.Count(this=exp.Star()))
        .from_(exp.Subquery(this=only_p, alias="_r"))
        .subquery()
        .as_("removed"),
    )


def _columns(con: Any, rel: Relation, dialect: str) -> list[str] | None:
    """``rel``'s columns in order, from the warehouse's information_schema (None: no relation)."""

    def same(column: str, value: str) -> exp.Expr:
        return exp.EQ(
            this=exp.Lower(this=exp.column(column)), expression=exp.Literal.string(value.lower())
        )

    where = [same("table_schema", rel.schema), same("table_name", rel.name)]
    if rel.catalog:
        where.append(same("table_catalog", rel.catalog))
    q = (
        exp.select("column_name")
        .from_(exp.table_("columns", db="information_schema"))
        .where(exp.and_(*where))
        .order_by("ordinal_position")
    )
    names = [str(r[0]).lower() for r in con.execute(q.sql(dialect=dialect)).fetchall()]
    return names or None


def _one(con: Any, q: exp.Expr, dialect: str) -> tuple[Any, ...]:
    return tuple(con.execute(q.sql(dialect=dialect)).fetchone() or ())


def compare_model(
    con: Any,
    node: str,
    prod: Relation,
    head: Relation,
    key: list[str],
    *,
    dialect: str,
    max_rows: int,
    examples: int,
    keys: list[tuple[list[str], str | None]] | None = None,
) -> ModelDiff:
    """The diff of one model's head relation against its prod relation, by ``key``, or by the
    first of ``keys`` (:func:`review_keys`) that fits: an upstream node's key is used only where
    it is in both versions and unique in each."""
    cands = keys if keys is not None else [(key, None)]
    key, key_from = cands[0] if cands else ([], None)
    d = ModelDiff(node, prod.key, head.key, key=key, key_from=key_from)
    tp, th = table(prod, dialect), table(head, dialect)
    cp, ch = _columns(con, prod, dialect), _columns(con, head, dialect)
    if ch is None:
        d.note = f"{head.key} was not built in the review environment"
        return d
    if cp is None:
        d.note = f"{prod.key} does not exist in prod: every row is new"
        d.rows_head = _one(con, exp.select(exp.Count(this=exp.Star())).from_(th), dialect)[0]
        d.added = int(d.rows_head or 0)
        return d
    d.columns_added = [c for c in ch if c not in cp]
    d.columns_removed = [c for c in cp if c not in ch]
    common = [c for c in ch if c in cp]
    d.rows_prod = int(_one(con, exp.select(exp.Count(this=exp.Star())).from_(tp), dialect)[0])
    d.rows_head = int(_one(con, exp.select(exp.Count(this=exp.Star())).from_(th), dialect)[0])
    why = None
    for key, key_from in cands:
        if any(k not in common for k in key):
            why = f"the key of {key_from}" if key_from else "its key"
            why += f" ({', '.join(key)}) is not in both versions"
            continue
        if key_from and any(_one(con, duplicate_keys_query(t, key), dialect)[0] for t in (tp, th)):
            why = f"the key of {key_from} ({', '.join(key)}) is not unique in it"
            continue
        why = None
        d.key, d.key_from = key, key_from
        break
    if why or not key:
        if key_from:
            why = f"no key of its own, and {why or 'none upstream'}"
        row = _one(con, multiset_query(tp, th, common), dialect)
        d.added, d.removed = int(row[0] or 0), int(row[1] or 0)
        d.note = (
            f"{why}: rows compared as a whole"
            if why
            else "no key declared (a grain, a unique test or audit): rows compared as a whole"
        )
        d.key, d.key_from = [], None
        return d
    sample = None
    largest = max(d.rows_prod, d.rows_head)
    if largest > max_rows:
        sample = -(-largest // max_rows)
        d.sampled = f"1 in {sample} keys (by a hash of {', '.join(key)}): over {max_rows:,} rows"
    values = [c for c in common if c not in key]
    row = _one(con, keyed_diff_query(tp, th, key, values, dialect, sample), dialect)
    d.added, d.removed, d.changed = (int(x or 0) for x in row[:3])
    d.columns = {c: int(row[3 + i] or 0) for i, c in enumerate(values) if row[3 + i]}
    for c in d.columns:
        if examples <= 0:
            break
        rows = con.execute(
            examples_query(tp, th, key, c, examples, dialect, sample).sql(dialect=dialect)
        ).fetchall()
        d.examples[c] = [
            {
                "key": {k: plain(r[i]) for i, k in enumerate(key)},
                "prod": plain(r[-2]),
                "head": plain(r[-1]),
            }
            for r in rows
        ]
    return d


def metric_query(spec: Any, relation: Relation, start: Any) -> exp.Select:
    """``spec``'s query (:class:`splice.watch.metrics.MetricSpec`) over ``relation``."""
    import dataclasses

    return dataclasses.replace(spec, relation=relation).query(start)
