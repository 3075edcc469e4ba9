"""The undo on a real Spark: rows copied aside and put back exactly, without transactions.

SQLMesh's incremental fx.daily_rates is partitioned by its time column on Spark, so its undo is
a partition overwrite (and a partition the saved rows lack is dropped); dbt-spark's
fct_daily_usd is a plain Parquet table, so it is rebuilt through a staging table. The restore
test before approval writes nothing the repair touches."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from tests.warehouse.spark.spark_support import splice

from splice.errors import RepairError
from splice.repair.undo import capture, check_unchanged, restore, verify_restorable
from splice.warehouse.spark.local_server import LocalSpark
from splice.workspace.core import Workspace


@pytest.fixture(scope="module")
def session(spark_server: LocalSpark) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    s = SparkSession.builder.remote(spark_server.remote).create()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def built(shop: Path, spark_server: LocalSpark) -> Path:
    ran = splice(shop, spark_server.remote, "run", "--execution-time", "2026-09-04")
    assert ran.returncode == 0, ran.stderr + ran.stdout
    return shop


def _rows(session: Any, relation: str) -> list[tuple[Any, ...]]:
    session.sql(f"REFRESH TABLE {relation}").collect()  # another session rewrote its files
    return sorted(tuple(r) for r in session.sql(f"SELECT * FROM {relation}").collect())


def _tables(session: Any, schema: str) -> list[str]:
    return [r.tableName for r in session.sql(f"SHOW TABLES IN {schema}").collect()
            if not r.isTemporary]  # fmt: skip


def test_undo_on_spark_restores_partitions_and_whole_tables_exactly(
    built: Path, spark_server: LocalSpark, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPLICE_SPARK_REMOTE", spark_server.remote)
    physical = next(t for t in _tables(session, "sqlmesh__fx") if t.startswith("fx__daily_rates"))
    rates = f"spark_catalog.sqlmesh__fx.{physical}"
    usd = "spark_catalog.shop.fct_daily_usd"
    partitions = {r[0] for r in session.sql(f"SHOW PARTITIONS {rates}").collect()}
    assert "rate_date=2026-09-03" in partitions  # partitioned by its time column, as SQLMesh does
    before_rates, before_usd = _rows(session, rates), _rows(session, usd)
    targets = [
        ("fx:fx.daily_rates", rates, "rate_date", date(2026, 9, 3), date(2026, 9, 4)),
        ("shop:fct_daily_usd", usd, None, None, None),
    ]
    with Workspace.open(built) as ws:
        entries = capture(ws, "PR-T", targets)
        assert [e.rows for e in entries] == [2, 3]  # 09-03's two rates (09-04 not built); 3 days
        assert all(Path(ws.root / e.saved_to).suffix == ".parquet" for e in entries)
        assert {e.method for e in entries} == {"overwrite"}  # no transactions: said so
        verify_restorable(ws, entries)
        # the restore test wrote nothing the repair touches, and left no scratch table behind
        assert _rows(session, rates) == before_rates and _rows(session, usd) == before_usd
        assert not [t for t in _tables(session, "sqlmesh__fx") + _tables(session, "shop")
                    if t.startswith("_splice_undo")]  # fmt: skip

        # what a bad repair would leave: 09-03 rewritten, a 09-04 partition that was not there,
        # the dbt table rebuilt with other numbers
        session.sql(f"INSERT OVERWRITE TABLE {rates} PARTITION (rate_date = '2026-09-03') "
                    "SELECT currency, rate_to_usd * 2 FROM VALUES ('EUR', 1.0D), ('GBP', 1.3D) "
                    "AS t(currency, rate_to_usd)").collect()  # fmt: skip
        session.sql(f"INSERT INTO {rates} PARTITION (rate_date = '2026-09-04') "
                    "VALUES ('EUR', 1.2D)").collect()  # fmt: skip
        session.sql(f"INSERT OVERWRITE TABLE {usd} VALUES (DATE'2026-09-02', 1.0D)").collect()
        assert _rows(session, rates) != before_rates
        with pytest.raises(RepairError, match="changed since the undo was taken"):
            check_unchanged(ws, entries)

        after = restore(ws, entries)
        assert after == [e.checksum for e in entries]
        check_unchanged(ws, entries)
    assert _rows(session, rates) == before_rates  # 09-01 and 09-02 untouched, 09-03 back
    assert _rows(session, usd) == before_usd
    partitions = {r[0] for r in session.sql(f"SHOW PARTITIONS {rates}").collect()}
    assert "rate_date=2026-09-04" not in partitions


def test_a_tampered_undo_file_restores_nothing_on_spark(
    built: Path, spark_server: LocalSpark, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPLICE_SPARK_REMOTE", spark_server.remote)
    import pyarrow as pa
    import pyarrow.parquet as pq

    usd = "spark_catalog.shop.fct_daily_usd"
    before = _rows(session, usd)
    with Workspace.open(built) as ws:
        (entry,) = capture(ws, "PR-X", [("shop:fct_daily_usd", usd, None, None, None)])
        path = ws.root / entry.saved_to
        saved = pq.read_table(path)
        forged = saved.set_column(1, "revenue_usd", pa.array([v * 10 for v in
                                                             saved.column(1).to_pylist()]))  # fmt: skip
        pq.write_table(forged, path)
        session.sql(f"INSERT OVERWRITE TABLE {usd} VALUES (DATE'2026-09-02', 0D)").collect()
        damaged = _rows(session, usd)
        with pytest.raises(RepairError, match="do not match what was copied"):
            restore(ws, [entry])
    assert _rows(session, usd) == damaged != before  # nothing was restored
