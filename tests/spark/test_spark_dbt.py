"""A dbt-spark project on a real Spark (Spark Connect, local[2]): `splice run` builds it through
dbt-spark, `splice watch` measures its declared metric with SQL sqlglot writes in Spark's
dialect, pushed down to Spark; a Spark that does not answer is one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from splice.sparklocal import LocalSpark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "spark_shop"


def splice(ws: Path, remote: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPLICE_SPARK_REMOTE": remote}
    return subprocess.run([sys.executable, "-m", "splice", "-w", str(ws), *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def shop(spark_server: LocalSpark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("spark") / "shop"
    shutil.copytree(FIXTURE, ws)
    toml = ws / "splice.toml.tmpl"
    (ws / "splice.toml").write_text(toml.read_text().replace("__REMOTE__", spark_server.remote))
    toml.unlink()
    return ws


def test_splice_runs_dbt_spark_and_watches_on_spark(shop: Path, spark_server: LocalSpark) -> None:
    remote = spark_server.remote
    ran = splice(shop, remote, "run", "--json")
    assert ran.returncode == 0, ran.stderr + ran.stdout
    report = json.loads(ran.stdout)
    built = {n for n, r in report["nodes"].items() if r["status"] == "success"}
    assert report["ok"] and {"shop:fct_daily", "shop:stg_orders", "shop:orders"} <= built
    watched = splice(shop, remote, "watch", "--json")
    assert watched.returncode == 0, watched.stderr + watched.stdout
    got = json.loads(splice(shop, remote, "metrics", "show", "revenue", "--json").stdout)
    points = {(p["interval"], s["series"]): p["value"] for s in got["series"] for p in s["points"]}
    assert points[("2026-09-02", "country=FR")] == pytest.approx(10.0)
    assert points[("2026-09-03", "country=DE")] == pytest.approx(40.0)


def test_an_unreachable_spark_is_one_clear_line(shop: Path, tmp_path: Path) -> None:
    other = tmp_path / "shop"
    shutil.copytree(shop, other)
    toml = other / "splice.toml"
    toml.write_text(
        toml.read_text().replace('remote = "sc://127.0.0.1:', 'remote = "sc://127.0.0.1:1')
    )
    r = splice(other, "sc://127.0.0.1:9", "watch")
    assert r.returncode == 2, r.stderr
    assert "cannot reach the Spark Connect server" in r.stderr and "[warehouse] remote" in r.stderr
    assert "Traceback" not in r.stderr and "JVM" not in r.stderr
