"""SQLMesh and dbt-spark on a real Spark (Spark Connect, local[2]): `splice run` builds SQLMesh's
incremental fx.daily_rates through its Spark engine, then the dbt-spark models that read it;
`splice watch` measures the declared metrics with SQL sqlglot writes in Spark's dialect, pushed
down to Spark; a Spark that does not answer is one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.warehouse.spark.spark_support import splice

from splice.warehouse.spark.local_server import LocalSpark


def _points(ws: Path, remote: str, metric: str) -> dict[tuple[str, str], float]:
    got = json.loads(splice(ws, remote, "metrics", "show", metric, "--json").stdout)
    return {(p["interval"], s["series"]): p["value"] for s in got["series"] for p in s["points"]}


def test_splice_runs_sqlmesh_and_dbt_on_spark_and_watches(
    shop: Path, spark_server: LocalSpark
) -> None:
    remote = spark_server.remote
    ran = splice(shop, remote, "run", "--json", "--execution-time", "2026-09-04")
    assert ran.returncode == 0, ran.stderr + ran.stdout
    report = json.loads(ran.stdout)
    built = {n for n, r in report["nodes"].items() if r["status"] == "success"}
    assert report["ok"]
    assert {"fx:fx.daily_rates", "shop:fct_daily", "shop:fct_daily_usd", "shop:orders"} <= built
    graph = json.loads(splice(shop, remote, "ls", "--json").stdout)
    source = next(n for n in graph if n["id"] == "shop:source:fx.daily_rates")
    assert source["upstream"] == ["fx:fx.daily_rates"]  # the binding across tools, on Spark
    watched = splice(shop, remote, "watch", "--json")
    assert watched.returncode == 0, watched.stderr + watched.stdout
    revenue = _points(shop, remote, "revenue")
    assert revenue[("2026-09-02", "country=FR")] == pytest.approx(10.0)
    assert revenue[("2026-09-03", "country=DE")] == pytest.approx(40.0)
    usd_points = _points(shop, remote, "revenue_usd")
    # 2026-09-03: DE 40.00 EUR at 1.12, US 12.00 USD at 1.00
    assert usd_points[("2026-09-03", "(all)")] == pytest.approx(40.0 * 1.12 + 12.0)


def test_an_unreachable_spark_is_one_clear_line(
    shop: Path, spark_server: LocalSpark, tmp_path: Path
) -> None:
    """[warehouse] remote names a port nothing listens on (the tools' own configs still reach
    the server: Splice's connection is the one that fails)."""
    other = tmp_path / "shop"
    shutil.copytree(shop, other)
    toml = other / "splice.toml"
    toml.write_text(toml.read_text().replace(spark_server.remote, "sc://127.0.0.1:9"))
    r = splice(other, spark_server.remote, "watch")
    assert r.returncode == 2, r.stderr
    assert "cannot reach the Spark Connect server" in r.stderr and "[warehouse] remote" in r.stderr
    assert "Traceback" not in r.stderr and "JVM" not in r.stderr
    # doctor still diagnoses: the graph's checks and both projects on another Spark than
    # [warehouse], with the warehouse that does not answer as a check of its own
    doc = splice(other, spark_server.remote, "doctor", "--json")
    assert doc.returncode == 1 and doc.stdout.startswith("{"), doc.stderr + doc.stdout
    codes = [c["code"] for c in json.loads(doc.stdout)["checks"]]
    assert codes.count("SPL408") == 2 and codes.count("SPL409") == 1, codes
    assert "SPL301" in codes  # the graph loaded: its own checks were made


def test_a_project_naming_a_dead_spark_fails_at_once_and_doctor_says_where(
    shop: Path, spark_server: LocalSpark
) -> None:
    """SQLMesh connects its Spark gateway while loading the graph: a server that does not
    answer is named (project, file, key) at once, not after pyspark's minutes of retries."""
    dead = "sc://127.0.0.1:9"
    env = {**os.environ, "SPLICE_SPARK_REMOTE": dead}  # both projects' configs name it
    run = [sys.executable, "-m", "splice", "-w", str(shop)]
    listed = subprocess.run([*run, "ls"], env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 2, listed.stderr
    assert "project 'fx'" in listed.stderr and "fx/config.py" in listed.stderr
    assert "gateways.spark.connection.config.spark.remote" in listed.stderr
    assert "Traceback" not in listed.stderr
    doc = subprocess.run([*run, "doctor", "--json"], env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert doc.returncode == 1, doc.stderr
    checks = json.loads(doc.stdout)["checks"]
    unreachable = [c for c in checks if c["code"] == "SPL409"]
    assert len(unreachable) == 1 and dead in unreachable[0]["message"], checks
    mismatched = {c["message"].split("'")[1] for c in checks if c["code"] == "SPL408"}
    assert mismatched == {"fx", "shop"}, checks


def test_doctor_names_a_project_on_another_spark(
    shop: Path, spark_server: LocalSpark, tmp_path: Path
) -> None:
    """dbt-spark's profile names another Spark Connect server than [warehouse] remote."""
    other = tmp_path / "shop"
    shutil.copytree(shop, other)
    profiles = other / "shop" / "profiles.yml"
    profiles.write_text(profiles.read_text().replace(
        "\"{{ env_var('SPLICE_SPARK_REMOTE') }}\"", "sc://spark-b.internal:15002"))  # fmt: skip
    doc = splice(other, spark_server.remote, "doctor", "--json")
    assert doc.stdout.startswith("{"), doc.stderr + doc.stdout
    found = [c for c in json.loads(doc.stdout)["checks"] if c["code"] == "SPL408"]
    assert len(found) == 1 and "'shop'" in found[0]["message"], found
    msg = found[0]["message"]
    assert (
        "shop.outputs.prod.server_side_parameters.spark.remote is sc://spark-b.internal:15002"
        in msg
    )
    assert spark_server.remote in msg  # fx (SQLMesh) names the same server: not flagged
