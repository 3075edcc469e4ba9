"""How DuckDB hashes rows and values for Splice's checksums (:mod:`splice.warehouse.rows`).

>>> print(row_hash("_row").sql("duckdb"))
CAST(HASH("_row") AS INT128)
>>> print(value_hash(exp.column("v"), 16).sql("duckdb"))
HASH(v) % 16
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
