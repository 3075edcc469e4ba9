"""Parity of a wave: the same rows in both targets, interval by interval.

For each relation the wave moved, both warehouses are read once (one ``SELECT`` of the columns,
streamed) and, per interval of the relation's time column (the whole table without one):

- **rows**: the row counts are equal;
- **checksum**: an order-independent checksum of the exact columns (integers, text, dates,
  times, booleans: each row's values made alike across engines, hashed, the hashes added
  modulo 2^64) is equal;
- **sums**: each approximate column (floating point, decimals, which two engines round their
  own way) sums within the stated tolerance: ``tolerance`` per row (0.0001: a rounding in the
  4th decimal) or ``relative`` of the sum (1e-6), whichever is larger;
- **schema**: the same columns, each of the same kind of type.

Then each declared **metric** on the wave's nodes is measured in both targets by its own
query, transpiled to each dialect, and compared per interval and dimension within the metric
relative tolerance (1e-6 by default: a cent in ten thousand dollars). A failed check names the relation (or metric) and the first intervals that differ.

>>> _canon(None), _canon(3), _canon("a"), _canon(True)
('\\x00', '3', 'a', 't')
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlglot import exp

from splice.migrate.copy import columns, stream
from splice.migrate.model import Check, Moved

MOD = 1 << 64
#: Kinds of column type: two targets agree on the kind, not the spelling.
KINDS = {
    "int": {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
            exp.DataType.Type.BIGINT, exp.DataType.Type.INT128, exp.DataType.Type.UTINYINT,
            exp.DataType.Type.USMALLINT, exp.DataType.Type.UINT, exp.DataType.Type.UBIGINT},
    "approx": {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE, exp.DataType.Type.DECIMAL},
    "text": {exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR,
             exp.DataType.Type.NVARCHAR, exp.DataType.Type.NCHAR},
    "date": {exp.DataType.Type.DATE},
    "time": {t for t in exp.DataType.Type if t.name.startswith("TIMESTAMP")}
    | {exp.DataType.Type.DATETIME},
    "bool": {exp.DataType.Type.BOOLEAN},
}  # fmt: skip


def kind_of(type_text: str, dialect: str) -> str:
    """
    >>> kind_of("DOUBLE PRECISION", "postgres"), kind_of("numeric(18,4)", "postgres")
    ('approx', 'approx')
    >>> kind_of("character varying", "postgres"), kind_of("BIGINT", "duckdb")
    ('text', 'int')
    """
    try:
        t = exp.DataType.build(type_text, dialect=dialect).this
    except Exception:  # noqa: BLE001 - an exotic type is compared by its name
        return type_text.lower()
    if t == exp.DataType.Type.DECIMAL and _scale(type_text) == 0:
        return "int"
    return next((k for k, types in KINDS.items() if t in types), str(t.value).lower())


def _scale(type_text: str) -> int | None:
    inside = type_text.partition("(")[2].rstrip(")")
    parts = [p.strip() for p in inside.split(",")] if inside else []
    return int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None


def _canon(v: Any) -> str:
    if v is None:
        return "\x00"
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, datetime):
        if v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(int(v)) if v == v.to_integral_value() else str(v.normalize())
    return str(v)


def _interval(v: Any) -> str:
    if v is None:
        return "(no time)"
    if isinstance(v, datetime):
        return v.date().isoformat()
    if isinstance(v, date):
        return v.isoformat()
    return str(v)[:10]


class Profile:
    """Per interval: rows, the checksum of the exact columns, the sums of the approximate."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.hash: dict[str, int] = {}
        self.sums: dict[str, list[float]] = {}


def _utc(v: Any) -> Any:
    if isinstance(v, datetime) and v.tzinfo is not None:
        return v.astimezone(UTC).replace(tzinfo=None)
    return v


def _int(v: Any) -> Any:
    return None if v is None else int(v)


#: How a value of each kind is made the same in both engines before it is hashed.
CONVERT = {"int": _int, "time": _utc}


def profile(con: Any, dialect: str, relation: str, time_column: str | None,
            exact: list[tuple[str, str]], approx: list[str]) -> Profile:  # fmt: skip
    """Read ``relation`` once and profile it (see the module docstring). ``exact``: (column,
    kind) pairs. Rows are hashed with Python's ``hash`` of the converted values: both targets
    are profiled in one process, so the hashes compare."""
    schema, name = relation.split(".", 1)
    cols = [*(c for c, _k in exact), *approx]
    selects = [exp.column(c, quoted=True) for c in cols]
    if time_column:
        selects.insert(0, exp.column(time_column, quoted=True))
    q = exp.select(*selects).from_(exp.table_(name, db=schema, quoted=True))
    p = Profile()
    off = 1 if time_column else 0
    conv = [(off + i, CONVERT[k]) for i, (_c, k) in enumerate(exact) if k in CONVERT]
    ex = slice(off, off + len(exact))
    ap = range(off + len(exact), off + len(exact) + len(approx))
    for batch in stream(con, q.sql(dialect=dialect), dialect, 50_000):
        for fetched in batch:
            key = _interval(fetched[0]) if time_column else "(all)"
            row: Any = fetched
            if conv:
                row = list(fetched)
                for i, f in conv:
                    row[i] = f(row[i])
            p.rows[key] = p.rows.get(key, 0) + 1
            p.hash[key] = (p.hash.get(key, 0) + hash(tuple(row[ex]))) % MOD
            if approx:
                sums = p.sums.get(key)
                if sums is None:
                    sums = p.sums[key] = [0.0] * len(approx)
                for j, i in enumerate(ap):
                    v = row[i]
                    if v is not None:
                        sums[j] += float(v)
    return p


def _close(a: float, b: float, rows: int, tolerance: float, relative: float) -> bool:
    """Within ``tolerance`` per row, or ``relative`` of the value, whichever is larger (a
    model that sums a thousand rounded rows into one carries their rounding).

    >>> _close(306362.8002, 306362.8007, 1, 0.0001, 1e-6), _close(10.0, 10.5, 1, 0.0001, 1e-6)
    (True, False)
    """
    return abs(a - b) <= max(tolerance * max(rows, 1), relative * max(abs(a), abs(b)))


def _first(keys: list[str], limit: int = 5) -> str:
    return ", ".join(keys[:limit]) + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "")


def compare_relation(src: Any, src_dialect: str, dest: Any, dest_dialect: str, m: Moved,
                     tolerance: float, relative: float) -> list[Check]:  # fmt: skip
    """The checks of one moved relation (schema, rows, checksum, sums)."""
    here = columns(src, m.source, src_dialect)
    there = columns(dest, m.relation, dest_dialect)
    if not there:
        return [Check("schema", m.relation, None, False,
                      f"{m.relation} is not in the destination warehouse")]  # fmt: skip
    kinds_here = {c.lower(): kind_of(t, src_dialect) for c, t in here}
    kinds_there = {c.lower(): kind_of(t, dest_dialect) for c, t in there}
    differ = sorted(c for c in kinds_here.keys() | kinds_there.keys()
                    if kinds_here.get(c) != kinds_there.get(c))  # fmt: skip
    out = [Check("schema", m.relation, None, not differ,
                 f"{len(here)} columns of the same kinds" if not differ else
                 "columns differ: " + ", ".join(f"{c} ({kinds_here.get(c, 'missing')} vs "
                                                f"{kinds_there.get(c, 'missing')})" for c in differ[:5]))]  # fmt: skip
    if differ:
        return out
    names = {c.lower(): c for c, _t in here}
    names_there = {c.lower(): c for c, _t in there}
    exact = [c for c in names if kinds_here[c] != "approx"]
    approx = [c for c in names if kinds_here[c] == "approx"]
    time_col = m.time_column.lower() if m.time_column and m.time_column.lower() in names else None
    a = profile(src, src_dialect, m.source, names.get(time_col) if time_col else None,
                [(names[c], kinds_here[c]) for c in exact], [names[c] for c in approx])  # fmt: skip
    b = profile(dest, dest_dialect, m.relation, names_there.get(time_col) if time_col else None,
                [(names_there[c], kinds_there[c]) for c in exact],
                [names_there[c] for c in approx])  # fmt: skip
    keys = sorted(a.rows.keys() | b.rows.keys())
    rows_bad = [k for k in keys if a.rows.get(k) != b.rows.get(k)]
    out.append(Check("rows", m.relation, rows_bad[0] if rows_bad else None, not rows_bad,
                     f"{sum(a.rows.values())} rows in {len(a.rows)} interval(s), equal" if not rows_bad
                     else f"row counts differ in {_first(rows_bad)} (first: {a.rows.get(rows_bad[0], 0)} "
                     f"vs {b.rows.get(rows_bad[0], 0)})"))  # fmt: skip
    hash_bad = [k for k in keys if a.hash.get(k) != b.hash.get(k)]
    out.append(Check("checksum", m.relation, hash_bad[0] if hash_bad else None, not hash_bad,
                     f"checksum of {len(exact)} exact column(s) equal in every interval" if not hash_bad
                     else f"rows differ (checksum of {', '.join(exact[:6])}) in {_first(hash_bad)}"))  # fmt: skip
    sums_bad: list[str] = []
    first = ""
    for k in keys:
        sa, sb = a.sums.get(k, [0.0] * len(approx)), b.sums.get(k, [0.0] * len(approx))
        for i, c in enumerate(approx):
            if not _close(sa[i], sb[i], a.rows.get(k, 0), tolerance, relative):
                if not sums_bad:
                    first = f"{c}: {sa[i]:.6f} vs {sb[i]:.6f}"
                sums_bad.append(k)
                break
    out.append(Check("sums", m.relation, sums_bad[0] if sums_bad else None, not sums_bad,
                     f"sums of {len(approx)} approximate column(s) within {tolerance:g} per row or "
                     f"{relative:g} of the sum"
                     if not sums_bad else f"sums differ in {_first(sums_bad)} (first: {first})"))  # fmt: skip
    return out


def _near(a: float, b: float, relative: float) -> bool:
    """
    >>> _near(306362.8002, 306362.8007, 1e-6), _near(306362.8, 306372.8, 1e-6)
    (True, False)
    """
    return abs(a - b) <= relative * max(abs(a), abs(b), 1.0)


def compare_metric(spec: Any, src_rows: list[tuple[Any, ...]], dest_rows: list[tuple[Any, ...]],
                   tolerance: float) -> Check:  # fmt: skip
    """A declared metric per interval and dimension, both targets within ``tolerance``
    (relative)."""
    dims = len(spec.dimensions)

    def index(rows: list[tuple[Any, ...]]) -> dict[tuple[str, ...], list[Any]]:
        return {tuple(_canon(v) if i else _interval(v) for i, v in enumerate(r[: 1 + dims])):
                list(r[1 + dims :]) for r in rows}  # fmt: skip

    a, b = index(src_rows), index(dest_rows)
    bad = []
    for k in sorted(a.keys() | b.keys()):
        va, vb = a.get(k), b.get(k)
        if va is None or vb is None or any(
            (x is None) != (y is None) or (x is not None and not _near(float(x), float(y), tolerance))
            for x, y in zip(va, vb, strict=False)
        ):  # fmt: skip
            bad.append((k, va, vb))
    if not bad:
        return Check(
            "metric", spec.name, None, True, f"{len(a)} interval(s) equal within {tolerance:g}"
        )
    k, va, vb = bad[0]
    where = k[0] + (f" ({', '.join(k[1:])})" if dims else "")
    return Check("metric", spec.name, k[0], False,
                 f"differs in {len(bad)} interval(s); first {where}: {va} vs {vb}")  # fmt: skip
