"""The faults the slice and join-coverage monitors find, named with their numbers.

- ``domain_change``: the values of a key changed: the values that arrived every interval
  vanished at once while values never seen appeared (``domain_change`` findings), said as what
  changed (the codes changed case, gained spaces, or were replaced) and, where the graph joins
  the key, how many of the values still match the other side of the join before and after
  (:func:`domain_evidence` reads both from the warehouse); or the rows of a join stopped
  finding their partner (``coverage_drop``), with the values that find none;
- ``slice_missing``: one value of a dimension lost its rows (``slice_drop``): "channel =
  partner: 0 rows where 85 were expected", from its first day.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from sqlglot import exp

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Days of the partner's values a key's values are matched against (the interval and before).
PARTNER_DAYS = 7


def _wd(iso: str) -> str:
    return f"{iso} ({date.fromisoformat(iso).strftime('%a')})"


def _iso(d: Any) -> str:
    return d.isoformat() if hasattr(d, "isoformat") else str(d)


def _n(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{x:,.0f}" if abs(x) >= 10 or float(x).is_integer() else f"{x:.3g}"


def _list(xs: list[str], k: int = 5) -> str:
    return ", ".join(xs[:k]) + (", ..." if len(xs) > k else "")


def how_changed(lost: list[str], gained: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """How vanished values relate to new ones: ``("changed case", pairs)``, ``("gained or lost
    spaces", pairs)``, else ``("were replaced", [])``.

    >>> how_changed(["EUR", "GBP"], ["eur", "gbp"])
    ('changed case', [('EUR', 'eur'), ('GBP', 'gbp')])
    >>> how_changed(["EUR"], ["EURO"])[0]
    'were replaced'
    """
    for words, norm in (("changed case", str.casefold), ("gained or lost spaces", str.strip),
                        ("changed case and spacing", lambda v: v.strip().casefold())):  # fmt: skip
        new = {norm(g): g for g in gained}
        pairs = [(v, new[norm(v)]) for v in lost if norm(v) in new and new[norm(v)] != v]
        if pairs and 2 * len(pairs) >= len(lost):
            return words, pairs
    return "were replaced", []


def _by_first_day(items: list[dict[str, Any]]) -> tuple[str, list[str], dict[str, Any]]:
    days = sorted({_iso(a["interval"]) for a in items})
    first = [a for a in items if _iso(a["interval"]) == days[0]]
    return days[0], days, max(first, key=lambda a: len((a.get("data") or {}).get("vanished") or []))


def _domain(anomalies: list[dict[str, Any]], ev: dict[str, Any] | None) -> dict[str, Any] | None:
    items = [a for a in anomalies if a["detector"] == "domain_change"]
    if not items:
        return None
    day0, days, a0 = _by_first_day(items)
    data = a0.get("data") or {}
    dim = next(iter(a0.get("dims") or {}), "value")
    lost, gained = list(data.get("vanished") or []), list(data.get("new") or [])
    n_lost, n_new = int(data.get("n_vanished") or len(lost)), int(data.get("n_new") or len(gained))
    how, pairs = how_changed(lost, gained)
    shown = ", ".join(f"{a} -> {b}" for a, b in pairs[:3]) + (", ..." if len(pairs) > 3 else "")
    what = (
        f"{dim} values {how} on {_wd(day0)} ({shown})"
        if pairs
        else f"{n_lost} {dim} values vanished on {_wd(day0)} ({_list(lost)}) and {n_new} never "
        f"seen before appeared ({_list(gained)})"
    )
    words = f"domain change: {what}"
    match = (ev or {}).get("match") or []
    m = next((x for x in match if x.get("after") and x.get("before")), None)
    if m:
        b, af = m["before"], m["after"]
        no_longer = max(b["matched"] - af["matched"], 0)
        words += (
            f": {no_longer} of {b['values']} values no longer match {m['partner']}, the key "
            f"{m['via']} joins them on ({af['matched']} of {af['values']} match on "
            f"{_wd(af['day'])}; {b['matched']} of {b['values']} did on {_wd(b['day'])})"
        )
    else:
        words += f"; {n_lost} of {int(data.get('n_expected') or n_lost)} values that arrived " \
                 "every interval vanished at once"  # fmt: skip
    if len(days) > 1:
        words += f"; still so on {', '.join(_wd(d) for d in days[1:4])}" + (
            f" and {len(days) - 4} more" if len(days) > 4 else "")  # fmt: skip
    return {
        "class": "domain_change",
        "n": n_lost,
        "words": words,
        "evidence": {
            "column": dim,
            "how": how,
            "vanished": lost,
            "new": gained,
            "pairs": [list(p) for p in pairs],
            "match": match,
            "intervals": days,
        },  # fmt: skip
        "intervals": days,
    }


def _coverage(anomalies: list[dict[str, Any]], ev: dict[str, Any] | None) -> dict[str, Any] | None:
    items = [a for a in anomalies if a["detector"] == "coverage_drop"]
    if not items:
        return None
    days = sorted({_iso(a["interval"]) for a in items})
    a0 = min(items, key=lambda a: _iso(a["interval"]))
    label = str(a0["metric"]).rsplit("/", 1)[-1]
    words = (
        f"domain change: the join's {label} fell to {float(a0['value']):.1%} on {_wd(days[0])} "
        f"from at least {float((a0.get('data') or {}).get('max_before') or 1.0):.1%}"
    )
    unmatched = (ev or {}).get("unmatched") or []
    if unmatched:
        words += "; the values finding no partner: " + ", ".join(
            f"{u['value']!r} ({u['rows']:,} rows)" for u in unmatched[:5])  # fmt: skip
    return {"class": "domain_change", "n": len(days), "words": words,
            "evidence": {"coverage": a0["value"], "unmatched": unmatched, "intervals": days},
            "intervals": days}  # fmt: skip


def _slices(anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:
    items = [a for a in anomalies if a["detector"] == "slice_drop"]
    if not items:
        return None
    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in items:
        key = ", ".join(f"{k} = {v}" for k, v in (a.get("dims") or {}).items()) or "(all)"
        per[key].append(a)
    parts = []
    for key, xs in sorted(per.items(), key=lambda kv: min(_iso(a["interval"]) for a in kv[1]))[:3]:
        xs.sort(key=lambda a: _iso(a["interval"]))
        d = [_iso(a["interval"]) for a in xs]
        parts.append(
            f"{key}: {_n(xs[0]['value'])} rows where {_n(xs[0]['expected'])} were expected on "
            f"{_wd(d[0])}"
            + (f", and {_n(xs[-1]['value'])} on {_wd(d[-1])}" if len(d) > 1 else "")
            + (f" ({len(d)} intervals)" if len(d) > 2 else "")
        )
    if len(per) > 3:
        parts.append(f"{len(per) - 3} more values lost rows")
    days = sorted({_iso(a["interval"]) for a in items})
    return {
        "class": "slice_missing",
        "n": len(per),
        "words": "slice missing: " + "; ".join(parts),
        "evidence": {"slices": sorted(per), "intervals": days},
        "intervals": days,
    }


def classify_domain(
    anomalies: list[dict[str, Any]], ev: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The domain and slice faults the anomalies at the origin show (see the module doc)."""
    found = [_domain(anomalies, ev), _slices(anomalies)]
    if found[0] is None:
        found.append(_coverage(anomalies, ev))
    return [f for f in found if f is not None]


# -- the warehouse's side ----------------------------------------------------------------------
def _values(rel: Any, col: str, time: str | None, lo: date | None, hi: date | None) -> exp.Select:
    q = exp.select(exp.alias_(exp.column(col, quoted=True), "k", quoted=True)).from_(
        exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True)
    )
    if time is not None and lo is not None and hi is not None:
        day = exp.cast(exp.column(time, quoted=True), exp.DataType.build("DATE"))
        q = q.where(exp.Between(this=day, low=exp.cast(exp.Literal.string(lo.isoformat()), "DATE"),
                                high=exp.cast(exp.Literal.string(hi.isoformat()), "DATE")))  # fmt: skip
    return q.distinct()


def match_query(mine: exp.Select, partner: exp.Select) -> exp.Select:
    """How many of ``mine``'s values there are, and how many of them ``partner`` has.

    >>> from splice.graph.model import Relation
    >>> q = match_query(_values(Relation("w", "fx", "r"), "ccy", None, None, None),
    ...                 _values(Relation("w", "raw", "b"), "ccy", None, None, None))
    >>> print(q.sql("duckdb"))
    SELECT COUNT(*) AS "values", COUNT("p"."k") AS "matched" FROM (SELECT DISTINCT "ccy" AS "k" FROM "w"."fx"."r") AS "o" LEFT JOIN (SELECT DISTINCT "ccy" AS "k" FROM "w"."raw"."b") AS "p" ON "o"."k" = "p"."k"
    """
    return (
        exp.select(
            exp.alias_(exp.Count(this=exp.Star()), "values", quoted=True),
            exp.alias_(
                exp.Count(this=exp.column("k", table="p", quoted=True)), "matched", quoted=True
            ),  # fmt: skip
        )
        .from_(exp.alias_(exp.Subquery(this=mine), "o", table=True, quoted=True))
        .join(
            exp.alias_(exp.Subquery(this=partner), "p", table=True, quoted=True),
            on=exp.EQ(
                this=exp.column("k", table="o", quoted=True),
                expression=exp.column("k", table="p", quoted=True),
            ),  # fmt: skip
            join_type="left",
        )
    )


def domain_evidence(ws: Workspace, graph: Any, origin: str | None,
                    anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:  # fmt: skip
    """For a domain change at ``origin``: per join the key takes part in, how many of the
    origin's values match the other side on the first changed interval and on the last one
    before it; for a join's coverage that fell there, the values that find no partner
    (:func:`unmatched_evidence`).  None when no anomaly asks for it."""
    items = [a for a in anomalies if a["detector"] == "domain_change" and a.get("dims")]
    if origin is None or origin not in graph.nodes:
        return None
    if not items:
        return unmatched_evidence(ws, graph, origin, anomalies)
    from splice.warehouse.connect import connect
    from splice.watch.graph_monitors import GraphFacts, join_monitors, workspace_models
    from splice.watch.specs import ColumnTypes, relation_of

    node = graph.nodes[origin]
    rel, time = relation_of(node), (node.time_column or "").lower()
    if rel is None or not time:
        return None
    dim = next(iter(items[0]["dims"]))
    day = min(a["interval"] for a in items)
    day = day if isinstance(day, date) else date.fromisoformat(str(day))
    facts = GraphFacts(graph, workspace_models(ws))
    out: dict[str, Any] = {"match": []}
    with connect(ws, "incident diagnosis") as con:
        prev = con.execute(
            exp.select(exp.Max(this=exp.cast(exp.column(time, quoted=True), "DATE")))
            .from_(exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True))
            .where(exp.LT(this=exp.cast(exp.column(time, quoted=True), "DATE"),
                          expression=exp.cast(exp.Literal.string(day.isoformat()), "DATE")))
            .sql(ws.dialect)
        ).fetchone()[0]  # fmt: skip
        for j in join_monitors(facts, ColumnTypes(ws), ws.dialect):
            for mine, theirs in (((j.right, j.right_key), (j.left, j.left_key, j.left_time)),
                                 ((j.left, j.left_key), (j.right, j.right_key, j.right_time))):  # fmt: skip
                if mine != (rel, dim):
                    continue
                partner = f"{theirs[0].schema}.{theirs[0].name}.{theirs[1]}"
                rec: dict[str, Any] = {"partner": partner, "via": j.model}
                for name, d in (("after", day), ("before", prev)):
                    if d is None:
                        continue
                    lo = d - timedelta(days=PARTNER_DAYS)
                    q = match_query(_values(rel, dim, time, d, d),
                                    _values(theirs[0], theirs[1], theirs[2], lo, d))  # fmt: skip
                    n, matched = con.execute(q.sql(ws.dialect)).fetchone()
                    rec[name] = {"day": d.isoformat(), "values": int(n), "matched": int(matched)}
                out["match"].append(rec)
    return out


def unmatched_query(j: Any, day: date, limit: int = 5) -> exp.Select:
    """The left side's values on ``day`` that find no partner (see
    :class:`splice.watch.graph_monitors.JoinCoverageSpec`), with their rows, most rows first.

    >>> from splice.graph.model import Relation
    >>> from splice.watch.graph_monitors import JoinMonitor
    >>> j = JoinMonitor("p:m", Relation("w", "raw", "b"), "ccy", "day", "DATE",
    ...                 Relation("w", "fx", "r"), "ccy", None)
    >>> print(unmatched_query(j, date(2026, 9, 28)).sql("duckdb"))
    SELECT "l"."k" AS "value", COUNT(*) AS "rows" FROM (SELECT "ccy" AS "k" FROM "w"."raw"."b" WHERE CAST("day" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-28' AS DATE)) AS "l" LEFT JOIN (SELECT DISTINCT "ccy" AS "k" FROM "w"."fx"."r") AS "r" ON "l"."k" = "r"."k" WHERE "r"."k" IS NULL GROUP BY "l"."k" ORDER BY "rows" DESC LIMIT 5
    """
    left = _values(j.left, j.left_key, j.left_time, day, day)
    left.set("distinct", None)
    right = _values(j.right, j.right_key, None, None, None)
    if j.right_time:
        rday = exp.cast(exp.column(j.right_time, quoted=True), exp.DataType.build("DATE"))
        latest = (
            exp.select(exp.Max(this=rday.copy()))
            .from_(exp.table_(j.right.name, db=j.right.schema, catalog=j.right.catalog, quoted=True))
            .where(exp.LTE(this=rday.copy(), expression=exp.cast(exp.Literal.string(day.isoformat()), "DATE")))
        )  # fmt: skip
        right = right.where(exp.EQ(this=rday, expression=exp.Subquery(this=latest)))
    k = exp.column("k", table="l", quoted=True)
    return (
        exp.select(
            exp.alias_(k, "value", quoted=True),
            exp.alias_(exp.Count(this=exp.Star()), "rows", quoted=True),
        )  # fmt: skip
        .from_(exp.alias_(exp.Subquery(this=left), "l", table=True, quoted=True))
        .join(
            exp.alias_(exp.Subquery(this=right), "r", table=True, quoted=True),
            on=exp.EQ(this=k.copy(), expression=exp.column("k", table="r", quoted=True)),
            join_type="left",
        )
        .where(exp.Is(this=exp.column("k", table="r", quoted=True), expression=exp.Null()))
        .group_by(k.copy())
        .order_by(exp.Ordered(this=exp.column("rows", quoted=True), desc=True))
        .limit(limit)
    )


def unmatched_evidence(ws: Workspace, graph: Any, origin: str,
                       anomalies: list[dict[str, Any]]) -> dict[str, Any] | None:  # fmt: skip
    """For a join's coverage that fell at ``origin``: the values finding no partner on the
    first interval it fell, with their rows."""
    items = [a for a in anomalies if a["detector"] == "coverage_drop"]
    if not items:
        return None
    from splice.warehouse.connect import connect
    from splice.watch.graph_monitors import GraphFacts, join_monitors, workspace_models
    from splice.watch.specs import ColumnTypes

    first = min(items, key=lambda a: _iso(a["interval"]))
    day = date.fromisoformat(_iso(first["interval"]))
    facts = GraphFacts(graph, workspace_models(ws))
    joins = [j for j in join_monitors(facts, ColumnTypes(ws), ws.dialect)
             if j.model == origin and first["metric"] == f"{origin}/{j.label}"]  # fmt: skip
    if not joins:
        return None
    with connect(ws, "incident diagnosis") as con:
        rows = con.execute(unmatched_query(joins[0], day).sql(ws.dialect)).fetchall()
    return {"unmatched": [{"value": r[0], "rows": int(r[1])} for r in rows], "day": day.isoformat()}
