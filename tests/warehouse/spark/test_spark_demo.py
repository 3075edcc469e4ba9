"""The demo's stale-rates story on a real Spark, end to end with the real tools: the rates and
bookings written by Spark, SQLMesh's Spark engine (its state in DuckDB), dbt-spark's session.

Built (from Monday 2026-08-17: six weeks of history, past the detectors' four, keep Spark's
share of the suite small), baselined, frozen, run on, watched, diagnosed, proposed (undo copied aside), approved,
applied (the reload a process of its own, then the restatement and the rebuild in the run's
Spark session), verified, with a receipt; then undone, back to exactly the frozen rows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from tests.story_support import assert_stale_rates_diagnosed

from splice.demo.story import tell_repair, tell_stale_rates
from splice.support.principals import Principal
from splice.warehouse.spark.local_server import LocalSpark

#: The story's first day on Spark (the DuckDB and PostgreSQL stories build the whole quarter).
START = date(2026, 8, 17)


@pytest.fixture(scope="module")
def spark_story(
    spark_server: LocalSpark, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    ws = tmp_path_factory.mktemp("spark_story") / "travel"
    # a business day: the vendor publishes rates for it, so its bookings convert
    told = tell_stale_rates(ws, start=START, warehouse="spark", warehouse_url=spark_server.remote)
    fixed = tell_repair(ws, told.incidents[0].incident_id)
    yield told, fixed, ws
    spark_server.drop_schemas()


def _gmv(remote: str) -> dict[str, float]:
    from pyspark.sql import SparkSession

    s = SparkSession.builder.remote(remote).create()
    try:
        s.sql("REFRESH TABLE marts.agg_gmv_daily").collect()
        rows = s.sql("SELECT booking_date, SUM(gmv_usd) FROM marts.agg_gmv_daily GROUP BY 1")
        return {str(d): float(v) for d, v in rows.collect()}
    finally:
        s.stop()


def test_the_incident_is_found_and_diagnosed_on_spark(spark_story: Any) -> None:
    told, _fixed, _ws = spark_story
    assert_stale_rates_diagnosed(told, "spark")
    # the Spark writer keeps no load records (dlt's _dlt_loads): its loads are known from
    # their rows, never reported as failed
    from splice.watch.report import incident_lines

    text = "\n".join(incident_lines(told.incidents[0]))
    assert "no load record (known from the rows it wrote)" in text and "(failed)" not in text


def test_the_repair_verifies_and_gives_the_clean_numbers(
    spark_story: Any, spark_server: LocalSpark, demo_build: Any
) -> None:
    """After the repair, GMV per day on Spark equals the clean DuckDB demo's within a cent."""
    import duckdb

    _told, fixed, _ws = spark_story
    applied = fixed.applied.as_dict()
    assert applied["proposal"]["status"] == "applied", applied
    assert applied["verification"]["summary"].startswith("verified:")
    kinds = [s["kind"] for s in applied["proposal"]["steps"]]
    assert kinds[0] == "reload" and "restate" in kinds and "rebuild" in kinds
    undo = applied["proposal"]["undo"]
    assert all(u["saved_to"].endswith(".parquet") for u in undo)
    assert {u["method"] for u in undo} == {"overwrite"}  # no transactions: said so
    con = duckdb.connect(str(demo_build.warehouse), read_only=True)
    try:
        clean = {str(d): float(v) for d, v in con.execute(
            "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily "
            "WHERE booking_date BETWEEN ? AND DATE '2026-09-30' GROUP BY 1", [START]
        ).fetchall()}  # fmt: skip
    finally:
        con.close()
    gmv = _gmv(spark_server.remote)
    assert gmv.keys() == clean.keys() and len(gmv) == (date(2026, 9, 30) - START).days + 1
    assert all(abs(gmv[d] - clean[d]) < 0.01 for d in clean), {
        d: (gmv[d], clean[d]) for d in clean if abs(gmv[d] - clean[d]) >= 0.01
    }


def test_a_noop_run_on_spark_opens_no_spark_session(spark_story: Any) -> None:
    """With nothing left to build, the second `splice run` reuses the remembered plan: SQLMesh's
    state is read in its own DuckDB file, and the run's Spark session is never opened (no
    Spark client is even imported)."""
    import json
    import subprocess
    import sys

    from splice.demo.layout import EXECUTION_TIME
    from splice.plan.memo import REUSED

    _told, _fixed, ws = spark_story
    when = EXECUTION_TIME.isoformat()
    first = subprocess.run([sys.executable, "-m", "splice", "-w", str(ws), "run",
                            "--execution-time", when], capture_output=True, text=True)  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    script = (
        "import json, sys\n"
        "from splice import api\n"
        f"with api.open_workspace({str(ws)!r}) as ws:\n"
        f"    r = api.run(ws, execution_time={when!r})\n"
        "print(json.dumps({'ok': r.ok, 'built': len(r.built), 'notes': r.notes,\n"
        "                  'spark': 'pyspark.sql.connect.session' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["ok"] and not said["built"], said
    assert any(REUSED in n for n in said["notes"]), said["notes"]
    assert not said["spark"], "a no-op run opened a Spark Connect client"


def test_undo_on_spark_puts_back_exactly_the_frozen_rows(spark_story: Any) -> None:
    from splice import api
    from splice.repair.undo import check_unchanged

    _told, fixed, ws = spark_story
    p = fixed.proposal
    owner = Principal.of("maria", kind="person", auth="cli-as")
    with api.open_workspace(ws) as w:
        undone = api.undo(w, p.proposal_id, principal=owner)
        assert undone.status == "undone"
        check_unchanged(w, undone.undo)  # every relation's checksum is the captured one again
