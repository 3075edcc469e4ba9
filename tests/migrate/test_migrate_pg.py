"""`splice migrate`: the stale-rates story moved from DuckDB to a real PostgreSQL in approved
waves (raw relations copied, SQLMesh's pricing and dbt's finance rebuilt there by their own
tools), every parity check green, and the story's incident diagnosed the same on both; then a
tampered row fails its wave's check, naming the relation and the interval, and the migration
resumes from that wave."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.cli_runner import run_cli

from splice.demo import relocate
from splice.demo.pg import add_pg_target
from splice.warehouse.postgres.local_server import LocalPostgres


def splice(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run_cli(["-w", str(ws), *args])
    if check and r.returncode != 0:
        raise AssertionError(
            f"splice {' '.join(args)} exited {r.returncode}:\n{r.stderr}\n{r.stdout}"
        )
    return r


@pytest.fixture(scope="module")
def moved(pg_server: LocalPostgres, stale_story: Any, tmp_path_factory: pytest.TempPathFactory,
          ) -> Iterator[tuple[Path, str, dict[str, Any]]]:  # fmt: skip
    """A copy of the told story (INC-1 open on DuckDB) with a target ``pg`` on PostgreSQL,
    planned by rita and moved wave by wave, each approved by an owner of its domain."""
    ws = tmp_path_factory.mktemp("migrate") / "travel"
    shutil.copytree(stale_story.build.workspace, ws, symlinks=True)
    relocate(ws)
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as con:
        con.execute(b"DROP DATABASE IF EXISTS warehouse WITH (FORCE)")
    url = pg_server.create_database("warehouse")  # the catalog the projects' sources name
    add_pg_target(ws, url)
    planned = json.loads(splice(ws, "migrate", "plan", "--from", "prod", "--to", "pg",
                                "--as", "rita", "--json").stdout)  # fmt: skip
    yield ws, url, planned


def _pg(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return con.execute(sql.encode()).fetchall()


def test_the_demo_moves_in_approved_waves_with_every_check_green(moved: Any) -> None:
    ws, url, planned = moved
    mid = planned["migration_id"]
    waves = [
        (w["name"], w["kind"], [r["relation"] for r in w["relations"]]) for w in planned["waves"]
    ]
    assert waves[0][:2] == ("raw", "copy") and {"raw.fx_rates", "raw.bookings"} <= set(waves[0][2])
    assert [w[:2] for w in waves[1:]] == [("pricing", "build"), ("finance", "build")]
    assert "marts.agg_gmv_daily" in waves[1][2] and "finance.fct_gmv_qtd" in waves[2][2]
    assert all(r["rows"] for w in planned["waves"] for r in w["relations"])

    first = splice(ws, "migrate", "run", mid, "--as", "maria", check=False)
    assert first.returncode == 2 and "not approved" in first.stderr
    own = splice(ws, "migrate", "approve", mid, "--wave", "1", "--as", "rita", check=False)
    assert own.returncode == 2 and "rita planned" in own.stderr
    stranger = splice(ws, "migrate", "approve", mid, "--wave", "2", "--as", "lee", check=False)
    assert stranger.returncode == 2 and "owns none of wave 2's domains (pricing)" in stranger.stderr

    for wave, owner in ((1, "maria"), (2, "sam"), (3, "lee")):
        splice(ws, "migrate", "approve", mid, "--wave", str(wave), "--as", owner)
        ran = json.loads(splice(ws, "migrate", "run", mid, "--as", "maria", "--json").stdout)
        done = ran["waves"][wave - 1]
        failed = [c for c in done["checks"] if not c["ok"]]
        assert done["status"] == "passed" and not failed, failed
        kinds = {c["kind"] for c in done["checks"]}
        assert {"schema", "rows", "checksum", "sums"} <= kinds
    status = json.loads(splice(ws, "migrate", "status", mid, "--json").stdout)
    assert status["status"] == "checked"
    metrics = {c["subject"] for w in status["waves"] for c in w["checks"] if c["kind"] == "metric"}
    assert {"gmv_usd", "fx_rate"} <= metrics
    # the rows are really there, built by the tools: SQLMesh's view, dbt's table
    assert _pg(url, "SELECT count(*) FROM marts.agg_gmv_daily")[0][0] > 0
    assert _pg(url, "SELECT count(*) FROM finance.fct_gmv_qtd")[0][0] > 0


def test_the_incident_is_diagnosed_the_same_on_both(moved: Any) -> None:
    ws, _url, _planned = moved
    splice(ws, "-t", "pg", "watch")

    def incident(target: str) -> dict[str, Any]:
        found = json.loads(splice(ws, "-t", target, "incidents", "--json").stdout)
        assert len(found) == 1, found
        return json.loads(splice(ws, "-t", target, "incident", "show", found[0]["id"],
                                 "--json").stdout)  # fmt: skip

    duck, pg = incident("prod"), incident("pg")
    for key in ("title", "origin", "first_interval", "last_interval"):
        assert duck[key] == pg[key], key
    assert duck["diagnosis"]["source"]["node"] == pg["diagnosis"]["source"]["node"]
    assert "as_of is 2026-09-25" in pg["diagnosis"]["cause"]
    scope = {n["node"]: n["ranges"] for n in pg["diagnosis"]["scope"]["nodes"]}
    assert scope == {n["node"]: n["ranges"] for n in duck["diagnosis"]["scope"]["nodes"]}


def test_a_tampered_row_fails_its_wave_and_the_migration_resumes(moved: Any) -> None:
    ws, url, planned = moved
    mid = planned["migration_id"]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(b"UPDATE raw.fx_rates SET rate_to_usd = rate_to_usd * 1.01 "
                    b"WHERE currency = 'EUR' AND rate_date = DATE '2026-09-02'")  # fmt: skip
    checked = splice(ws, "migrate", "check", mid, "--wave", "1", "--as", "maria", check=False)
    assert checked.returncode == 1
    assert "raw.fx_rates" in checked.stdout and "2026-09-02" in checked.stdout
    refused = splice(ws, "migrate", "complete", mid, "--as", "maria", check=False)
    assert refused.returncode == 2 and "wave 1 (raw)" in refused.stderr

    again = json.loads(splice(ws, "migrate", "run", mid, "--wave", "1", "--as", "maria",
                              "--json").stdout)  # fmt: skip
    assert again["waves"][0]["status"] == "passed"
    receipt = json.loads(splice(ws, "migrate", "complete", mid, "--as", "sam", "--json").stdout)
    assert receipt["status"] == "complete" and receipt["completed_by"]["name"] == "sam"
    assert [w["approved_by"]["name"] for w in receipt["waves"]] == ["maria", "sam", "lee"]
    assert all(c["ok"] for w in receipt["waves"] for c in w["checks"])
    log = json.loads(splice(ws, "audit-log", "show", "--json").stdout)
    kinds = [e["kind"] for e in log if e["proposal_id"] == mid]
    assert kinds[0] == "migrate-plan" and kinds[-1] == "migrate-complete"
    assert "migrate-check" in kinds and kinds.count("migrate-approve") == 3
    assert "intact" in splice(ws, "audit-log", "verify").stdout
