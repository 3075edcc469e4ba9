"""How DuckDB hashes rows and values for Splice's checksums (:mod:`splice.warehouse.rows`).

>>> print(row_hash("_row").sql("duckdb"))
CAST(HASH("_row") AS INT128)
>>> print(value_hash(exp.column("v"), 16).sql("duckdb"))
HASH(v) % 16
>>> print(key_hash([exp.column("k"), exp.column("d")]).sql("duckdb"))
HASH(k, d)
>>> print(round_significant(exp.column("x"), 10).sql("duckdb"))
ROUND(x, 9 - CAST(FLOOR(LOG(10, ABS(x))) AS INT))
"""

from __future__ import annotations

from sqlglot import exp


def row_hash(row: str) -> exp.Expr:
    """A 64-bit hash of the whole row aliased ``row``: DuckDB hashes the row itself, widened to
    ``INT128`` so that summing never overflows."""
    return exp.cast(exp.func("HASH", exp.column(row, quoted=True)), exp.DataType.build("INT128"))


def value_hash(text: exp.Expr, modulus: int) -> exp.Expr:
    """A hash in ``[0, modulus)`` of a text value."""
    return exp.Mod(this=exp.func("HASH", text), expression=exp.Literal.number(modulus))


def key_hash(columns: list[exp.Expr]) -> exp.Expr:
    """A hash of a key's values (a review samples the rows whose hash is a multiple of N)."""
    return exp.func("HASH", *columns)


def round_significant(value: exp.Expr, digits: int) -> exp.Expr:
    """``value`` (a float) rounded to ``digits`` significant digits (0 and NULL left as they
    are by the caller: LOG10 of 0 has no value)."""
    mag = exp.cast(
        exp.Floor(this=exp.func("LOG10", exp.Abs(this=value.copy()))), exp.DataType.build("INT")
    )
    return exp.Round(this=value, decimals=exp.Sub(this=exp.Literal.number(digits - 1),
                                                  expression=mag))  # fmt: skip
