"""Where each project's warehouse is, resolved as its tool resolves it when run by hand in the
project directory, and what `splice doctor` says about it (SPL401-SPL403); SQLMesh projects
configured by config.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixture_projects import copy_fixture, cwd, splice_cli

from splice.api import doctor, warehouses
from splice.workspace.core import Workspace


def splice(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return splice_cli(root, *args, columns=400)


# -- two projects meant to share a warehouse, with relative paths --------------------------------
@pytest.fixture(scope="module")
def split_by_hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """split_warehouse run by hand, each tool in its project directory: SQLMesh plans into
    upstream/warehouse.duckdb; dbt opens downstream/warehouse.duckdb and finds no
    core.customers there."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner

    from splice.support.sqlmesh_import import import_sqlmesh

    root = copy_fixture("split_warehouse", tmp_path_factory.mktemp("split"))
    with cwd(root / "upstream"):
        ctx = import_sqlmesh().Context(paths=".")
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True)
        finally:
            ctx.close()
    with cwd(root / "downstream"):
        try:
            res = dbtRunner().invoke(["run", "--profiles-dir", ".", "--quiet"])
        finally:
            DuckDBConnectionManager.close_all_connections()
    assert not res.success  # the source is in the other file
    return root


def test_each_tool_by_hand_writes_where_splice_says_it_does(split_by_hand: Path) -> None:
    root = split_by_hand
    made = {p for p in root.rglob("*.duckdb")}
    assert made == {
        root / "upstream" / "warehouse.duckdb",
        root / "downstream" / "warehouse.duckdb",
    }
    with Workspace.open(root) as ws:
        locs = warehouses(ws)
    assert {p: Path(str(loc.path)) for p, loc in locs.items()} == {
        "upstream": root / "upstream" / "warehouse.duckdb",
        "downstream": root / "downstream" / "warehouse.duckdb",
    }
    assert (locs["upstream"].config_file, locs["upstream"].key) == (
        str(root / "upstream" / "config.yaml"),
        "gateways.local.connection.database",
    )
    assert (locs["downstream"].config_file, locs["downstream"].key) == (
        str(root / "downstream" / "profiles.yml"),
        "downstream.outputs.prod.path",
    )


def test_doctor_reports_projects_bound_across_two_warehouse_files(tmp_path: Path) -> None:
    root = copy_fixture("split_warehouse", tmp_path)
    res = splice(root, "doctor", "--no-lineage")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "SPL401" in res.stdout
    as_json = splice(root, "doctor", "--no-lineage", "--json")
    assert as_json.returncode == 1
    found = [c for c in json.loads(as_json.stdout)["checks"] if c["code"] == "SPL401"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    text = found[0]["message"]
    for part in (
        str(root / "upstream" / "warehouse.duckdb"),
        str(root / "downstream" / "warehouse.duckdb"),
        str(root / "upstream" / "config.yaml"),
        "gateways.local.connection.database",
        str(root / "downstream" / "profiles.yml"),
        "downstream.outputs.prod.path",
    ):
        assert part in text, (part, text)
    assert found[0]["node"] == "downstream:source:core.customers"
    # the fix points both at splice.toml's warehouse, relative to each project directory
    fix = found[0]["fix"]
    assert str(root / "warehouse.duckdb") in fix
    assert "gateways.local.connection.database in " + str(root / "upstream" / "config.yaml") in fix
    assert "downstream.outputs.prod.path in " + str(root / "downstream" / "profiles.yml") in fix
    assert fix.count("'../warehouse.duckdb'") == 2
    # each differs from splice.toml's [warehouse] path as well
    spl402 = [c for c in json.loads(as_json.stdout)["checks"] if c["code"] == "SPL402"]
    assert {c["message"].split("'")[1] for c in spl402} == {"upstream", "downstream"}
    assert all(str(root / "warehouse.duckdb") in c["message"] for c in spl402)


def test_pointing_both_at_one_file_clears_the_findings(tmp_path: Path) -> None:
    root = copy_fixture("split_warehouse", tmp_path)
    for f in (root / "upstream" / "config.yaml", root / "downstream" / "profiles.yml"):
        f.write_text(f.read_text().replace(" warehouse.duckdb", " ../warehouse.duckdb"))
    with Workspace.open(root) as ws:
        assert [c.code for c in doctor(ws, lineage=False)] == []


# -- in-memory warehouses ------------------------------------------------------------------------
SQLMESH_MEMORY = """\
gateways:
  local:
    connection:
      type: duckdb
{database}
default_gateway: local
model_defaults:
  dialect: duckdb
  start: '2024-01-01'
disable_anonymized_analytics: true
"""


def _sqlmesh_project(
    root: Path, config_yaml: str | None = None, config_py: str | None = None
) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "models" / "a.sql").write_text("MODEL (name core.a, kind FULL);\nSELECT 1 AS x\n")
    if config_yaml is not None:
        (root / "config.yaml").write_text(config_yaml)
    if config_py is not None:
        (root / "config.py").write_text(config_py)
    return root


@pytest.mark.parametrize(
    "database", ["      database: ':memory:'", ""], ids=["memory", "no-database"]
)
def test_doctor_warns_about_an_in_memory_sqlmesh_gateway(tmp_path: Path, database: str) -> None:
    root = _sqlmesh_project(tmp_path / "shop", SQLMESH_MEMORY.format(database=database))
    with Workspace.open(root) as ws:
        checks = [c for c in doctor(ws, lineage=False) if c.code == "SPL403"]
    assert len(checks) == 1 and checks[0].severity == "warning"
    assert str(root / "config.yaml") in checks[0].message
    assert "gateways.local.connection.database" in checks[0].fix
    assert str(root / "config.yaml") in checks[0].fix


DBT_PROJECT = """\
name: mem
version: '1.0'
profile: mem
config-version: 2
flags:
  send_anonymous_usage_stats: false
"""


@pytest.mark.parametrize("path", ["      path: ':memory:'\n", ""], ids=["memory", "no-path"])
def test_doctor_warns_about_an_in_memory_dbt_target(tmp_path: Path, path: str) -> None:
    root = tmp_path / "mem"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(DBT_PROJECT)
    (root / "models" / "a.sql").write_text("select 1 as x\n")
    (root / "profiles.yml").write_text(
        "mem:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n" + path
    )
    with Workspace.open(root) as ws:
        checks = [c for c in doctor(ws, lineage=False) if c.code == "SPL403"]
    assert len(checks) == 1
    assert str(root / "profiles.yml") in checks[0].message
    assert "mem.outputs.dev.path" in checks[0].fix


# -- SQLMesh configured by config.py ---------------------------------------------------------------
CONFIG_PY = """\
from sqlmesh.core.config import Config, DuckDBConnectionConfig, GatewayConfig, ModelDefaultsConfig

config = Config(
    gateways={"local": GatewayConfig(connection=DuckDBConnectionConfig(database="shop.duckdb"))},
    default_gateway="local",
    model_defaults=ModelDefaultsConfig(dialect="duckdb", start="2024-01-01", cron="@daily"),
    disable_anonymized_analytics=True,
)
"""


def test_a_lone_sqlmesh_project_configured_by_config_py_is_a_workspace(tmp_path: Path) -> None:
    root = _sqlmesh_project(tmp_path / "shop", config_py=CONFIG_PY)
    res = splice(root, "run")
    assert res.returncode == 0, res.stdout + res.stderr
    # SQLMesh resolved shop.duckdb against the project directory, where Splice ran it
    assert (root / "shop.duckdb").exists()
    listed = splice(root, "ls", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == ["shop:core.a"]
    # the workspace's warehouse is the project's own file: the plan memo reads SQLMesh's state
    # there, so a second run with nothing new reuses the plan without loading SQLMesh
    again = splice(root, "run")
    assert again.returncode == 0
    assert "reused without loading the tools" in again.stdout + again.stderr
    with Workspace.open(root) as ws:
        assert ws.warehouse_path == root / "shop.duckdb"
        loc = warehouses(ws)["shop"]
        assert [c.code for c in doctor(ws, lineage=False)] == []
    assert (loc.kind, loc.path, loc.config_file, loc.key) == (
        "file",
        str(root / "shop.duckdb"),
        str(root / "config.py"),
        "gateways.local.connection.database",
    )


def test_a_config_py_project_listed_in_splice_toml(tmp_path: Path) -> None:
    _sqlmesh_project(
        tmp_path / "shop", config_py=CONFIG_PY.replace('"shop.duckdb"', '"../warehouse.duckdb"')
    )
    (tmp_path / "splice.toml").write_text(
        '[warehouse]\npath = "warehouse.duckdb"\n\n'
        '[[projects]]\nname = "shop"\nformat = "sqlmesh"\npath = "shop"\n'
    )
    res = splice(tmp_path, "run")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "warehouse.duckdb").exists()
    with Workspace.open(tmp_path) as ws:
        assert set(ws.graph().nodes) == {"shop:core.a"}
        assert [c.code for c in doctor(ws, lineage=False)] == []


# -- the forms the tools accept ------------------------------------------------------------------
def test_sqlmesh_catalogs_default_connection_and_the_gateway_splice_toml_names(
    tmp_path: Path,
) -> None:
    from splice.providers.locations import sqlmesh_location
    from splice.support.sqlmesh_import import import_sqlmesh

    import_sqlmesh()
    from sqlmesh.core.config import Config, DuckDBConnectionConfig, GatewayConfig

    p = tmp_path / "proj"
    p.mkdir()
    cfg = Config(
        gateways={
            "local": GatewayConfig(
                connection=DuckDBConnectionConfig(catalogs={"wh": "../wh.duckdb", "x": "x.duckdb"})
            ),
            "other": GatewayConfig(),
        },
        default_gateway="local",
        default_connection=DuckDBConnectionConfig(database="/data/shared.duckdb"),
    )
    loc = sqlmesh_location("proj", cfg, p, None)
    assert (loc.kind, loc.path, loc.key) == (
        "file",
        str(tmp_path / "wh.duckdb"),
        "gateways.local.connection.catalogs.wh",
    )
    other = sqlmesh_location("proj", cfg, p, "other")
    assert (other.kind, other.path, other.key) == (
        "file",
        "/data/shared.duckdb",
        "default_connection.database",
    )


def test_a_dbt_path_from_an_env_var_resolves_as_dbt_renders_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from splice.providers.locations import dbt_location

    p = tmp_path / "proj"
    p.mkdir()
    (p / "dbt_project.yml").write_text("name: proj\nprofile: proj\n")
    (p / "profiles.yml").write_text(
        "proj:\n  outputs:\n    prod:\n      type: duckdb\n"
        "      path: \"{{ env_var('WH_PATH', 'fallback.duckdb') }}\"\n"
    )
    monkeypatch.setenv("WH_PATH", "../env.duckdb")
    loc = dbt_location("proj", p, p, "prod")
    assert loc is not None and (loc.kind, loc.path) == ("file", str(tmp_path / "env.duckdb"))
    monkeypatch.delenv("WH_PATH")
    loc = dbt_location("proj", p, p, "prod")
    assert loc is not None and loc.path == str(p / "fallback.duckdb")
    assert loc.key == "proj.outputs.prod.path"
