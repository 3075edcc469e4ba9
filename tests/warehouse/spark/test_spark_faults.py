"""The run's fault tests on a real Spark, through the CLI: a SQL error mid-graph (SQLMesh's
model fails on Spark, the dbt-spark model reading it is skipped, the independent ones build;
fixed, the rerun builds only what is left), and a run SIGKILLed while a dbt-spark model runs
(the journal marks it interrupted, the lock is free, the next run finishes the rest)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.warehouse.spark.spark_support import splice

from splice.warehouse.spark.local_server import LocalSpark

# one row, after a sleep on the Spark side of $SPLICE_TEST_SLOW_MS (dbt-spark has no Python
# models over Spark Connect; java_method reaches Thread.sleep from SQL). Before it sleeps it
# sets the server JVM's system property $SPLICE_TEST_SLOW_MARK (an argument of the sleep, so
# evaluated first): the test sees the query running on the server, not only dbt starting it.
SLOW_MODEL = """with d as (select max(order_date) as last_day from {{ ref('fct_daily') }})
select last_day,
       java_method('java.lang.Thread', 'sleep',
                   cast({{ env_var('SPLICE_TEST_SLOW_MS', '0') }} as bigint)
                   + 0 * length(coalesce(java_method('java.lang.System', 'setProperty',
                       '{{ env_var('SPLICE_TEST_SLOW_MARK', 'splice.test.slow') }}', 'on'), '')))
         as slept
from d
"""
RATES = Path("fx") / "models" / "daily_rates.sql"


def _built(report: dict[str, Any]) -> set[str]:
    return {n for n, r in report["nodes"].items() if r["status"] == "success"}


def _wait_on_server(remote: str, mark: str, proc: subprocess.Popen[str],
                    timeout: float = 120) -> None:  # fmt: skip
    """Until the slow model's query runs on the server (it set the JVM property ``mark``)."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(remote).create()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            row = session.sql(
                f"select java_method('java.lang.System', 'getProperty', '{mark}') as v"
            ).collect()[0]
            if row.v == "on":
                return
            time.sleep(0.5)
    finally:
        session.stop()
    raise AssertionError(f"the slow query never ran on the server ({mark} never set)")


def _wait_started(ws: Path, remote: str, node: str, proc: subprocess.Popen[str],
                  timeout: float = 300) -> None:  # fmt: skip
    """Until the running run's journal says ``node`` started (read through the CLI)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        runs = json.loads(splice(ws, remote, "runs", "--json").stdout or "[]")
        running = [r for r in runs if r["status"] == "running"]
        if running:
            shown = splice(ws, remote, "runs", "show", running[0]["run_id"], "--json")
            events = json.loads(shown.stdout).get("events", []) if shown.returncode == 0 else []
            if any(e["kind"] == "node_started" and e["node_id"] == node for e in events):
                return
        time.sleep(1)
    raise AssertionError(f"{node} never started")


def test_sql_error_mid_graph_on_spark_then_the_rerun_builds_what_is_left(
    shop: Path, spark_server: LocalSpark
) -> None:
    remote = spark_server.remote
    good = (shop / RATES).read_text()
    (shop / RATES).write_text(good.replace("rate_to_usd\n", "rate_to_usd, no_such_column AS x\n"))
    r = splice(shop, remote, "run", "--json", "--execution-time", "2026-09-04")
    assert r.returncode == 1, r.stderr + r.stdout
    assert "Traceback" not in r.stderr
    rep = json.loads(r.stdout)
    nodes = rep["nodes"]
    assert nodes["fx:fx.daily_rates"]["status"] == "failed"
    assert "no_such_column" in (nodes["fx:fx.daily_rates"]["message"] or "")
    # across the boundary: the dbt-spark model reading it is skipped, naming it
    assert nodes["shop:fct_daily_usd"]["status"] == "skipped"
    assert nodes["shop:fct_daily_usd"]["skipped_because"] == "fx:fx.daily_rates"
    assert {"shop:fct_daily", "shop:stg_orders"} <= _built(rep)  # independent: built

    (shop / RATES).write_text(good)
    again = splice(shop, remote, "run", "--json", "--execution-time", "2026-09-04")
    assert again.returncode == 0, again.stderr + again.stdout
    built = _built(json.loads(again.stdout))
    assert {"fx:fx.daily_rates", "shop:fct_daily_usd"} <= built
    assert "shop:fct_daily" not in built and "shop:stg_orders" not in built  # already done


def test_a_run_killed_on_spark_is_interrupted_and_the_next_run_finishes_it(
    shop: Path, spark_server: LocalSpark
) -> None:
    remote = spark_server.remote
    (shop / "shop" / "models" / "slow_close.sql").write_text(SLOW_MODEL)
    mark = f"splice.test.slow.{os.getpid()}.{time.time_ns()}"
    env = {**os.environ, "SPLICE_SPARK_REMOTE": remote, "SPLICE_TEST_SLOW_MS": "60000",
           "SPLICE_TEST_SLOW_MARK": mark}  # fmt: skip
    a = subprocess.Popen(
        [sys.executable, "-m", "splice", "-w", str(shop), "run", "--execution-time", "2026-09-05"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_started(shop, remote, "shop:slow_close", a)
        _wait_on_server(remote, mark, a)  # dbt started the model: now its query runs on Spark
    finally:
        a.send_signal(signal.SIGKILL)
        a.communicate(timeout=30)
    assert a.returncode == -signal.SIGKILL
    runs = json.loads(splice(shop, remote, "runs", "--json").stdout)
    (dead,) = [r for r in runs if r["pid"] == a.pid]
    assert dead["status"] == "interrupted"  # the journal noticed the dead holder

    c = splice(shop, remote, "run", "--json", "--execution-time", "2026-09-05")
    assert c.returncode == 0, c.stderr + c.stdout
    rep = json.loads(c.stdout)
    assert "shop:slow_close" in _built(rep)
    assert not any(n.startswith("fx:") for n in _built(rep))  # committed before the kill
    notes = " ".join(rep["notes"])
    assert f"pid {a.pid}" in notes and "that process is gone" in notes
    # its query was still running on the server (Spark outlives its client): interrupted
    # before this run built the same table again
    assert "Spark operation(s) a dead run left running" in notes
    assert "interrupted 0 " not in notes
