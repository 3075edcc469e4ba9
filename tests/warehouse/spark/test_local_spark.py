"""Splice's own local Spark server (the one ``splice demo --warehouse spark`` starts in the
workspace): its tables outlive a restart (the Hive catalog in a Derby metastore under its base
directory), and its queries run interpreted (small data) with the same answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.warehouse.spark.local_server import LocalSpark

pytestmark = pytest.mark.spark


def _session(server: LocalSpark):  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(server.remote).create()


def test_the_workspace_server_keeps_its_tables_across_a_restart(tmp_path: Path) -> None:
    base = tmp_path / "spark"
    with LocalSpark(base) as server:
        s = _session(server)
        try:
            assert s.conf.get("spark.sql.catalogImplementation") == "hive"
            assert s.conf.get("spark.sql.codegen.wholeStage") == "false"
            s.sql("CREATE SCHEMA shop").collect()
            s.sql("CREATE TABLE shop.orders (id INT, amount DECIMAL(10, 2), day DATE) "
                  "USING parquet PARTITIONED BY (day)").collect()  # fmt: skip
            s.sql("INSERT INTO shop.orders VALUES (1, 9.50, DATE '2026-09-28'), "
                  "(2, 20.25, DATE '2026-09-29'), (3, 1.25, DATE '2026-09-29')").collect()  # fmt: skip
        finally:
            s.stop()
        port = server.port
    # stopped: started again on the same base directory and port, the table is there
    with LocalSpark(base, port=port) as again:
        s = _session(again)
        try:
            rows = s.sql("SELECT day, COUNT(*), SUM(amount) FROM shop.orders "
                         "GROUP BY day ORDER BY day").collect()  # fmt: skip
            assert [(str(r[0]), r[1], float(r[2])) for r in rows] == [
                ("2026-09-28", 1, 9.5),
                ("2026-09-29", 2, 21.5),
            ]
            parts = [r[0] for r in s.sql("SHOW PARTITIONS shop.orders").collect()]
            assert parts == ["day=2026-09-28", "day=2026-09-29"]
        finally:
            s.stop()
