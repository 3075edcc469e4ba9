"""splice doctor on a PostgreSQL workspace: every tool's config must name the server and
database of [warehouse]; when one does not, the check names the file, the key and both values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.cli_runner import run_cli

from splice.demo import write_workspace
from splice.demo.pg import PgTarget, write_configs


@pytest.fixture
def pg_workspace(tmp_path: Path) -> Path:
    """The demo's files pointed at a PostgreSQL (nothing is built: doctor reads configs)."""
    ws = tmp_path / "travel"
    write_workspace(ws)
    write_configs(ws, PgTarget("127.0.0.1", 5432, "splice", "wh", password="pw"))
    return ws


def _doctor(ws: Path) -> tuple[int, list[dict[str, str]]]:
    r = run_cli(["-w", str(ws), "doctor", "--no-lineage", "--json"])
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(r.stdout)["checks"]


def test_consistent_configs_pass(pg_workspace: Path) -> None:
    code, checks = _doctor(pg_workspace)
    assert [c for c in checks if c["code"] in ("SPL406", "SPL407")] == []


def test_a_profile_on_another_port_names_the_key_and_both_values(pg_workspace: Path) -> None:
    prof = pg_workspace / "finance" / "profiles.yml"
    prof.write_text(prof.read_text().replace("port: 5432", "port: 5433", 1))
    code, checks = _doctor(pg_workspace)
    found = [c for c in checks if c["code"] == "SPL406"]
    assert code == 1 and len(found) == 1
    msg = found[0]["message"]
    assert "project 'finance'" in msg and "finance.outputs.prod.port is 5433" in msg
    assert "[warehouse] port is 5432" in msg and "pw" not in msg


def test_a_gateway_on_another_database_is_named(pg_workspace: Path) -> None:
    cfg = pg_workspace / "pricing" / "config.py"
    cfg.write_text(cfg.read_text().replace("database='wh'", "database='other'"))
    _code, checks = _doctor(pg_workspace)
    msgs = [c["message"] for c in checks if c["code"] == "SPL406"]
    assert len(msgs) == 1 and "gateways.local.connection.database is other" in msgs[0]


def test_a_duckdb_project_in_a_postgres_workspace_is_refused(pg_workspace: Path) -> None:
    shutil.copy(
        Path(__file__).parent / "duckdb_profiles.yml", pg_workspace / "finance" / "profiles.yml"
    )
    code, checks = _doctor(pg_workspace)
    found = [c for c in checks if c["code"] == "SPL407"]
    assert (
        code == 1
        and len(found) == 1
        and "project 'finance' builds into DuckDB" in found[0]["message"]
    )
