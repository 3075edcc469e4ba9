"""Metrics of dbt's semantic layer (MetricFlow), watched by name: the demo's finance project
declares ``gmv``; splice.toml watches it with ``semantic = "gmv"``. Its per-day values are
MetricFlow's own (compared with the real ``mf query`` over the same warehouse), it is in the
stale-rates incident's blast radius, ``splice metrics discover`` lists what dbt declares, and a
metric that does not compile is one clear line (and a doctor finding), with nothing measured."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_cli
from splice.graph.model import Relation
from splice.watch.metrics import watch_specs
from splice.workspace.core import Workspace

BIN = Path(sys.executable).parent


def _points(root: Path, metric: str) -> dict[str, float]:
    con = sqlite3.connect(root / ".splice" / "state.db")
    try:
        rows = con.execute(
            "SELECT p.interval_start, p.value FROM watch_points p JOIN watch_series s "
            "USING (series_id) WHERE s.metric = ?",
            (metric,),
        ).fetchall()
    finally:
        con.close()
    return {str(d)[:10]: v for d, v in rows}


def _mf_query(project: Path, tmp: Path, metric: str) -> dict[str, float]:
    """``mf query`` (dbt-metricflow's CLI) run for real in a copy of the dbt project."""
    work = tmp / "mf_project"
    shutil.copytree(project, work, ignore=shutil.ignore_patterns("target", "logs"))
    env = {"DBT_PROFILES_DIR": str(work), "DO_NOT_TRACK": "1", "PATH": str(BIN)}
    parse = subprocess.run([str(BIN / "dbt"), "parse", "--profiles-dir", str(work)], cwd=work,
                           env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert parse.returncode == 0, parse.stdout[-2000:]
    out = tmp / "mf.csv"
    q = subprocess.run(
        [str(BIN / "mf"), "query", "--metrics", metric, "--group-by", "metric_time__day",
         "--csv", str(out)],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert q.returncode == 0 and out.exists(), q.stdout[-2000:] + q.stderr[-2000:]
    with out.open() as f:
        return {r["metric_time__day"][:10]: float(r[metric]) for r in csv.DictReader(f)}


def test_semantic_gmv_is_metricflows_own_number_and_in_the_incident(
    story_copy: Path, tmp_path: Path
) -> None:
    watched = _points(story_copy, "gmv_semantic")
    assert len(watched) >= 90  # the quarter, per day
    mf = _mf_query(story_copy / "finance", tmp_path, "gmv")
    assert set(watched) == set(mf)
    for day, v in mf.items():
        assert watched[day] == pytest.approx(v, rel=1e-9), day
    # the same number as the SQL metric on pricing's daily GMV, a day at a time
    sql = _points(story_copy, "gmv_usd")
    assert all(watched[d] == pytest.approx(sql[d], rel=1e-9) for d in sql)

    r = run_cli(["incident", "show", "INC-1", "--json"], cwd=story_copy)
    assert r.returncode == 0, r.stderr
    blast = json.loads(r.stdout)["diagnosis"]["blast_radius"]
    on = {m["name"]: m["node"] for m in blast["metrics"]}
    assert on["gmv_semantic"] == "finance:stg_gmv_daily"


def test_discover_lists_what_dbt_declares_and_what_watches_it(story_copy: Path) -> None:
    r = run_cli(["metrics", "discover", "--json"], cwd=story_copy)
    assert r.returncode == 0, r.stderr
    found = {m["name"]: m for m in json.loads(r.stdout)}
    assert set(found) == {"gmv", "bookings"}
    assert found["gmv"]["watched_by"] == ["gmv_semantic"]
    assert found["bookings"]["watched_by"] == []
    assert found["gmv"]["node"] == "finance:stg_gmv_daily"
    assert "gmv_day__currency_code" in found["gmv"]["dimensions"]
    text = run_cli(["metrics", "discover"], cwd=story_copy)
    assert text.returncode == 0
    assert 'semantic = "bookings"' in text.stdout  # the entry that would watch it


def test_group_by_and_relation_swap(story_copy: Path) -> None:
    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text().replace(
        'semantic = "gmv"\n', 'semantic = "gmv"\ngroup_by = ["gmv_day__currency_code"]\n'))  # fmt: skip
    with Workspace.open(story_copy) as ws:
        specs = {s.name: s for s in watch_specs(ws, lineage=False)}
        gmv = specs["gmv_semantic"]
        assert gmv.dimensions == ["gmv_day__currency_code"]
        assert gmv.time == "booking_date" and gmv.node_id == "finance:stg_gmv_daily"
        # a review measures the head's relation: the compiled query reads it instead
        head = dataclasses.replace(gmv, relation=Relation("warehouse", "finance_review",
                                                          "stg_gmv_daily"))  # fmt: skip
        assert "finance_review" in head.sql("duckdb")
        assert '"finance"."stg_gmv_daily"' not in head.sql("duckdb")
        # the semantic layer's calendar runs to 2027: no monitor on it
        assert not [s for s in specs.values() if "metricflow_time_spine" in s.node_id]
    r = run_cli(["watch", "--json"], cwd=story_copy)
    assert r.returncode == 0, r.stderr
    per = {d["gmv_day__currency_code"] for d in _series_dims(story_copy, "gmv_semantic") if d}
    assert len(per) == 30  # one series per booking currency


def _series_dims(root: Path, metric: str) -> list[dict[str, str]]:
    con = sqlite3.connect(root / ".splice" / "state.db")
    try:
        return [json.loads(r[0]) for r in con.execute(
            "SELECT dims FROM watch_series WHERE metric = ?", (metric,))]  # fmt: skip
    finally:
        con.close()


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ('semantic = "gmvv"', "no dbt or SQLMesh project declares a semantic metric 'gmvv'"),
        ('semantic = "gmv"\ngroup_by = ["channel"]', "has no dimension 'channel'"),
        ('semantic = "gmv"\nvalue = "sum(x)"', "remove value"),
    ],
)
def test_a_broken_semantic_metric_is_one_line_and_measures_nothing(
    story_copy: Path, entry: str, said: str
) -> None:
    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text().replace('semantic = "gmv"', entry, 1))
    before = _points(story_copy, "fx_rate")
    r = run_cli(["watch"], cwd=story_copy)
    assert r.returncode != 0
    assert said in r.stderr and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1
    assert _points(story_copy, "fx_rate") == before
    if "value" not in entry:
        d = run_cli(["doctor", "--no-lineage", "--json"], cwd=story_copy)
        assert d.returncode != 0
        codes = [c["code"] for c in json.loads(d.stdout)["checks"]]
        assert "SPL501" in codes


SQLMESH_METRIC = """METRIC (
  name gmv_pricing,
  expression SUM(marts.agg_gmv_daily.gmv_usd),
  description 'GMV in USD as pricing publishes it'
);
"""


def test_a_sqlmesh_metric_is_watched_through_sqlmeshs_rewriter(story_copy: Path) -> None:
    """A SQLMesh project's METRIC, watched by name: SQLMesh's metric rewriter expands it over
    the measure's model; its days equal the SQL metric on the same model, its dimension
    (the model's currency) splits it, and discover lists it with its project."""
    (story_copy / "pricing" / "metrics").mkdir(exist_ok=True)
    (story_copy / "pricing" / "metrics" / "gmv.sql").write_text(SQLMESH_METRIC)
    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text() + '\n[[metrics]]\nname = "gmv_pricing"\n'
                    'semantic = "gmv_pricing"\ngroup_by = ["currency"]\nowner = "pricing"\n')  # fmt: skip
    found = {m["name"]: m for m in json.loads(
        run_cli(["metrics", "discover", "--json"], cwd=story_copy).stdout)}  # fmt: skip
    assert found["gmv_pricing"]["project"] == "pricing"
    assert found["gmv_pricing"]["node"] == "pricing:marts.agg_gmv_daily"
    assert found["gmv_pricing"]["watched_by"] == ["gmv_pricing"]
    r = run_cli(["watch", "--json"], cwd=story_copy)
    assert r.returncode == 0, r.stderr[-2000:]
    spec = next(m for m in json.loads(r.stdout)["metrics"] if m["name"] == "gmv_pricing")
    assert "SUM(" in spec["sql"].upper() and "agg_gmv_daily" in spec["sql"]
    con = sqlite3.connect(story_copy / ".splice" / "state.db")
    try:
        per_day = dict(con.execute(
            "SELECT p.interval_start, SUM(p.value) FROM watch_points p JOIN watch_series s "
            "USING (series_id) WHERE s.metric = 'gmv_pricing' GROUP BY 1").fetchall())  # fmt: skip
        currencies = con.execute("SELECT COUNT(*) FROM watch_series WHERE metric = "
                                 "'gmv_pricing'").fetchone()[0]  # fmt: skip
    finally:
        con.close()
    assert currencies == 30
    sql = _points(story_copy, "gmv_usd")
    assert len(per_day) == len(sql)
    for day, v in sql.items():
        assert per_day[day] == pytest.approx(v, rel=1e-9), day
    bad = toml.read_text().replace('group_by = ["currency"]', 'group_by = ["nope"]')
    toml.write_text(bad)
    r = run_cli(["watch"], cwd=story_copy)
    assert r.returncode != 0 and "SQLMesh cannot expand metric 'gmv_pricing'" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_warm_doctor_says_the_same_without_compiling_again(story_copy: Path) -> None:
    """SPL501's verdict is kept per graph key: the second doctor imports no MetricFlow."""
    first = run_cli(["doctor", "--no-lineage", "--json"], cwd=story_copy)
    assert "SPL501" not in first.stdout
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('METRICFLOW', 'metricflow' in sys.modules))\n"
            "sys.argv = ['splice', 'doctor', '--no-lineage']\n"
            "from splice.__main__ import main\nmain()\n")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], cwd=story_copy, capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert "METRICFLOW False" in r.stdout, r.stdout[-1000:] + r.stderr[-1000:]
