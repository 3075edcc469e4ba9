"""The cause outside the project: what an ingestion job's own records say about the bad days.

For the relation an ingestion job loads, and the incident's intervals, Splice reads

- the load records: dlt keeps ``_dlt_loads`` next to the data and stamps every row with its
  ``_dlt_load_id``; so Splice can say which load wrote the bad rows, that it succeeded
  (status 0) and when;
- the payload's own dates: every other date column of the relation (a vendor's ``as_of``)
  compared with the time column, in scope and on the days before: a vendor that re-serves
  Friday's rates on Monday says so in its own as-of date (``lag_intervals``: how many of the
  relation's own intervals the payload trails; stale days after the scope are listed under
  ``later``, so a feed that is still late is seen whole);
- the rows per interval and load (``rows_by_load``): when each load wrote each interval's rows
  (dlt's ``_dlt_load_id`` and ``_dlt_loads.inserted_at``, or a ``_load_id`` / ``_loaded_at``
  column of the relation), so rows that arrived after their interval was processed are seen;
- duplicates (``duplicates``): per interval, the rows against the distinct keys (the keys of the
  node reading the relation), with the loads that wrote them.

Every query is a sqlglot expression, run on one read-only connection.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlglot import exp

from splice.graph.model import Node, Relation
from splice.warehouse.rows import date_literal, table

#: Days before the scope read to learn how far the payload's dates normally lag.
BASELINE_DAYS = 14
DLT_COLUMNS = ("_dlt_load_id", "_dlt_id")
#: Columns that name the load that wrote a row, and when it was loaded (first found is used).
LOAD_ID_COLUMNS = ("_dlt_load_id", "_load_id", "load_id")
LOADED_AT_COLUMNS = ("_loaded_at", "loaded_at", "_ingested_at", "ingested_at", "_inserted_at")
SKIP_DATE_COLUMNS = DLT_COLUMNS + LOAD_ID_COLUMNS + LOADED_AT_COLUMNS
#: The latest date a payload-dates query reads up to (the relation's end, whatever it is).
OPEN_END = date(9999, 12, 31)


def _table(rel: Relation) -> exp.Expr:
    return table(rel, "duckdb")


def _col(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def payload_dates_query(
    rel: Relation, time_col: str, date_col: str, start: date, end: date
) -> exp.Select:
    """Per interval: the earliest and latest ``date_col`` and the row count.

    >>> q = payload_dates_query(Relation("wh", "raw", "fx"), "rate_date", "as_of",
    ...                         date(2026, 9, 28), date(2026, 9, 29))
    >>> print(q.sql("duckdb"))
    SELECT CAST("rate_date" AS DATE) AS "interval", MIN(CAST("as_of" AS DATE)) AS "lo", MAX(CAST("as_of" AS DATE)) AS "hi", COUNT(*) AS "n" FROM "wh"."raw"."fx" WHERE CAST("rate_date" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE) GROUP BY CAST("rate_date" AS DATE) ORDER BY CAST("rate_date" AS DATE)
    """
    day = exp.cast(_col(time_col), exp.DataType.build("DATE"))
    other = exp.cast(_col(date_col), exp.DataType.build("DATE"))
    return (
        exp.select(
            exp.alias_(day, "interval", quoted=True),
            exp.alias_(exp.Min(this=other), "lo", quoted=True),
            exp.alias_(exp.Max(this=other.copy()), "hi", quoted=True),
            exp.alias_(exp.Count(this=exp.Star()), "n", quoted=True),
        )
        .from_(_table(rel))
        .where(exp.Between(this=day.copy(), low=date_literal(start), high=date_literal(end)))
        .group_by(day.copy())
        .order_by(day.copy())
    )


def loads_query(rel: Relation, time_col: str, start: date, end: date) -> exp.Select:
    """The dlt loads that wrote the rows of the scope, with their status and time."""
    day = exp.cast(exp.column(time_col, table="d", quoted=True), exp.DataType.build("DATE"))
    loads = exp.table_("_dlt_loads", db=rel.schema, catalog=rel.catalog, quoted=True)
    load_id = exp.column("_dlt_load_id", table="d", quoted=True)
    return (
        exp.select(
            exp.alias_(load_id, "load_id", quoted=True),
            exp.alias_(exp.column("status", table="l", quoted=True), "status", quoted=True),
            exp.alias_(exp.column("inserted_at", table="l", quoted=True), "at", quoted=True),
            exp.alias_(exp.Min(this=day), "first", quoted=True),
            exp.alias_(exp.Max(this=day.copy()), "last", quoted=True),
            exp.alias_(exp.Count(this=exp.Star()), "rows", quoted=True),
        )
        .from_(exp.alias_(_table(rel), "d", table=True))
        .join(
            exp.alias_(loads, "l", table=True),
            on=exp.EQ(
                this=exp.column("load_id", table="l", quoted=True), expression=load_id.copy()
            ),
            join_type="left",
        )
        .where(exp.Between(this=day.copy(), low=date_literal(start), high=date_literal(end)))
        .group_by(
            load_id.copy(),
            exp.column("status", table="l", quoted=True),
            exp.column("inserted_at", table="l", quoted=True),
        )
        .order_by(load_id.copy())
    )


def rows_by_load_query(
    rel: Relation, time_col: str, load_col: str, at_col: str | None, start: date, end: date
) -> exp.Select:
    """Per interval and load: the load id, when it loaded, and how many rows it wrote.

    ``at_col`` is a column of the relation holding the load time; without it the load time is
    dlt's ``_dlt_loads.inserted_at`` (joined on the load id).

    >>> q = rows_by_load_query(Relation("wh", "raw", "b"), "day", "_load_id", "_loaded_at",
    ...                        date(2026, 9, 28), date(2026, 9, 28))
    >>> print(q.sql("duckdb"))
    SELECT CAST("d"."day" AS DATE) AS "interval", "d"."_load_id" AS "load_id", MIN("d"."_loaded_at") AS "at", COUNT(*) AS "rows" FROM "wh"."raw"."b" AS d WHERE CAST("d"."day" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-28' AS DATE) GROUP BY CAST("d"."day" AS DATE), "d"."_load_id" ORDER BY CAST("d"."day" AS DATE), MIN("d"."_loaded_at")
    """
    day = exp.cast(exp.column(time_col, table="d", quoted=True), exp.DataType.build("DATE"))
    load_id = exp.column(load_col, table="d", quoted=True)
    if at_col:
        at: exp.Expr = exp.Min(this=exp.column(at_col, table="d", quoted=True))
    else:
        at = exp.Min(this=exp.column("inserted_at", table="l", quoted=True))
    q = exp.select(
        exp.alias_(day, "interval", quoted=True),
        exp.alias_(load_id, "load_id", quoted=True),
        exp.alias_(at, "at", quoted=True),
        exp.alias_(exp.Count(this=exp.Star()), "rows", quoted=True),
    ).from_(exp.alias_(_table(rel), "d", table=True))
    if not at_col:
        loads = exp.table_("_dlt_loads", db=rel.schema, catalog=rel.catalog, quoted=True)
        q = q.join(
            exp.alias_(loads, "l", table=True),
            on=exp.EQ(
                this=exp.column("load_id", table="l", quoted=True), expression=load_id.copy()
            ),
            join_type="left",
        )
    return (
        q.where(exp.Between(this=day.copy(), low=date_literal(start), high=date_literal(end)))
        .group_by(day.copy(), load_id.copy())
        .order_by(day.copy(), at.copy())
    )


def duplicates_query(
    rel: Relation, time_col: str, keys: list[str], start: date, end: date
) -> exp.Select:
    """Per interval: the rows and the distinct keys among them.

    >>> q = duplicates_query(Relation("wh", "raw", "b"), "day", ["id"], date(2026, 9, 28),
    ...                      date(2026, 9, 29))
    >>> print(q.sql("duckdb"))
    SELECT CAST("day" AS DATE) AS "interval", COUNT(*) AS "rows", COUNT(DISTINCT "id") AS "distinct" FROM "wh"."raw"."b" WHERE CAST("day" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE) GROUP BY CAST("day" AS DATE) ORDER BY CAST("day" AS DATE)
    """
    day = exp.cast(_col(time_col), exp.DataType.build("DATE"))
    distinct = exp.Count(this=exp.Distinct(expressions=[_col(k) for k in keys]))
    return (
        exp.select(
            exp.alias_(day, "interval", quoted=True),
            exp.alias_(exp.Count(this=exp.Star()), "rows", quoted=True),
            exp.alias_(distinct, "distinct", quoted=True),
        )
        .from_(_table(rel))
        .where(exp.Between(this=day.copy(), low=date_literal(start), high=date_literal(end)))
        .group_by(day.copy())
        .order_by(day.copy())
    )


def _iso(v: Any) -> Any:
    return v.isoformat() if hasattr(v, "isoformat") else v


def _is_date(typ: str) -> bool:
    t = typ.upper()
    return t.startswith("DATE") or t.startswith("TIMESTAMP")


def source_evidence(
    con: Any,
    node: Node,
    rel: Relation,
    columns: dict[str, str],
    time_col: str,
    scope: list[date],
    dialect: str,
    keys: list[str] | None = None,
) -> dict[str, Any]:
    """What the source's own records say about ``scope`` (a sorted list of interval starts).

    ``keys``: the relation's columns that identify a row (the keys of the node reading it);
    with them, the intervals of the scope that hold more rows than distinct keys are listed.
    """
    start, end = scope[0], scope[-1]
    base_start = start - timedelta(days=BASELINE_DAYS)
    out: dict[str, Any] = {
        "node": node.id,
        "relation": rel.key,
        "runner": node.tool,
        "time_column": time_col,
        "loads": [],
        "payload_dates": [],
    }
    if {"_dlt_load_id"} <= set(columns):
        try:
            rows = con.execute(loads_query(rel, time_col, start, end).sql(dialect)).fetchall()
        except Exception as e:  # noqa: BLE001 - a missing _dlt_loads table: no load records
            out["loads_error"] = str(e).splitlines()[0]
        else:
            out["loads"] = [
                {
                    "load_id": r[0],
                    "status": r[1],
                    "succeeded": r[1] == 0,
                    "at": r[2].isoformat() if hasattr(r[2], "isoformat") else r[2],
                    "first": r[3].isoformat(),
                    "last": r[4].isoformat(),
                    "rows": int(r[5]),
                }
                for r in rows
            ]
    in_scope = set(scope)
    for col, typ in columns.items():
        if col == time_col or col in SKIP_DATE_COLUMNS or not _is_date(typ):
            continue
        q = payload_dates_query(rel, time_col, col, base_start, OPEN_END)
        rows = con.execute(q.sql(dialect)).fetchall()
        normal = [(r[0] - r[2]).days for r in rows if r[0] not in in_scope and r[0] < start]
        usual = max(normal) if normal else 0
        intervals = [r[0] for r in rows]
        days, later = [], []
        for r in rows:
            lag = (r[0] - r[1]).days
            rec = {
                "interval": r[0].isoformat(), "oldest": r[1].isoformat(),
                "newest": r[2].isoformat(), "rows": int(r[3]), "lag_days": lag,
                "lag_intervals": sum(1 for d in intervals if r[1] < d <= r[0]),
                "stale": lag > usual,
            }  # fmt: skip
            if r[0] in in_scope:
                days.append(rec)
            elif r[0] > end and rec["stale"]:
                later.append(rec)
        if days:
            out["payload_dates"].append(
                {"column": col, "usual_lag_days": usual, "days": days, "later": later}
            )
    load_rows(con, out, rel, columns, time_col, start, end, dialect)
    if keys and all(k in columns for k in keys):
        q = duplicates_query(rel, time_col, keys, start, end)
        try:
            rows = con.execute(q.sql(dialect)).fetchall()
        except Exception as e:  # noqa: BLE001 - evidence is best effort: say why it is missing
            out["duplicates_error"] = str(e).splitlines()[0]
        else:
            by_load: dict[str, list[dict[str, Any]]] = {}
            for rec in out.get("rows_by_load", []):
                by_load.setdefault(rec["interval"], []).append(rec)
            out["duplicates"] = [
                {
                    "interval": r[0].isoformat(),
                    "rows": int(r[1]),
                    "distinct": int(r[2]),
                    "keys": list(keys),
                    "loads": by_load.get(r[0].isoformat(), []),
                }  # fmt: skip
                for r in rows
                if int(r[1]) > int(r[2])
            ]
    return out


def load_rows(
    con: Any,
    out: dict[str, Any],
    rel: Relation,
    columns: dict[str, str],
    time_col: str,
    start: date,
    end: date,
    dialect: str,
) -> None:
    """``out["rows_by_load"]``: the scope's rows per interval and load, with the load's time."""
    load_col = next((c for c in LOAD_ID_COLUMNS if c in columns), None)
    if load_col is None:
        return
    at_col = next((c for c in LOADED_AT_COLUMNS if c in columns), None)
    if at_col is None and load_col != "_dlt_load_id":
        return
    q = rows_by_load_query(rel, time_col, load_col, at_col, start, end)
    try:
        rows = con.execute(q.sql(dialect)).fetchall()
    except Exception as e:  # noqa: BLE001 - a missing _dlt_loads table: no load times
        out["rows_by_load_error"] = str(e).splitlines()[0]
        return
    out["rows_by_load"] = [
        {"interval": r[0].isoformat(), "load_id": r[1], "at": _iso(r[2]), "rows": int(r[3])}
        for r in rows
    ]
    if not out.get("loads"):  # no dlt load records: the loads as the rows say them
        loads: dict[Any, dict[str, Any]] = {}
        for rec in out["rows_by_load"]:
            ld = loads.setdefault(rec["load_id"], {
                "load_id": rec["load_id"], "status": None, "succeeded": None, "at": rec["at"],
                "first": rec["interval"], "last": rec["interval"], "rows": 0,
            })  # fmt: skip
            ld["first"] = min(ld["first"], rec["interval"])
            ld["last"] = max(ld["last"], rec["interval"])
            ld["rows"] += rec["rows"]
        out["loads"] = sorted(loads.values(), key=lambda ld: str(ld["at"]))


def cause_sentence(ev: dict[str, Any], job: str) -> str | None:
    """The cause in words, from :func:`source_evidence` (None when nothing stands out)."""
    parts: list[str] = []
    stale = [(p["column"], d) for p in ev.get("payload_dates", []) for d in p["days"] if d["stale"]]
    loads = ev.get("loads") or []
    if loads:
        ok = [ld for ld in loads if ld["succeeded"]]
        when = ", ".join(f"load {ld['load_id']} at {str(ld['at'])[:19]}" for ld in loads[:3])
        if all(ld["succeeded"] is None for ld in loads):
            parts.append(f"{job} wrote these rows ({when})")
        elif len(ok) == len(loads):
            parts.append(f"{job} ran and succeeded ({when}; status 0)")
        else:
            parts.append(f"{job} reported failed loads ({when})")
    if stale:
        col = stale[0][0]
        olds = sorted({d["oldest"] for _, d in stale})
        days = [d["interval"] for _, d in stale]
        parts.append(
            f"the payload's own {col} is {', '.join(_wd(o) for o in olds)} for "
            f"{', '.join(_wd(d) for d in days)}: the source re-served old data"
        )
    if not parts:
        return None
    return "; ".join(parts) + "."


def _wd(iso: str) -> str:
    d = date.fromisoformat(iso)
    return f"{iso} ({d.strftime('%a')})"
