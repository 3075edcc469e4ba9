"""How Spark hashes rows and values for Splice's checksums (:mod:`splice.warehouse.rows`):
``XXHASH64`` of the row's columns, summed as ``DECIMAL(38, 0)``.

>>> print(row_hash("_row").sql("spark"))
CAST(XXHASH64(`_row`.*) AS DECIMAL(38, 0))
>>> print(value_hash(exp.column("v"), 16).sql("spark"))
PMOD(XXHASH64(v), 16)
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
