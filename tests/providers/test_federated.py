"""federated/: an ingestion job, a SQLMesh project (inventory) and a dbt project (reporting)
whose sources read inventory's prod views, and a declared dashboard, joined in one graph.

    load_stock -> inventory:raw.stock_movements -> stock.levels -> stock.reorder_points
    stock.levels ==declared==> reporting:source:inventory.levels
    stock.reorder_points ..matched..> reporting:source:inventory.reorder_points
    reporting:fct_reorder_alerts -> dashboards:ops_board
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_projects import Loaded, copy_fixture

from splice.doctor.checks import exit_status
from splice.errors import ConfigError
from splice.graph.relations import parse_relation
from splice.workspace.core import Workspace

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LEVELS = "inventory:stock.levels"
REORDER = "inventory:stock.reorder_points"
SRC_LEVELS = "reporting:source:inventory.levels"
SRC_REORDER = "reporting:source:inventory.reorder_points"


def _edge(loaded: Loaded, up: str, down: str):  # type: ignore[no-untyped-def]
    e = loaded.graph.edge(up, down)
    assert e is not None, f"no edge {up} -> {down}; bindings: {loaded.graph.bindings}"
    return e


def test_every_project_and_system_is_in_one_graph(federated: Loaded) -> None:
    by_project: dict[str, set[str]] = {}
    for n in federated.graph.nodes.values():
        by_project.setdefault(n.project, set()).add(n.kind)
    assert by_project == {
        "ingestion": {"ingestion"},
        "inventory": {"external", "model", "audit"},
        "reporting": {"source", "model", "test"},
        "dashboards": {"dashboard"},
    }


def test_a_declared_binding_joins_a_sqlmesh_view_to_a_dbt_source(federated: Loaded) -> None:
    e = _edge(federated, LEVELS, SRC_LEVELS)
    assert e.evidence == "declared"
    assert e.relation is not None and e.relation.key == "warehouse.stock.levels"


def test_a_matched_binding_joins_by_relation(federated: Loaded) -> None:
    e = _edge(federated, REORDER, SRC_REORDER)
    assert e.evidence == "matched"  # shown as inferred
    assert e.relation is not None and e.relation.key == "warehouse.stock.reorder_points"
    # the two tools spell the relation differently; normalised, they are the same
    src, model = federated.node(SRC_REORDER), federated.node(REORDER)
    assert src.reads == [model.writes]
    assert model.writes == parse_relation(str(model.meta["fqn"]))  # '"warehouse"."stock"."..."'
    assert sorted((e.upstream, e.downstream, e.evidence) for e in federated.graph.bindings) == [
        ("ingestion:load_stock", "inventory:raw.stock_movements", "matched"),
        (LEVELS, SRC_LEVELS, "declared"),
        (REORDER, SRC_REORDER, "matched"),
        ("reporting:fct_reorder_alerts", "dashboards:ops_board", "declared"),
    ]


def test_the_ingestion_job_writes_the_raw_relation_read_by_the_external_model(
    federated: Loaded,
) -> None:
    job = federated.node("ingestion:load_stock")
    assert (job.kind, job.tool, job.owner) == ("ingestion", "command", "logistics")
    # writes = ["raw.stock_movements"] in splice.toml: the catalog is the warehouse file's stem
    assert job.writes is not None and job.writes.key == "warehouse.raw.stock_movements"
    ext = federated.node("inventory:raw.stock_movements")
    assert ext.kind == "external"
    assert ext.reads == [job.writes]
    assert _edge(federated, job.id, ext.id).evidence == "matched"
    assert federated.records[job.id]["writes"] == "warehouse.raw.stock_movements"


def test_the_dashboard_hangs_downstream_of_everything(federated: Loaded) -> None:
    g = federated.graph
    board = federated.node("dashboards:ops_board")
    assert (board.kind, board.tool, board.owner) == ("dashboard", "metabase", "operations")
    assert g.parents(board.id) == {"reporting:fct_reorder_alerts"}
    assert g.children(board.id) == set()
    assert board.reads == [federated.node("reporting:fct_reorder_alerts").writes]
    # from the loader to the dashboard, across both tools
    assert board.id in g.descendants("ingestion:load_stock")
    assert {
        "ingestion:load_stock",
        "inventory:raw.stock_movements",
        LEVELS,
        REORDER,
        SRC_LEVELS,
        SRC_REORDER,
        "reporting:stg_stock_levels",
    } <= g.ancestors(board.id)
    order = g.topological_order()
    assert order.index("ingestion:load_stock") < order.index(LEVELS) < order.index(SRC_LEVELS)
    assert (
        order.index(SRC_LEVELS)
        < order.index("reporting:fct_reorder_alerts")
        < order.index(board.id)
    )
    rec = federated.records[board.id]
    assert rec["label"] == "Operations board"
    assert rec["url"] == "https://metabase.example.com/dashboard/7"


def test_doctor_in_prod_finds_nothing_wrong(federated: Loaded) -> None:
    assert federated.checks == []
    assert exit_status(federated.checks) == 0


def test_target_dev_maps_each_project_to_its_dev_environment(federated_dev: Loaded) -> None:
    assert federated_dev.node(LEVELS).writes.key == "warehouse.stock__dev.levels"
    assert federated_dev.node("reporting:fct_reorder_alerts").writes.key == (
        "warehouse.reporting_dev.fct_reorder_alerts"
    )
    # the sources name the prod schema whatever the target
    assert federated_dev.node(SRC_REORDER).reads[0].key == "warehouse.stock.reorder_points"


def test_doctor_in_dev_reports_the_dev_source_reading_prod(federated_dev: Loaded) -> None:
    assert exit_status(federated_dev.checks) == 1
    # matched by relation in prod; in dev nothing writes the prod view: never an edge to it
    assert federated_dev.graph.edge(REORDER, SRC_REORDER) is None
    (spl201,) = federated_dev.codes("SPL201")
    assert spl201.severity == "error"
    assert spl201.node == SRC_REORDER
    assert "warehouse.stock.reorder_points" in spl201.message
    assert REORDER in spl201.message
    assert "[targets.NAME.environments]" in spl201.fix
    # the declared binding stays, but reads a relation its writer does not write in dev
    (spl202,) = federated_dev.codes("SPL202")
    assert spl202.node == SRC_LEVELS
    assert "warehouse.stock.levels" in spl202.message
    assert "warehouse.stock__dev.levels" in spl202.message


def test_a_relation_written_by_two_projects_is_never_an_edge(tmp_path: Path) -> None:
    root = copy_fixture("federated", tmp_path)
    with (root / "splice.toml").open("a") as fh:
        fh.write(
            "\n[[ingestion]]\n"
            'name = "legacy_export"\n'
            'writes = ["stock.reorder_points"]\n'
            'command = ["python", "legacy_export.py"]\n'
        )
    loaded = Loaded(root)
    g = loaded.graph
    assert sorted(g.writer_of(parse_relation("warehouse.stock.reorder_points"))) == [
        "ingestion:legacy_export",
        REORDER,
    ]
    assert g.edge(REORDER, SRC_REORDER) is None
    assert g.edge("ingestion:legacy_export", SRC_REORDER) is None
    assert g.parents(SRC_REORDER) == set()
    (spl101,) = loaded.codes("SPL101")
    assert spl101.severity == "error"
    assert spl101.node == SRC_REORDER
    assert "ingestion:legacy_export" in spl101.message and REORDER in spl101.message
    assert "[[bindings]]" in spl101.fix
    # the declared binding is unaffected
    assert g.edge(LEVELS, SRC_LEVELS) is not None


def test_a_binding_to_an_unknown_node_names_the_key_and_the_closest_ids(tmp_path: Path) -> None:
    root = copy_fixture("federated", tmp_path)
    cfg = root / "splice.toml"
    cfg.write_text(
        cfg.read_text().replace(
            'writer = "inventory:stock.levels"', 'writer = "inventory:stock.level"'
        )
    )
    with Workspace.open(root) as ws, pytest.raises(ConfigError) as err:
        ws.graph()
    msg = err.value.one_line()
    assert "bindings[0].writer" in msg
    assert "'inventory:stock.level'" in msg
    assert "Closest: inventory:stock.levels" in msg
    assert not (root / ".splice" / "state.db").exists()


def test_the_workspace_builds_and_dbt_reads_what_splice_says_sqlmesh_writes(
    federated: Loaded, tmp_path: Path
) -> None:
    """Load, plan SQLMesh to prod, build dbt: the relations of the bindings are real objects."""
    import subprocess
    import sys

    from fixture_projects import cwd, dbt, tables_in
    from sqlmesh import Context

    root = copy_fixture("federated", tmp_path)
    warehouse = root / "warehouse.duckdb"
    subprocess.run([sys.executable, str(root / "ingest" / "load_stock.py")], check=True)
    with cwd(root / "inventory"):  # the tools' configs name ../warehouse.duckdb
        ctx = Context(paths=str(root / "inventory"))
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time="2024-03-04")
        finally:
            ctx.close()
    dbt(root / "reporting", "build")
    built = tables_in(warehouse)
    for edge in federated.graph.bindings:
        if edge.upstream.startswith("inventory:") or edge.upstream.startswith("ingestion:"):
            r = edge.relation
            assert r is not None and (r.catalog, r.schema, r.name) in built, edge
    alerts = federated.node("reporting:fct_reorder_alerts").writes
    assert built[(alerts.catalog, alerts.schema, alerts.name)] == "BASE TABLE"

    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT sku, reorder_quantity FROM reporting.fct_reorder_alerts ORDER BY sku"
        ).fetchall()
    assert rows == [("SKU-2", 15), ("SKU-3", 5)]


LOCKER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: no other process may open the file now
print("locked", flush=True)
sys.stdin.read()
"""


def test_loading_the_graph_does_not_open_the_warehouse(federated_dir: Path) -> None:
    """dbt parse and SQLMesh's load leave the DuckDB file alone: `splice ls` works while
    another process (a notebook, a running build) holds it."""
    import subprocess
    import sys

    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(federated_dir / "warehouse.duckdb")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        loaded = Loaded(federated_dir)
        assert loaded.graph.edge(LEVELS, SRC_LEVELS) is not None
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        try:
            locker.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - only our own locker
            locker.kill()
            locker.wait()
        (federated_dir / "warehouse.duckdb").unlink(missing_ok=True)
