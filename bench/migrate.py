"""Benchmark: moving a relation from DuckDB to PostgreSQL and checking its parity, as
``splice migrate`` does a wave, against the usual way by hand, in the same run.

    python bench/migrate.py                   # 2,000,000 rows, a throwaway local PostgreSQL
    python bench/migrate.py --rows 200000     # smaller
    python bench/migrate.py --json

The table has the shape of a raw bookings feed: a date, a timestamp, integers, text, a decimal
amount and a double rate (N rows over 365 days).

- **Splice** (``splice.migrate.copy`` + ``splice.migrate.parity``): the rows streamed from DuckDB
  into ``COPY ... FROM STDIN``, types transpiled by sqlglot, in one transaction; then the parity
  of both sides per day (rows, a checksum of the exact columns, the sums of the approximate
  ones), each warehouse read once.
- **By hand**: DuckDB ``COPY ... TO`` a CSV file, the table created by hand, psql-style
  ``COPY ... FROM STDIN`` of that file; then the check people usually make: ``count(*)`` and the
  sum of the amount on each side (no per-interval check, no checksum: a changed row of text or
  a swapped date passes it).

Prints wall seconds, rows per second and the peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DDL = """
CREATE SCHEMA raw;
CREATE TABLE raw.bookings AS
SELECT DATE '2026-01-01' + (i % 365)::INT AS booking_date,
       TIMESTAMP '2026-01-01 00:00:00' + to_seconds(i % 31536000) AS booked_at,
       i AS booking_id, (i % 5000) AS customer_id,
       'C' || (i % 30) AS currency, CASE WHEN i % 4 = 0 THEN 'web' ELSE 'app' END AS channel,
       ((i % 100000) * 1.37)::DECIMAL(18, 4) AS amount, 1.0 / (1 + i % 30) AS rate
FROM range({rows}) r(i)
"""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import duckdb
    import psycopg

    from splice.migrate.copy import copy_relation
    from splice.migrate.model import Moved
    from splice.migrate.parity import compare_relation
    from splice.warehouse.postgres.local_server import LocalPostgres

    base = Path(tempfile.mkdtemp(prefix="splice-bench-migrate-"))
    base.chmod(0o755)
    src = duckdb.connect(str(base / "src.duckdb"))
    src.execute(DDL.format(rows=args.rows))
    out: dict[str, object] = {"rows": args.rows}
    with LocalPostgres(base / "pg", password="bench") as pg:
        url = pg.create_database("bench")
        with psycopg.connect(url, autocommit=True) as dest:
            t0 = time.perf_counter()
            copied = copy_relation(src, "duckdb", dest, "postgres", "raw.bookings")
            t1 = time.perf_counter()
            checks = compare_relation(src, "duckdb", dest, "postgres",
                                      Moved("x", "raw.bookings", "booking_date"), 0.0001, 1e-6)  # fmt: skip
            t2 = time.perf_counter()
            assert copied == args.rows and all(c.ok for c in checks), checks
            out["splice"] = {"copy_s": round(t1 - t0, 2), "parity_s": round(t2 - t1, 2),
                             "total_s": round(t2 - t0, 2),
                             "rows_per_s": round(args.rows / (t2 - t0)),
                             "checks": [f"{c.kind}: {c.detail}" for c in checks]}  # fmt: skip
            out["peak_rss_mb_after_splice"] = round(peak_mb())
            # by hand: CSV out of DuckDB, COPY into PostgreSQL, counts and a sum
            dest.execute(b"DROP SCHEMA raw CASCADE")
            csv = base / "bookings.csv"
            t0 = time.perf_counter()
            src.execute(f"COPY raw.bookings TO '{csv}' (HEADER, DELIMITER ',')")
            dest.execute(b"CREATE SCHEMA raw; CREATE TABLE raw.bookings (booking_date date, "
                         b"booked_at timestamp, booking_id bigint, customer_id bigint, "
                         b"currency text, channel text, amount numeric(18,4), "
                         b"rate double precision)")  # fmt: skip
            with (
                dest.cursor() as cur,
                csv.open("rb") as f,
                cur.copy(b"COPY raw.bookings FROM STDIN (FORMAT CSV, HEADER)") as copy,
            ):
                while chunk := f.read(1 << 20):
                    copy.write(chunk)
            t1 = time.perf_counter()
            a = src.execute("SELECT count(*), sum(amount) FROM raw.bookings").fetchone()
            b = dest.execute(b"SELECT count(*), sum(amount) FROM raw.bookings").fetchone()
            t2 = time.perf_counter()
            assert a is not None and b is not None and a[0] == b[0]
            out["by_hand"] = {"copy_s": round(t1 - t0, 2), "check_s": round(t2 - t1, 3),
                              "total_s": round(t2 - t0, 2),
                              "rows_per_s": round(args.rows / (t2 - t0)),
                              "checks": ["count(*) and sum(amount) over the whole table"]}  # fmt: skip
    out["peak_rss_mb"] = round(peak_mb())
    if args.json:
        print(json.dumps(out, indent=2))
        return
    s, h = out["splice"], out["by_hand"]  # type: ignore[index]
    print(f"{args.rows:,} rows, DuckDB -> PostgreSQL")
    print(
        f"  splice (copy + parity per day): copy {s['copy_s']} s, parity {s['parity_s']} s, "  # type: ignore[index]
        f"total {s['total_s']} s ({s['rows_per_s']:,} rows/s)"
    )  # type: ignore[index]
    print(
        f"  by hand (CSV + COPY, count and one sum): copy {h['copy_s']} s, check {h['check_s']} s, "  # type: ignore[index]
        f"total {h['total_s']} s ({h['rows_per_s']:,} rows/s)"
    )  # type: ignore[index]
    print(
        f"  splice / by hand: {s['total_s'] / h['total_s']:.2f}x; peak RSS {out['peak_rss_mb']} MB "  # type: ignore[index]
        f"({out['peak_rss_mb_after_splice']} MB after the splice part)"
    )


if __name__ == "__main__":
    main()
