"""Copying a relation between two warehouses and checking its parity, on two real DuckDB files
(the PostgreSQL direction is tested with the whole story in tests/migrate_pg): every type comes
across, the checks pass, and a changed row, a lost row or a changed column type is named with
its interval."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import pytest

from splice.migrate.copy import copy_relation
from splice.migrate.model import Moved
from splice.migrate.parity import compare_relation

ROWS = """
CREATE SCHEMA raw;
CREATE TABLE raw.t (
    day DATE, "at" TIMESTAMP, at_tz TIMESTAMPTZ, n BIGINT, big HUGEINT, amount DECIMAL(18, 4),
    rate DOUBLE, label VARCHAR, flag BOOLEAN);
INSERT INTO raw.t
SELECT DATE '2026-09-01' + (i % 5)::INT, TIMESTAMP '2026-09-01 10:00:00' + to_seconds(i),
       TIMESTAMPTZ '2026-09-01 10:00:00+02' + to_seconds(i), i, i::HUGEINT * 1000000000000,
       (i * 1.2345)::DECIMAL(18, 4), i / 7.0, CASE WHEN i % 3 = 0 THEN NULL ELSE 'é-' || i END,
       i % 2 = 0
FROM range(1000) r(i);
"""


@pytest.fixture
def pair(tmp_path: Path) -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    src = duckdb.connect(str(tmp_path / "a.duckdb"))
    src.execute(ROWS)
    return src, duckdb.connect(str(tmp_path / "b.duckdb"))


def _checks(src, dest):  # type: ignore[no-untyped-def]
    return compare_relation(src, "duckdb", dest, "duckdb", Moved("ingestion:x", "raw.t", "day"),
                            0.0001, 1e-6)  # fmt: skip


def test_every_type_is_copied_and_every_check_passes(pair) -> None:  # type: ignore[no-untyped-def]
    src, dest = pair
    assert copy_relation(src, "duckdb", dest, "duckdb", "raw.t") == 1000
    checks = _checks(src, dest)
    assert [c.kind for c in checks] == ["schema", "rows", "checksum", "sums"]
    assert all(c.ok for c in checks), [c.detail for c in checks if not c.ok]
    assert dest.execute(
        "SELECT count(*) FILTER (WHERE label IS NULL), max(big) FROM raw.t"
    ).fetchone() == (334, 999_000_000_000_000)
    # copied again (a wave run after a fix): replaced, not appended
    copy_relation(src, "duckdb", dest, "duckdb", "raw.t")
    assert dest.execute("SELECT count(*) FROM raw.t").fetchone() == (1000,)


def test_a_changed_or_lost_row_is_named_with_its_interval(pair) -> None:  # type: ignore[no-untyped-def]
    src, dest = pair
    copy_relation(src, "duckdb", dest, "duckdb", "raw.t")
    dest.execute("UPDATE raw.t SET label = 'x' WHERE n = 13")  # day 2026-09-04
    bad = {c.kind: c for c in _checks(src, dest) if not c.ok}
    assert set(bad) == {"checksum"} and bad["checksum"].interval == "2026-09-04"
    assert "2026-09-04" in bad["checksum"].detail
    dest.execute("UPDATE raw.t SET label = 'é-13' WHERE n = 13")
    dest.execute("UPDATE raw.t SET rate = rate + 0.5 WHERE n = 14")  # day 2026-09-05
    bad = {c.kind: c for c in _checks(src, dest) if not c.ok}
    assert set(bad) == {"sums"} and bad["sums"].interval == str(date(2026, 9, 5))
    dest.execute("UPDATE raw.t SET rate = rate - 0.5 WHERE n = 14")
    dest.execute("DELETE FROM raw.t WHERE n = 20")  # day 2026-09-01
    bad = {c.kind: c for c in _checks(src, dest) if not c.ok}
    assert bad["rows"].interval == "2026-09-01" and "199 vs" not in bad["rows"].detail
    assert "200 vs 199" in bad["rows"].detail


def test_a_column_of_another_kind_fails_the_schema_check(pair) -> None:  # type: ignore[no-untyped-def]
    src, dest = pair
    copy_relation(src, "duckdb", dest, "duckdb", "raw.t")
    dest.execute("ALTER TABLE raw.t ALTER COLUMN n TYPE VARCHAR")
    (schema,) = _checks(src, dest)
    assert not schema.ok and "n (int vs text)" in schema.detail


def test_two_targets_on_one_warehouse_are_refused_and_nothing_is_dropped(fresh_demo: Path) -> None:
    """prod and dev write one DuckDB file: a copy of raw.fx_rates onto itself would drop it."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "splice", "-w", str(fresh_demo), "migrate", "plan",
                        "--from", "prod", "--to", "dev", "--as", "rita"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2 and "use the same warehouse" in r.stderr
    assert "[targets.dev.warehouse]" in r.stderr
    con = duckdb.connect(str(fresh_demo / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM raw.fx_rates").fetchone()[0] > 0
    finally:
        con.close()
