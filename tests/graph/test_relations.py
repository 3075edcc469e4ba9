"""Relation names read into normalised relations (splice.graph.relations)."""

from __future__ import annotations

import pytest


def test_plain_names_are_split_as_the_parser_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name of plain identifiers (each quoted or not) skips the SQL parser: the same answer
    in every dialect, and the parser still reads what is not plain (quotes that are strings,
    a dot inside quotes, unbalanced quotes)."""
    import re

    import splice.graph.relations as rel

    names = ["a", "a.b", "a.b.c", "Main.Foo_1", '"warehouse"."sm_int"."m_0042"', '"Q".b."C"',
             '"a"', '"a.b"', 'a."b', '"select".x', "raw.bookings"]  # fmt: skip
    dialects = ["duckdb", "snowflake", "bigquery", "postgres", "spark", "tsql", "trino", "mysql"]

    def answers() -> dict[tuple[str, str], object]:
        out: dict[tuple[str, str], object] = {}
        for n in names:
            for d in dialects:
                try:
                    out[(n, d)] = rel._parse.__wrapped__(n, d)
                except Exception as e:  # noqa: BLE001 - the parser's refusal is an answer too
                    out[(n, d)] = type(e).__name__
        return out

    fast = answers()
    monkeypatch.setattr(rel, "_PLAIN", re.compile(r"(?!)"))
    monkeypatch.setattr(rel, "_QUOTED", re.compile(r"(?!)"))
    assert fast == answers()
