"""How Spark hashes rows and values for Splice's checksums (:mod:`splice.warehouse.rows`):
``XXHASH64`` of the row's columns, summed as ``DECIMAL(38, 0)``.

>>> print(row_hash("_row").sql("spark"))
CAST(XXHASH64(`_row`.*) AS DECIMAL(38, 0))
>>> print(value_hash(exp.column("v"), 16).sql("spark"))
PMOD(XXHASH64(v), 16)
>>> print(key_hash([exp.column("k")]).sql("spark"))
HASH(k)
>>> print(round_significant(exp.column("x"), 2).sql("spark")[:60])
CASE WHEN ABS(x) < 1e-14 THEN ROUND(x, 16) WHEN ABS(x) < 1e-
"""

from __future__ import annotations

from sqlglot import exp


def row_hash(row: str) -> exp.Expr:
    """A 64-bit hash of the whole row aliased ``row`` (``XXHASH64(row.*)``), widened so that
    summing never overflows."""
    star = exp.Column(this=exp.Star(), table=exp.to_identifier(row, quoted=True))
    return exp.cast(exp.func("XXHASH64", star), exp.DataType.build("DECIMAL(38, 0)"))


def value_hash(text: exp.Expr, modulus: int) -> exp.Expr:
    """A hash in ``[0, modulus)`` of a text value."""
    return exp.func("PMOD", exp.func("XXHASH64", text), exp.Literal.number(modulus))


def key_hash(columns: list[exp.Expr]) -> exp.Expr:
    """A hash of a key's values (a review samples the rows whose hash is a multiple of N)."""
    return exp.func("HASH", *columns)


def round_significant(value: exp.Expr, digits: int) -> exp.Expr:
    """``value`` (a float) rounded to ``digits`` significant digits: Spark's ROUND takes a
    constant scale, so one branch per magnitude (0 and NULL left as they are by the caller)."""
    ifs = [
        exp.If(this=exp.LT(this=exp.Abs(this=value.copy()), expression=exp.Literal.number(
                   f"1e{m + 1}")),  # fmt: skip
               true=exp.Round(this=value.copy(), decimals=exp.Literal.number(digits - 1 - m)))
        for m in range(-15, 19)
    ]  # fmt: skip
    return exp.Case(ifs=ifs, default=value.copy())
