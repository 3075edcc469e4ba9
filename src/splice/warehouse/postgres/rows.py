"""How PostgreSQL hashes rows and values for Splice's checksums (:mod:`splice.warehouse.rows`):
it has no row hash, so the row's text form is hashed (MD5) and its first bits read as a number.

>>> print(row_hash("_row").sql("postgres"))
CAST(CAST(CAST('x' || SUBSTRING(MD5(CAST("_row" AS TEXT)) FROM 1 FOR 16) AS BIT(64)) AS BIGINT) AS DECIMAL)
>>> print(value_hash(exp.column("v"), 2**52).sql("postgres"))
CAST(CAST('x' || SUBSTRING(MD5(v) FROM 1 FOR 13) AS BIT(52)) AS BIGINT)
>>> print(key_hash([exp.column("k"), exp.column("d")]).sql("postgres"))
ABS(HASHTEXT(CAST((k, d) AS TEXT)))
>>> print(round_significant(exp.column("x"), 10).sql("postgres"))
ROUND(CAST(x AS DECIMAL), 9 - CAST(FLOOR(LOG(10, ABS(CAST(x AS DECIMAL)))) AS INT))
"""

from __future__ import annotations

from sqlglot import exp


def _first_bits(text: exp.Expr, hex_digits: int) -> exp.Expr:
    """The first ``hex_digits`` hex digits of ``text``'s MD5, as a bit string."""
    md5 = exp.func("MD5", text)
    first = exp.Substring(this=md5, start=exp.Literal.number(1),
                          length=exp.Literal.number(hex_digits))  # fmt: skip
    return exp.cast(exp.DPipe(this=exp.Literal.string("x"), expression=first),
                    exp.DataType.build(f"BIT({4 * hex_digits})", dialect="postgres"))  # fmt: skip


def row_hash(row: str) -> exp.Expr:
    """A 64-bit hash of the whole row aliased ``row`` (the first 64 bits of the MD5 of its
    text form), summed as ``NUMERIC``."""
    text = exp.cast(exp.column(row, quoted=True), exp.DataType.build("TEXT"))
    bits = _first_bits(text, 16)
    return exp.cast(exp.cast(bits, exp.DataType.build("BIGINT")), exp.DataType.build("NUMERIC"))


def value_hash(text: exp.Expr, modulus: int) -> exp.Expr:
    """A hash in ``[0, modulus)`` of a text value, ``modulus`` a power of 16 (``2**52``: the
    first 13 hex digits of the MD5)."""
    digits = (modulus.bit_length() - 1 + 3) // 4
    if 2 ** (4 * digits) != modulus:
        raise ValueError(f"a PostgreSQL value hash takes a power of 16 as modulus, not {modulus}")
    return exp.cast(_first_bits(text, digits), exp.DataType.build("BIGINT"))


def key_hash(columns: list[exp.Expr]) -> exp.Expr:
    """A hash of a key's values (a review samples the rows whose hash is a multiple of N): the
    key's text form through ``HASHTEXT``, made positive."""
    text = exp.cast(exp.Tuple(expressions=columns), exp.DataType.build("TEXT"))
    return exp.Abs(this=exp.func("HASHTEXT", text))


def round_significant(value: exp.Expr, digits: int) -> exp.Expr:
    """``value`` (a float) rounded to ``digits`` significant digits; as NUMERIC, since
    ``ROUND(double precision, int)`` does not exist here (0 and NULL left as they are by the
    caller: LOG10 of 0 has no value)."""
    x = exp.cast(value, exp.DataType.build("DECIMAL"))  # unconstrained NUMERIC
    mag = exp.cast(
        exp.Floor(this=exp.func("LOG10", exp.Abs(this=x.copy()))), exp.DataType.build("INT")
    )
    return exp.Round(this=x, decimals=exp.Sub(this=exp.Literal.number(digits - 1),
                                              expression=mag))  # fmt: skip
