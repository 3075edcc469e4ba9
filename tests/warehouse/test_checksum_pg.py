"""Checksums Splice sends to a PostgreSQL warehouse: the same rows give the same checksum, a
changed row a different one (a real server on 127.0.0.1)."""

from __future__ import annotations

import psycopg

from splice.warehouse.rows import checksum_query, count_query


def _checksum(url: str, relation: str) -> tuple[int, str]:
    with psycopg.connect(url, autocommit=True) as con:
        row = con.execute(checksum_query(relation, None, None, None, "postgres")).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def test_checksum_is_stable_over_a_no_op_and_moves_on_a_change(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE TABLE fx (rate_date DATE, currency TEXT, rate NUMERIC)")
        con.execute(
            "INSERT INTO fx VALUES ('2026-09-28', 'EUR', 1.08), ('2026-09-29', 'EUR', 1.09)"
        )
    before = _checksum(pg_url, "public.fx")
    # an unqualified name resolves as PostgreSQL resolves it: schema public (not DuckDB's main)
    assert _checksum(pg_url, "fx") == before
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("UPDATE fx SET rate = rate")  # a no-op rewrite
    assert _checksum(pg_url, "public.fx") == before
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("UPDATE fx SET rate = 1.10 WHERE rate_date = '2026-09-29'")
        sql = count_query("public.fx", "rate_date", None, None, "postgres")
        assert con.execute(sql).fetchone() == (2,)
    after = _checksum(pg_url, "public.fx")
    assert after[0] == before[0] == 2
    assert after[1] != before[1]
