"""A directory that is itself a dbt or SQLMesh project, with no splice.toml, just works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import copy_fixture, plain, splice


def _dbt_deps(project: Path) -> None:
    """dbt 1.11 needs `dbt deps` even for a `local:` package (it links it into dbt_packages)."""
    from dbt.cli.main import dbtRunner

    res = dbtRunner().invoke(
        ["deps", "--project-dir", str(project), "--profiles-dir", str(project), "--quiet"]
    )
    assert res.success, res.exception


def test_splice_ls_inside_a_dbt_project(tmp_path: Path) -> None:
    root = copy_fixture("jaffle_dbt", tmp_path)
    _dbt_deps(root)
    res = splice("ls", "--json", cwd=root)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    records = {r["id"]: r for r in json.loads(res.stdout)}
    kinds = {r["kind"] for r in records.values()}
    assert kinds == {"model", "source", "seed", "snapshot", "test", "dashboard"}
    assert records["jaffle:customers"]["writes"] == "jaffle.marts.customers"
    assert records["jaffle:source:shop.orders"]["reads"] == ["jaffle.raw.orders"]
    assert records["jaffle:stg_payments"]["writes"] is None  # ephemeral
    assert records["jaffle:exposure:weekly_kpis"]["upstream"] == [
        "jaffle:customers",
        "jaffle:orders",
    ]
    # listing reads the project; it builds nothing and keeps no state
    assert not (root / "jaffle.duckdb").exists()
    assert not (root / ".splice" / "state.db").exists()


def test_splice_ls_inside_a_sqlmesh_project(tmp_path: Path) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path)
    res = splice("ls", "--select", "kind:model kind:audit", cwd=root)
    assert res.returncode == 0, res.stderr
    out = plain(res.stdout)
    for nid in (
        "shop_sqlmesh:staging.orders",
        "shop_sqlmesh:marts.customers",
        "shop_sqlmesh:marts.customer_tiers",
        "shop_sqlmesh:audit:staging.orders.accepted_range_2",
    ):
        assert nid in out
    assert "shop.staging.orders" in out  # the relation it writes
    assert "10 nodes" in out
    assert not (root / "shop.duckdb").exists()


def test_doctor_on_a_lone_project_named_with_workspace(tmp_path: Path) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path)
    res = splice("--workspace", str(root), "doctor", "--no-lineage", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr  # warnings only
    data = json.loads(res.stdout)
    assert data["errors"] == 0
    assert sorted((c["code"], c["node"]) for c in data["checks"]) == [
        ("SPL102", "shop_sqlmesh:raw.customers"),
        ("SPL102", "shop_sqlmesh:raw.orders"),
    ]
    assert not (tmp_path / "shop.duckdb").exists()
    assert not (root / ".splice" / "state.db").exists()


def test_doctor_text_shows_the_fix_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    from splice.cli.render import render_checks
    from splice.doctor.checks import Check

    fix = 'declare the job that loads it as [[ingestion]] in splice.toml (with writes = ["raw.x"])'
    render_checks([Check("SPL102", "warning", "p:source:raw.x", "p:source:raw.x reads x.", fix)])
    assert "[[ingestion]]" in capsys.readouterr().out
