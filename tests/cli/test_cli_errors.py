"""Bad input at the CLI: each mistake is one red line on stderr that names the file, key or
node and says how to fix it; exit status 2; no traceback unless --debug; nothing written.

Each test runs `python -m splice.cli.main` in a subprocess on a copy of a fixture project.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import (
    RED_ERROR,
    assert_one_red_error_line,
    changes,
    copy_fixture,
    plain,
    snapshot,
    splice,
)

MALFORMED = '[workspace\nname = "ops"\n'


def _workspace(tmp_path: Path, toml: str) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "splice.toml").write_text(toml)
    return root


def test_malformed_toml(tmp_path: Path) -> None:
    root = _workspace(tmp_path, MALFORMED)
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(
        res, f"{root / 'splice.toml'}: not valid TOML", "line 1", "correct the syntax"
    )
    assert changes(before, snapshot(root), allow_tool_scratch=False) == []


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    root = _workspace(tmp_path, MALFORMED)
    res = splice("--debug", "ls", cwd=root)
    assert res.returncode == 2
    assert "Traceback (most recent call last)" in res.stderr
    assert "splice.errors.ConfigError" in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(RED_ERROR) and "not valid TOML" in last
    assert not (root / ".splice").exists()


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[warehouse]\npaht = "warehouse.duckdb"\n', "warehouse.paht"),
        (
            '[[projects]]\nname = "pricing"\nformat = "sqlmesh"\npath = "."\nprofile_dir = "."\n',
            "projects[0].profile_dir",
        ),
    ],
)
def test_unknown_key_names_the_file_and_the_key(tmp_path: Path, toml: str, key: str) -> None:
    root = _workspace(tmp_path, toml)
    before = snapshot(root)
    res = splice("graph", cwd=root)
    assert_one_red_error_line(
        res, f"{root / 'splice.toml'}: unknown key '{key}'", "correct its spelling"
    )
    assert changes(before, snapshot(root), allow_tool_scratch=False) == []


def test_missing_project_path(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path, '[[projects]]\nname = "pricing"\nformat = "sqlmesh"\npath = "pricing"\n'
    )
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(
        res,
        str(root / "splice.toml"),
        "projects[0].path",
        f"{root / 'pricing'}, which does not exist",
        "correct projects[0].path",
    )
    assert changes(before, snapshot(root), allow_tool_scratch=False) == []


def test_unknown_target_lists_the_targets(tmp_path: Path) -> None:
    root = copy_fixture("federated", tmp_path)
    before = snapshot(root)
    res = splice("--target", "staging", "ls", cwd=root)
    assert_one_red_error_line(res, "target 'staging' is not defined", "one of: dev, prod")
    assert changes(before, snapshot(root), allow_tool_scratch=False) == []


def test_a_directory_that_is_no_workspace(tmp_path: Path) -> None:
    res = splice("-w", str(tmp_path), "ls", cwd=tmp_path)
    assert_one_red_error_line(res, f"no splice.toml in {tmp_path}", "--workspace DIR")
    assert list(tmp_path.iterdir()) == []


def test_dbt_project_with_broken_jinja(tmp_path: Path) -> None:
    # federated's dbt project, opened on its own (no splice.toml: a workspace of one project)
    root = copy_fixture("federated", tmp_path) / "reporting"
    model = root / "models" / "marts" / "fct_reorder_alerts.sql"
    model.write_text(model.read_text().replace("ref('stg_stock_levels')", "ref('stg_stock_levels'"))
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(
        res,
        "dbt project 'reporting'",
        "failed to parse",
        "models/marts/fct_reorder_alerts.sql",
        "fix the file dbt names",
    )
    assert changes(before, snapshot(root), allow_tool_scratch=True) == []
    assert not (root / ".splice" / "state.db").exists()


def test_dbt_project_whose_packages_are_not_installed(tmp_path: Path) -> None:
    root = copy_fixture("jaffle_dbt", tmp_path)  # packages.yml lists a local package
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(res, "dbt project 'jaffle'", "dbt deps", f"run `dbt deps` in {root}")
    assert changes(before, snapshot(root), allow_tool_scratch=True) == []


def test_sqlmesh_config_error_names_the_config_file_and_key(tmp_path: Path) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path)
    cfg = root / "config.yaml"
    cfg.write_text(
        cfg.read_text().replace("      database: shop.duckdb", "      databse: shop.duckdb")
    )
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(
        res, f"SQLMesh project 'shop_sqlmesh' ({cfg})", "'databse'", "correct config.yaml"
    )
    assert changes(before, snapshot(root), allow_tool_scratch=True) == []
    assert not (root / "shop.duckdb").exists()


def test_sqlmesh_model_error_names_the_model_file(tmp_path: Path) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path)
    model = root / "models" / "staging" / "orders.sql"
    model.write_text(model.read_text().replace("time_column order_date", "time_colum order_date"))
    res = splice("ls", cwd=root)
    assert_one_red_error_line(res, "SQLMesh project 'shop_sqlmesh'", str(model), "time_column")


LOCKER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: DuckDB lets one process hold the file
print("locked", flush=True)
sys.stdin.read()  # hold it until the test closes our stdin
"""


def test_warehouse_locked_by_another_process(tmp_path: Path) -> None:
    """A SQLMesh project of a multi-repo setup (`project:` in its config) reads SQLMesh's state
    from the warehouse when it loads, so `splice ls` opens the file.  (Without `project:`
    neither dbt parse nor SQLMesh's load opens it: see tests/providers/test_federated.py.)"""
    root = copy_fixture("federated", tmp_path)
    warehouse = root / "warehouse.duckdb"
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        with (root / "inventory" / "config.yaml").open("a") as fh:
            fh.write("project: inventory\n")
        before = snapshot(root)
        res = splice("ls", cwd=root)
        assert_one_red_error_line(
            res,
            "SQLMesh project 'inventory'",
            f"the warehouse file {warehouse} is locked by another process (PID {locker.pid}).",
            "wait for the other process",
            "a retry may help",
        )
        assert changes(before, snapshot(root), allow_tool_scratch=True) == []
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        try:
            locker.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - only our own locker
            locker.kill()
            locker.wait()


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    res = splice("--help", cwd=tmp_path)
    assert res.returncode == 0
    for command in ("ls", "graph", "doctor", "lineage"):
        assert command in plain(res.stdout)
