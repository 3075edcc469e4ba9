"""`splice run` on versioned_dbt, a lone dbt project (no splice.toml) whose profile's default
target is not called prod, compared with `dbt build` run by hand; the missing-target error
of a workspace; the reason a skipped node gives."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixture_projects import copy_fixture, cwd, tables_in
from tests.cli_runner import run_cli

from splice.run.report import RunReport
from splice.workspace.core import Workspace

V1, V2 = "shopv:dim_customers.v1", "shopv:dim_customers.v2"


def splice_cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPLICE_WORKSPACE", "SPLICE_TARGET")}
    env.update(NO_COLOR="1", DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    return run_cli(args, cwd=root, env=env)


def contents(db: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]]:
    """schema.table -> (columns with types, every row sorted), for every user table/view."""
    out = {}
    with duckdb.connect(str(db), read_only=True) as con:
        for cat, schema, name in sorted(tables_in(db)):
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_catalog = ? AND table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position",
                [cat, schema, name],
            ).fetchall()
            rows = con.execute(f'SELECT * FROM "{cat}"."{schema}"."{name}" ORDER BY ALL').fetchall()
            out[f"{schema}.{name}"] = (cols, rows)
    return out


@pytest.fixture(scope="module")
def spliced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """versioned_dbt built by `splice run --json` (the CLI, in the project directory)."""
    root = copy_fixture("versioned_dbt", tmp_path_factory.mktemp("spliced"))
    res = splice_cli("run", "--json", root=root)
    assert res.returncode == 0, res.stderr
    return root, json.loads(res.stdout)


def test_splice_run_builds_what_dbt_build_builds(
    spliced: tuple[Path, dict[str, Any]], shopv_dir: Path
) -> None:
    root, report = spliced
    assert report["ok"], report
    by_hand = contents(shopv_dir / "shopv.duckdb")
    assert {"main.dim_customers_v1", "main.dim_customers_v2", "main.fct_orders"} <= set(by_hand)
    assert contents(root / "shopv.duckdb") == by_hand  # same tables, columns and rows
    # every version built as its own node, and the unit test ran (dbt build runs it)
    assert {report["nodes"][v]["status"] for v in (V1, V2)} == {"success"}
    unit = "shopv:unit_test:customer_revenue.revenue_sums_orders_per_customer"
    assert report["checks"][unit]["status"] == "pass"
    assert report["checks"]["shopv:not_null_dim_customers_v1_customer_id"]["status"] == "pass"


def test_an_ephemeral_model_is_reported_as_inlined_never_failed(
    spliced: tuple[Path, dict[str, Any]],
) -> None:
    root, report = spliced
    eph = report["nodes"]["shopv:stg_orders"]
    assert eph["status"] == "ephemeral" and "inlined" in eph["message"]
    assert "shopv:stg_orders" not in report["failed_nodes"]
    assert report["counts"]["success"] == 8  # seeds and tables: the ephemeral is not one
    assert report["counts"]["ephemeral"] == 1 and "failed" not in report["counts"]
    journal = splice_cli("runs", "show", report["run_id"], "--json", root=root)
    events = json.loads(journal.stdout)["events"]
    (fin,) = [
        e for e in events if e["kind"] == "node_finished" and e["node_id"] == "shopv:stg_orders"
    ]
    assert fin["status"] == "ephemeral"
    # recorded, so the next plan reuses it (and its readers) instead of retrying it forever
    plan = json.loads(splice_cli("plan", "--json", "--fresh", root=root).stdout)
    actions = {n: d["action"] for n, d in plan["decisions"].items()}
    assert actions["shopv:stg_orders"] == "reuse" and set(actions.values()) == {"reuse"}


def test_a_lone_dbt_project_prints_the_target_dbt_really_ran(
    spliced: tuple[Path, dict[str, Any]],
) -> None:
    root, report = spliced
    # the profile's default target is `local`: that is what dbt ran, and what Splice says
    assert report["target"] == "local" and report["environments"] == {"shopv": "local"}
    assert [s["environment"] for s in report["segments"]] == ["local"]
    plan_text = splice_cli("plan", "--fresh", root=root).stdout
    assert "Plan for target local (shopv: local)" in plan_text and "prod" not in plan_text
    plan = json.loads(splice_cli("plan", "--json", root=root).stdout)
    assert plan["target"] == "local" and plan["environments"] == {"shopv": "local"}
    runs = json.loads(splice_cli("runs", "--json", root=root).stdout)
    assert [r["target"] for r in runs] == ["local"]
    runs_text = splice_cli("runs", root=root).stdout
    assert "local" in runs_text and "prod" not in runs_text
    # dbt itself wrote into the file the `local` output names
    assert (root / "shopv.duckdb").exists()


def test_a_profile_without_the_target_names_the_splice_toml_key(tmp_path: Path) -> None:
    copy_fixture("versioned_dbt", tmp_path, as_name="shop")
    (tmp_path / "splice.toml").write_text(
        '[warehouse]\npath = "shopv.duckdb"\n\n'
        '[[projects]]\nname = "shop"\nformat = "dbt"\npath = "shop"\n'
    )
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    for command in ("plan", "run"):
        res = splice_cli(command, root=tmp_path)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
        msg = lines[0]
        assert "profile 'shopv'" in msg and "has no target 'prod' (its targets: local)" in msg
        assert f"{tmp_path / 'splice.toml'}: projects[0].environments" in msg
        assert 'environments = { prod = "local" }' in msg
        assert str(tmp_path / "shop" / "profiles.yml") in msg
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert after == before  # nothing written: no state, no journal, no warehouse

    # mapped explicitly to a target the profile lacks: the message names that mapping
    (tmp_path / "splice.toml").write_text(
        (tmp_path / "splice.toml").read_text() + 'environments = { prod = "production" }\n'
    )
    res = splice_cli("run", root=tmp_path)
    assert res.returncode == 2
    assert "projects[0].environments" in res.stderr and "to it" in res.stderr
    assert "has no target 'production'" in res.stderr


def _run_broken(root: Path, *models: str) -> RunReport:
    from splice.api import run

    for m in models:
        (root / "models" / "marts" / f"{m}.sql").write_text("select no_such_column from range(1)\n")
    with cwd(root), Workspace.open(root) as ws:
        return run(ws)


def test_a_skipped_model_names_the_failed_model_it_depends_on(tmp_path: Path) -> None:
    # two branches meet in customer_revenue: dim_customers (v2) and fct_orders
    root = copy_fixture("versioned_dbt", tmp_path)
    report = _run_broken(root, "dim_customers_v1")
    assert report.nodes[V1].status == "failed"
    legacy = report.nodes["shopv:legacy_customer_report"]
    assert legacy.status == "skipped" and legacy.skipped_because == V1
    # the other branch never depended on v1: built
    assert report.nodes["shopv:customer_revenue"].status == "success"
    assert report.nodes[V2].status == "success"


def test_a_node_below_two_failures_names_both(tmp_path: Path) -> None:
    root = copy_fixture("versioned_dbt", tmp_path)
    report = _run_broken(root, "dim_customers_v2", "fct_orders")
    rev = report.nodes["shopv:customer_revenue"]
    assert rev.status == "skipped"
    assert rev.skipped_because == f"{V2}, shopv:fct_orders"
    assert report.nodes["shopv:legacy_customer_report"].status == "success"


def test_a_failing_unit_test_fails_its_model(tmp_path: Path) -> None:
    root = copy_fixture("versioned_dbt", tmp_path)
    schema = root / "models" / "marts" / "schema.yml"
    schema.write_text(schema.read_text().replace("revenue: 4.0", "revenue: 5.0"))
    from splice.api import run

    with cwd(root), Workspace.open(root) as ws:
        report = run(ws)
    unit = "shopv:unit_test:customer_revenue.revenue_sums_orders_per_customer"
    assert report.checks[unit].status == "fail"
    rev = report.nodes["shopv:customer_revenue"]
    assert rev.status == "failed" and unit in (rev.message or "")
    assert not report.ok


def test_across_projects_a_skipped_node_names_the_failures_on_its_own_paths(
    tmp_path: Path,
) -> None:
    # shop (versioned_dbt) and a second dbt project, report, reading two of shop's tables
    copy_fixture("versioned_dbt", tmp_path, as_name="shop")
    report_dir = tmp_path / "report"
    (report_dir / "models").mkdir(parents=True)
    (report_dir / "dbt_project.yml").write_text(
        "name: report\nversion: '1.0.0'\nconfig-version: 2\nprofile: report\n"
        "flags:\n  send_anonymous_usage_stats: false\n"
        "models:\n  report:\n    +materialized: table\n    +schema: report\n"
    )
    (report_dir / "profiles.yml").write_text(
        "report:\n  target: local\n  outputs:\n    local:\n      type: duckdb\n"
        "      path: shopv.duckdb\n      schema: main\n      threads: 1\n"
    )
    (report_dir / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: shop\n    schema: main\n    tables:\n"
        "      - name: legacy_customer_report\n      - name: customer_revenue\n"
    )
    (report_dir / "models" / "customer_board.sql").write_text(
        "select l.customer_id, l.full_name, r.revenue\n"
        "from {{ source('shop', 'legacy_customer_report') }} as l\n"
        "join {{ source('shop', 'customer_revenue') }} as r using (customer_id)\n"
    )
    (report_dir / "models" / "revenue_board.sql").write_text(
        "select * from {{ source('shop', 'customer_revenue') }}\n"
    )
    (tmp_path / "splice.toml").write_text(
        '[warehouse]\npath = "shopv.duckdb"\n\n'
        '[[projects]]\nname = "shop"\nformat = "dbt"\npath = "shop"\n'
        'environments = { prod = "local" }\n\n'
        '[[projects]]\nname = "report"\nformat = "dbt"\npath = "report"\n'
        'environments = { prod = "local" }\n'
    )
    for m in ("dim_customers_v1", "fct_orders"):
        (tmp_path / "shop" / "models" / "marts" / f"{m}.sql").write_text(
            "select no_such_column from range(1)\n"
        )
    from splice.api import run

    with cwd(tmp_path), Workspace.open(tmp_path) as ws:
        report = run(ws)
    assert report.environments == {"shop": "local", "report": "local"}
    board, revenue = report.nodes["report:customer_board"], report.nodes["report:revenue_board"]
    assert board.status == revenue.status == "skipped"
    # customer_board reads both branches: each failure on its paths; revenue_board only one
    assert board.skipped_because == "shop:dim_customers.v1, shop:fct_orders"
    assert revenue.skipped_because == "shop:fct_orders"
    assert board.message == "skipped: shop:dim_customers.v1, shop:fct_orders failed upstream"


def test_a_selected_version_builds_alone_with_its_own_relation(tmp_path: Path) -> None:
    from splice.api import run

    root = copy_fixture("versioned_dbt", tmp_path)
    with cwd(root), Workspace.open(root) as ws:
        report = run(ws, "+dim_customers.v1+", full=True)
    assert report.ok, report.to_dict()
    assert set(report.nodes) == {"shopv:raw_customers", V1, "shopv:legacy_customer_report"}
    assert set(report.checks) == {
        "shopv:not_null_dim_customers_v1_customer_id",
        "shopv:unique_dim_customers_v1_customer_id",
    }
    # dbt built exactly v1 (its own relation), not v2 and nothing downstream of v2
    assert {k[2] for k in tables_in(root / "shopv.duckdb")} == {
        "raw_customers",
        "dim_customers_v1",
        "legacy_customer_report",
    }


def test_a_lone_project_run_with_another_target_runs_that_output_or_says_which_exist(
    tmp_path: Path,
) -> None:
    root = copy_fixture("versioned_dbt", tmp_path)
    res = splice_cli("--target", "prod", "run", root=root)
    assert res.returncode == 2
    assert "has no target 'prod' (its targets: local)" in res.stderr
    assert "pass --target with one of: local" in res.stderr
    assert not (root / ".splice" / "state.db").exists() and not (root / "shopv.duckdb").exists()
