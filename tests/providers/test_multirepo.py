"""SQLMesh's multi-repo setup (tests/fixtures/projects/multirepo): two SQLMesh projects with
their own `project:` names sharing one warehouse and state, repo_b reading repo_a's model.

After a plan, SQLMesh's Context of either repo also holds the other repo's models (read back
from the shared state): Splice must keep each project's nodes its own and join them by a
binding. Built once by hand with SQLMesh (each repo planned in its own directory, as SQLMesh's
docs describe) and once through `splice run`; the two warehouses must hold the same."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixture_projects import copy_fixture, cwd, splice_cli, tables_in

from splice.api import doctor, lineage, warehouses
from splice.workspace.core import Workspace

REPO_A = {"repo_a:bronze.orders"}
REPO_B = {"repo_b:silver.revenue_by_country"}


def splice(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return splice_cli(root, *args, columns=250)


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def by_hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace planned by hand: `sqlmesh plan` in repo_a, then in repo_b."""
    from splice.support.sqlmesh_import import import_sqlmesh

    Context = import_sqlmesh().Context
    root = copy_fixture("multirepo", tmp_path_factory.mktemp("hand"))
    for repo in ("repo_a", "repo_b"):
        with cwd(root / repo):
            ctx = Context(paths=".")
            try:
                ctx.plan("prod", auto_apply=True, no_prompts=True)
            finally:
                ctx.close()
    return root


@pytest.fixture(scope="module")
def through_splice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    root = copy_fixture("multirepo", tmp_path_factory.mktemp("splice"))
    first = splice(root, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    second = splice(root, "run")
    assert second.returncode == 0, second.stdout + second.stderr
    return root, first.stdout, second.stdout


def test_splice_builds_what_sqlmesh_builds_by_hand(
    by_hand: Path, through_splice: tuple[Path, str, str]
) -> None:
    root = through_splice[0]
    assert tables_in(root / "warehouse.duckdb") == tables_in(by_hand / "warehouse.duckdb")
    q = "SELECT * FROM silver.revenue_by_country ORDER BY country"
    assert rows(root / "warehouse.duckdb", q) == rows(by_hand / "warehouse.duckdb", q)
    assert rows(root / "warehouse.duckdb", q) == [("GB", 32.25, 2), ("US", 35.5, 1)]


def test_the_run_leaves_a_context_that_knows_the_other_repos_new_models(
    through_splice: tuple[Path, str, str],
) -> None:
    """repo_b's Context was loaded before repo_a's plan put bronze.orders in the shared state:
    planning with it again would count bronze.orders as removed. It is loaded again, so the
    no-op plan after the run is remembered and the second run builds nothing."""
    _, first, second = through_splice
    assert "2 built" in first
    assert "not remembered" not in first, first
    assert "0 built" in second and "reused without loading the tools" in second, second


def _assert_own_models_only(root: Path) -> None:
    with Workspace.open(root) as ws:
        g = ws.graph()
        by_project = {
            p: {n.id for n in g.nodes.values() if n.project == p} for p in ("repo_a", "repo_b")
        }
        assert by_project == {"repo_a": REPO_A, "repo_b": REPO_B}
        edges = {(e.upstream, e.downstream) for e in g.bindings}
        assert edges == {("repo_a:bronze.orders", "repo_b:silver.revenue_by_country")}
        assert g.parents("repo_b:silver.revenue_by_country") == {"repo_a:bronze.orders"}
        assert doctor(ws) == []
        res = lineage(ws, "repo_b:silver.revenue_by_country.revenue", direction="upstream")
        ups = {(h["node"], h["column"], h["kind"]) for h in res["upstream"]}
        assert ("repo_a:bronze.orders", "amount", "direct") in ups, res["upstream"]


def test_each_project_lists_only_its_own_models_after_a_run(
    through_splice: tuple[Path, str, str],
) -> None:
    _assert_own_models_only(through_splice[0])


def test_and_again_on_a_second_load(through_splice: tuple[Path, str, str]) -> None:
    _assert_own_models_only(through_splice[0])
    listed = splice(through_splice[0], "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = {r["id"] for r in json.loads(listed.stdout)}
    assert ids == REPO_A | REPO_B


def test_a_workspace_built_by_hand_loads_the_same(by_hand: Path) -> None:
    _assert_own_models_only(by_hand)


def test_both_projects_resolve_to_the_one_warehouse(through_splice: tuple[Path, str, str]) -> None:
    root = through_splice[0]
    with Workspace.open(root) as ws:
        locs = warehouses(ws)
    assert {p: (loc.kind, loc.path) for p, loc in locs.items()} == {
        "repo_a": ("file", str(root / "warehouse.duckdb")),
        "repo_b": ("file", str(root / "warehouse.duckdb")),
    }
    assert locs["repo_b"].config_file == str(root / "repo_b" / "config.yaml")
    assert locs["repo_b"].key == "gateways.local.connection.database"


def test_doctor_warns_when_the_shared_state_holds_a_project_no_splice_project_lists(
    by_hand: Path, tmp_path: Path
) -> None:
    import shutil

    root = tmp_path / "ws"
    shutil.copytree(
        by_hand,
        root,
        ignore=shutil.ignore_patterns(".splice", "splice-witness.json", ".cache", "logs"),
    )
    (root / "splice.toml").write_text(
        '[warehouse]\npath = "warehouse.duckdb"\n\n'
        '[[projects]]\nname = "repo_b"\nformat = "sqlmesh"\npath = "repo_b"\n'
    )
    with Workspace.open(root) as ws:
        assert set(ws.graph().nodes) == REPO_B
        checks = [c for c in doctor(ws, lineage=False) if c.code == "SPL404"]
    assert len(checks) == 1 and checks[0].severity == "warning"
    assert "'repo_a'" in checks[0].message and '"warehouse"."bronze"."orders"' in checks[0].message
    assert "[[projects]]" in checks[0].fix


def _change_an_order(root: Path) -> None:
    f = root / "repo_a" / "models" / "orders.sql"
    f.write_text(f.read_text().replace("35.5", "100.0"))


def test_a_breaking_change_in_repo_a_reaches_repo_b_as_sqlmesh_does_it_by_hand(
    by_hand: Path, tmp_path: Path
) -> None:
    """SQLMesh's plan of repo_a re-evaluates repo_b's model downstream (they share the state).
    Through Splice, the plan of repo_a's segment selects it too: left out, SQLMesh pointed
    repo_b's view at a table it never built and the run failed."""
    import shutil

    from splice.support.sqlmesh_import import import_sqlmesh

    hand = tmp_path / "hand"
    shutil.copytree(
        by_hand,
        hand,
        ignore=shutil.ignore_patterns(".splice", "splice-witness.json", ".cache", "logs"),
    )
    _change_an_order(hand)
    with cwd(hand / "repo_a"):
        ctx = import_sqlmesh().Context(paths=".")
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True)
        finally:
            ctx.close()

    root = copy_fixture("multirepo", tmp_path / "splice")
    assert splice(root, "run").returncode == 0
    _change_an_order(root)
    res = splice(root, "run")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "share SQLMesh's state" in res.stdout + res.stderr
    q = "SELECT * FROM silver.revenue_by_country ORDER BY country"
    assert rows(root / "warehouse.duckdb", q) == rows(hand / "warehouse.duckdb", q)
    assert rows(root / "warehouse.duckdb", q) == [("GB", 32.25, 2), ("US", 100.0, 1)]
    again = splice(root, "plan", "--fresh", "--json")
    assert again.returncode == 0, again.stderr
    decisions = json.loads(again.stdout)["decisions"]
    assert {d["action"] for d in decisions.values()} == {"reuse"}
    # read from SQLMesh's state without asking SQLMesh for a plan: each project compares only
    # its own models with the state (the other repo's models in its Context are not its own)
    assert {n: d["tool_view"].get("from_state") for n, d in decisions.items()} == {
        "repo_a:bronze.orders": True,
        "repo_b:silver.revenue_by_country": True,
    }


def _relative_paths(root: Path, **databases: str) -> None:
    """Each repo's config names its warehouse relative to the working directory."""
    for repo, database in databases.items():
        f = root / repo / "config.yaml"
        f.write_text(f.read_text().replace("../warehouse.duckdb", database))


def test_doctor_reports_repos_whose_relative_paths_resolve_to_two_files(tmp_path: Path) -> None:
    """repo_a's `database: warehouse.duckdb` and repo_b's `../repo_b/warehouse.duckdb` are two
    files from the repos' directories and from the workspace's: two SQLMesh states wherever
    SQLMesh runs; repo_b would never see repo_a's model."""
    root = copy_fixture("multirepo", tmp_path)
    _relative_paths(root, repo_a="warehouse.duckdb", repo_b="../repo_b/warehouse.duckdb")
    res = splice(root, "doctor", "--no-lineage", "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    (found,) = [c for c in json.loads(res.stdout)["checks"] if c["code"] == "SPL401"]
    assert str(root / "repo_a" / "warehouse.duckdb") in found["message"]
    assert str(root / "repo_b" / "warehouse.duckdb") in found["message"]
    assert str(root / "repo_b" / "config.yaml") in found["message"]
    # the run is refused before anything runs, naming the check and its fix (it used to fail
    # halfway, in repo_b: "sqlmesh._environments does not exist")
    run = splice(root, "run")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "refused before anything runs: SPL401:" in run.stderr
    assert "point both at one file" in run.stderr and "_environments" not in run.stderr
    assert tables_in(root / "repo_a" / "warehouse.duckdb") == {}  # nothing was built


def test_relative_paths_run_as_sqlmeshs_multi_project_cli_runs_them(tmp_path: Path) -> None:
    """SQLMesh's multi-repo example: both configs say `database: warehouse.duckdb`, relative.
    `sqlmesh -p repo_a -p repo_b plan` from the workspace directory resolves it there: one
    file, one state. Splice runs them there too: the same tables, no SPL401, and no
    "sqlmesh._environments does not exist" when repo_b runs."""
    from splice.support.sqlmesh_import import import_sqlmesh

    hand = copy_fixture("multirepo", tmp_path / "hand")
    _relative_paths(hand, repo_a="warehouse.duckdb", repo_b="warehouse.duckdb")
    with cwd(hand):  # as `sqlmesh -p repo_a -p repo_b plan` from the root
        ctx = import_sqlmesh().Context(paths=[str(hand / "repo_a"), str(hand / "repo_b")])
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True)
        finally:
            ctx.close()

    root = copy_fixture("multirepo", tmp_path / "splice")
    _relative_paths(root, repo_a="warehouse.duckdb", repo_b="warehouse.duckdb")
    doc = splice(root, "doctor", "--no-lineage", "--json")
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert json.loads(doc.stdout)["checks"] == []
    first = splice(root, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 built" in first.stdout
    second = splice(root, "run")
    assert second.returncode == 0 and "0 built" in second.stdout, second.stdout + second.stderr
    assert tables_in(root / "warehouse.duckdb") == tables_in(hand / "warehouse.duckdb")
    q = "SELECT * FROM silver.revenue_by_country ORDER BY country"
    assert rows(root / "warehouse.duckdb", q) == rows(hand / "warehouse.duckdb", q)
    assert rows(root / "warehouse.duckdb", q) == [("GB", 32.25, 2), ("US", 35.5, 1)]
    assert not list(root.glob("repo_*/*.duckdb"))  # nothing written beside the configs
    with Workspace.open(root) as ws:
        locs = warehouses(ws)
    assert {p: loc.path for p, loc in locs.items()} == {
        "repo_a": str(root / "warehouse.duckdb"),
        "repo_b": str(root / "warehouse.duckdb"),
    }


def test_doctor_reports_sqlmesh_projects_sharing_a_state_without_project_names(
    tmp_path: Path,
) -> None:
    """Without `project:` names, each repo's plan counts the other's models as removed: SQLMesh
    refuses repo_b's plan ("Removed ... are referenced"), by hand as through Splice."""
    root = copy_fixture("multirepo", tmp_path)
    for repo in ("repo_a", "repo_b"):
        f = root / repo / "config.yaml"
        f.write_text(f.read_text().replace(f"project: {repo}\n", ""))
    res = splice(root, "doctor", "--no-lineage", "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    (found,) = [c for c in json.loads(res.stdout)["checks"] if c["code"] == "SPL405"]
    for part in (
        str(root / "repo_a" / "config.yaml"),
        str(root / "repo_b" / "config.yaml"),
        str(root / "warehouse.duckdb"),
    ):
        assert part in found["message"]
    assert "project:" in found["fix"]
    # with the names (the fixture as it is) the same workspace is clean
    with Workspace.open(copy_fixture("multirepo", tmp_path / "named")) as ws:
        assert [c.code for c in doctor(ws, lineage=False)] == []
