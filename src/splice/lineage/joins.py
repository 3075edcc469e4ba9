"""The equi-join keys of a query: which column of which relation is matched to which.

Every scope of the qualified query (the query, each CTE, derived table and subquery) is read
for its joins; each ``a.x = b.y`` conjunct of an ON clause whose sides resolve, through the
scopes, to one column of one relation read as it is (IDENTITY) is a :class:`JoinKey`.  The
side of the joined table is ``right``; the other is ``left``, the rows that look for a partner
(a RIGHT JOIN is turned around, so ``left`` is always the preserved side of an outer join).
Anything else (a function of a column, a column of a table function, a condition between two
columns of one relation) names no key and is left out.

>>> from splice.lineage import analyse_model
>>> ml = analyse_model(
...     "WITH r AS (SELECT ccy, rate, rate_day FROM fx.rates) SELECT o.id, o.amount * r.rate AS usd "
...     "FROM raw.orders o LEFT JOIN r ON o.ccy = r.ccy AND o.day >= r.rate_day",
...     dialect="duckdb", default_catalog="w",
...     schema={"w": {"raw": {"orders": {"id": "", "amount": "", "ccy": "", "day": ""}},
...                   "fx": {"rates": {"ccy": "", "rate": "", "rate_day": ""}}}})
>>> [j.text for j in ml.joins]
['w.raw.orders.ccy = w.fx.rates.ccy (left)']
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from splice.lineage.scopes import Walker
from splice.lineage.types import ColumnRef, JoinKey


def _column(e: exp.Expr) -> exp.Column | None:
    """The column an ON side names (through a CAST: the value's type, not its domain)."""
    while isinstance(e, exp.Cast | exp.Paren):
        e = e.this
    if isinstance(e, exp.Column) and e.table and not isinstance(e.this, exp.Star):
        return e
    return None


def _ref(walker: Walker, scope: Scope, col: exp.Column) -> ColumnRef | None:
    refs, why = walker.resolve(scope, col.table, col.name)
    direct = [(k, subs) for k, subs in refs.items() if k[2] == "direct"]
    if why or len(direct) != 1:
        return None
    (rel, name, _), subs = direct[0]
    if set(subs) != {"IDENTITY"}:
        return None
    return ColumnRef(rel, name, "indirect", ("JOIN",))


def _conjuncts(cond: exp.Expr) -> list[exp.Expr]:
    while isinstance(cond, exp.Paren):
        cond = cond.this
    if isinstance(cond, exp.And):
        return _conjuncts(cond.this) + _conjuncts(cond.expression)
    return [cond]


def join_keys(walker: Walker, scopes: list[Scope]) -> list[JoinKey]:
    """The join keys of every scope (see the module doc), each once, in query order."""
    out: dict[JoinKey, None] = {}
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        for join in select.args.get("joins") or ():
            cond = join.args.get("on")
            if cond is None:
                continue
            joined = join.this.alias_or_name
            side = (join.side or "").lower()
            how = {"left": "left", "right": "left", "full": "full"}.get(side, "inner")
            for part in _conjuncts(cond):
                if not isinstance(part, exp.EQ):
                    continue
                a, b = _column(part.this), _column(part.expression)
                if a is None or b is None or (a.table == joined) == (b.table == joined):
                    continue
                inner, outer = (a, b) if a.table == joined else (b, a)
                if side == "right":
                    inner, outer = outer, inner
                left, right = _ref(walker, scope, outer), _ref(walker, scope, inner)
                if left is None or right is None or left.relation == right.relation:
                    continue
                out[JoinKey(left, right, how)] = None
    return list(out)
