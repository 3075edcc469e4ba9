"""The graph cache (splice.workspace.graph_cache): a reading command on an unchanged workspace gets the
graph dbt and SQLMesh would load, without loading them; a change to any input reloads it.

The workspace is the federated fixture (a SQLMesh project read by a dbt project), loaded by
the real tools.
"""

from __future__ import annotations

import dataclasses
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest

from splice.api import list_nodes
from splice.graph.model import Ambiguity, Edge, Graph, Node, Relation
from splice.graph.serial import NotSerialisable, from_data, graph_from_dict, graph_to_dict, to_data
from splice.workspace import graph_cache
from splice.workspace.core import Workspace

ALERTS = Path("reporting") / "models" / "marts" / "fct_reorder_alerts.sql"


@pytest.fixture
def ws_dir(federated_base: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "federated"
    shutil.copytree(federated_base, dest)
    return dest


def key(root: Path, target: str | None = None) -> str:
    with Workspace.open(root, target=target) as ws:
        return graph_cache.graph_key(ws)


def assert_same_graph(a: Graph, b: Graph, *, same_order: bool = True) -> None:
    """Every node (every field), edge (with its evidence and relation) and ambiguity equal.
    SQLMesh lists its models in no fixed order, so two loads may differ in order only."""
    assert a.nodes == b.nodes
    if same_order:
        assert list(a.nodes) == list(b.nodes)
        assert a.edges == b.edges and a.ambiguities == b.ambiguities
    assert sorted(a.edges, key=repr) == sorted(b.edges, key=repr)
    assert sorted(a.bindings, key=repr) == sorted(b.bindings, key=repr) and a.bindings
    assert sorted(a.ambiguities, key=repr) == sorted(b.ambiguities, key=repr)
    for nid in a.nodes:
        assert a.parents(nid) == b.parents(nid) and a.children(nid) == b.children(nid)
    assert a.topological_order() == b.topological_order()


# -- serialisation -------------------------------------------------------------------------------
def _sample(tp: Any, name: str) -> Any:
    """A value of type ``tp`` that differs from any default, for field ``name``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is str:
        return f"{name}-value"
    if tp is int:
        return 7
    if tp is float:
        return 1.5
    if tp is bool:
        return True
    if tp is Relation:
        return Relation("cat", "sch", name)
    if origin is typing.Literal:
        return args[0]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return _sample(next(a for a in args if a is not type(None)), name)
    if origin is list:
        return [_sample(args[0], name), _sample(args[0], name + "2")]
    if origin is tuple:
        return tuple(_sample(a, name) for a in args if a is not Ellipsis)
    if origin is dict:
        return {"k1": _sample(args[1], name), "k2": _sample(args[1], name + "2")}
    if tp is object:
        return {"nested": [1, "two", None, {"three": 3.0}], "rel": Relation(None, "s", "t")}
    raise AssertionError(f"no sample for field {name}: {tp!r}; teach _sample this type")


def _full(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    obj = cls(**{f.name: _sample(hints[f.name], f.name) for f in dataclasses.fields(cls) if f.init})
    for f in dataclasses.fields(cls):
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        )
        assert getattr(obj, f.name) != default, f"{cls.__name__}.{f.name} kept its default"
    return obj


@pytest.mark.parametrize("cls", [Node, Relation, Edge, Ambiguity])
def test_every_field_round_trips_through_plain_json(cls: type) -> None:
    import json

    obj = _full(cls)
    back = from_data(json.loads(json.dumps(to_data(obj))))
    assert back == obj
    for f in dataclasses.fields(cls):
        assert type(getattr(back, f.name)) is type(getattr(obj, f.name)), f.name


def test_a_value_json_cannot_carry_is_refused_not_mangled() -> None:
    from datetime import date

    node = Node("p:m", "p", "m", "model", "dbt", meta={"when": date(2026, 1, 1)})
    with pytest.raises(NotSerialisable):
        to_data(node)
    # sets and non-string keys survive
    node = Node("p:m", "p", "m", "model", "dbt", meta={"s": {1, 2}, "d": {1: "a"}, "t": (1, 2)})
    assert from_data(to_data(node)) == node


# -- the cached graph is the loaded graph ---------------------------------------------------------
def test_cached_graph_equals_the_loaded_graph_and_loads_no_tool(ws_dir: Path) -> None:
    with Workspace.open(ws_dir, use_cache=False) as ws:
        loaded = ws.graph()
        assert graph_from_dict(graph_to_dict(loaded)) is not loaded
        assert_same_graph(graph_from_dict(graph_to_dict(loaded)), loaded)
    with Workspace.open(ws_dir) as ws:  # first: loads through the tools, stores
        first = ws.graph()
        assert not ws.graph_cached and set(ws._providers) == {"inventory", "reporting"}
    with Workspace.open(ws_dir) as ws:
        cached = ws.graph()
        assert ws.graph_cached and not ws._providers  # neither dbt nor SQLMesh was loaded
        assert_same_graph(cached, loaded, same_order=False)
        assert_same_graph(cached, first)
        records = list_nodes(ws)
        # a provider still loads on demand for what needs the tool
        assert ws.provider("reporting").manifest is None
        assert "model.reporting.fct_reorder_alerts" in ws.provider("reporting")._parse().nodes
    with Workspace.open(ws_dir, use_cache=False) as ws:
        assert list_nodes(ws) == records
        assert not ws.graph_cached


def test_an_edited_model_and_a_new_file_are_seen(ws_dir: Path) -> None:
    with Workspace.open(ws_dir) as ws:
        ws.graph()
    before = key(ws_dir)
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert ws.graph_cached
    sql = ws_dir / ALERTS
    sql.write_text(
        sql.read_text().replace("r.reorder_quantity\n", "r.reorder_quantity,\n    1 as urgent\n")
    )
    edited = key(ws_dir)
    assert edited != before
    new = ws_dir / "reporting" / "models" / "marts" / "fct_low_stock.sql"
    new.write_text("select sku from {{ ref('stg_stock_levels') }} where on_hand < 5\n")
    assert key(ws_dir) not in (before, edited)
    with Workspace.open(ws_dir) as ws:
        ids = {r["id"] for r in list_nodes(ws)}
        assert not ws.graph_cached
    assert "reporting:fct_low_stock" in ids
    with Workspace.open(ws_dir) as ws:
        assert "reporting:fct_low_stock" in ws.graph().nodes and ws.graph_cached


def test_an_environment_variable_a_model_reads_is_part_of_the_key(
    ws_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = ws_dir / ALERTS
    sql.write_text(
        "{{ config(alias=env_var('ALERTS_TABLE', 'fct_reorder_alerts')) }}\n" + sql.read_text()
    )
    monkeypatch.delenv("ALERTS_TABLE", raising=False)
    with Workspace.open(ws_dir) as ws:
        assert ws.graph().nodes["reporting:fct_reorder_alerts"].writes.name == "fct_reorder_alerts"
    unset = key(ws_dir)
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")  # what no project reads changes nothing
    assert key(ws_dir) == unset
    monkeypatch.setenv("ALERTS_TABLE", "reorder_alerts_v2")
    assert key(ws_dir) != unset
    with Workspace.open(ws_dir) as ws:
        node = ws.graph().nodes["reporting:fct_reorder_alerts"]
        assert not ws.graph_cached
        # only dbt reads it: the SQLMesh project's nodes are kept (graph_cache.project_nodes)
        assert set(ws.loaded_projects) == {"reporting"}
    assert node.writes is not None and node.writes.name == "reorder_alerts_v2"


def test_environment_variables_sqlmesh_config_and_python_read(
    ws_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = ws_dir / "inventory" / "config.yaml"
    cfg.write_text(
        cfg.read_text().replace(
            "'2024-03-01'", "\"{{ env_var('INVENTORY_START', '2024-03-01') }}\""
        )
    )
    monkeypatch.delenv("INVENTORY_START", raising=False)
    base = key(ws_dir)
    monkeypatch.setenv("INVENTORY_START", "2024-04-01")
    assert key(ws_dir) != base
    # a name the scan cannot read: the whole environment counts
    (ws_dir / "inventory" / "macros").mkdir()
    (ws_dir / "inventory" / "macros" / "env.py").write_text(
        "import os\nSETTINGS = dict(os.environ)\n"
    )
    whole = key(ws_dir)
    monkeypatch.setenv("UNRELATED_VARIABLE", "y")
    assert key(ws_dir) != whole
    # the tools' own variables always count
    monkeypatch.setenv("DBT_TARGET_PATH", "elsewhere")
    assert key(ws_dir) != whole


def test_the_profile_in_use_is_part_of_the_key(
    ws_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = ws_dir / "reporting" / "profiles.yml"
    base = key(ws_dir)
    own.write_text(own.read_text().replace("schema: reporting\n", "schema: reporting_v2\n"))
    assert key(ws_dir) != base
    # a profile outside the project ($DBT_PROFILES_DIR), edited
    home = tmp_path / "dbt_home"
    home.mkdir()
    shutil.move(own, home / "profiles.yml")
    monkeypatch.setenv("DBT_PROFILES_DIR", str(home))
    outside = key(ws_dir)
    prof = home / "profiles.yml"
    prof.write_text(prof.read_text().replace("threads: 1", "threads: 2", 1))
    assert key(ws_dir) != outside


def test_splice_toml_the_target_and_versions_are_part_of_the_key(
    ws_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = key(ws_dir)
    assert key(ws_dir, target="dev") != base
    toml = ws_dir / "splice.toml"
    text = toml.read_text()
    toml.write_text(text.replace('owner = "operations"', 'owner = "ops-team"'))
    assert key(ws_dir) != base
    toml.write_text(text)
    assert key(ws_dir) == base

    real = graph_cache._dists_on_path()
    assert any(d.startswith("sqlmesh-") for d in real)
    monkeypatch.setattr(
        graph_cache,
        "_dists_on_path",
        lambda: [d if not d.startswith("sqlmesh-") else "sqlmesh-9.9.9.dist-info" for d in real],
    )
    assert graph_cache.tool_versions()["sqlmesh"] == "9.9.9"
    assert key(ws_dir) != base
    monkeypatch.undo()
    assert key(ws_dir) == base
    monkeypatch.setattr("splice.version.__version__", "99.0.0")
    assert key(ws_dir) != base


def test_a_cached_graph_under_another_key_is_not_used(ws_dir: Path) -> None:
    with Workspace.open(ws_dir) as ws:
        g = ws.graph()
        g_key = ws.graph_key
        # a graph stored for another key (a stale entry) is never returned
        assert graph_cache.lookup(ws, "0" * 64) is None
        assert graph_cache.lookup(ws, str(g_key)) is not None
    with Workspace.open(ws_dir, target="dev") as ws:
        assert graph_cache.lookup(ws, str(g_key)) is None  # one entry per target
    assert g.nodes


def test_no_cache_bypasses_it(ws_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from splice.cli.main import cli, register_commands

    with Workspace.open(ws_dir) as ws:
        ws.graph()
    monkeypatch.setenv("SPLICE_NO_CACHE", "1")
    with Workspace.open(ws_dir) as ws:
        ws.graph()
        assert not ws.graph_cached and ws._providers
    monkeypatch.delenv("SPLICE_NO_CACHE")
    register_commands()
    res = CliRunner().invoke(cli, ["-w", str(ws_dir), "--no-cache", "ls", "--json"])
    assert res.exit_code == 0, res.output
    assert "reporting:fct_reorder_alerts" in res.output


def test_a_moved_workspace_finds_its_graph_and_a_changed_copy_does_not(
    ws_dir: Path, tmp_path: Path
) -> None:
    """A workspace copied elsewhere with the paths that point into it (a profile's absolute
    warehouse path, as ``splice demo`` writes it) reads its graph from the cache; other caches
    keyed by the graph key still see another place; a copy that differs otherwise loads."""
    profiles = ws_dir / "reporting" / "profiles.yml"
    profiles.write_text(profiles.read_text().replace("../warehouse.duckdb",
                                                     str(ws_dir / "warehouse.duckdb")))  # fmt: skip
    with Workspace.open(ws_dir) as ws:
        original = ws.graph()
        assert not ws.graph_cached
    moved = tmp_path / "elsewhere" / "federated"
    shutil.copytree(ws_dir, moved)
    p = moved / "reporting" / "profiles.yml"
    p.write_text(p.read_text().replace(str(ws_dir), str(moved)))  # moved with its paths
    with Workspace.open(moved) as ws:
        got = ws.graph()
        assert ws.graph_cached and not ws._providers  # no tool loaded
        assert_same_graph(got, original)
        assert graph_cache.content_part(ws.inputs_key()) == graph_cache.content_part(key(ws_dir))
        assert ws.inputs_key() != key(ws_dir)  # the location part: doctor, lineage, the memo
    changed = tmp_path / "changed" / "federated"
    shutil.copytree(ws_dir, changed)  # its profile still points at the first warehouse
    with Workspace.open(changed) as ws:
        ws.graph()
        assert not ws.graph_cached


def test_an_edit_anywhere_in_splice_is_a_new_key(tmp_path: Path) -> None:
    """A development install's edit to any of Splice's modules (a provider, the lineage), not
    only the graph cache's own package, means a graph made by other code."""
    import os

    import splice

    pkg = Path(splice.__file__).parent
    assert graph_cache._source_digest() == graph_cache.tree_digest(pkg)
    copy = tmp_path / "splice"
    shutil.copytree(
        pkg, copy, ignore=shutil.ignore_patterns("__pycache__"), copy_function=shutil.copy2
    )
    before = graph_cache.tree_digest(copy)
    module = copy / "providers" / "dbt.py"
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert graph_cache.tree_digest(copy) != before


def test_reading_an_incident_refreshes_its_reach_without_a_tool(ws_dir: Path) -> None:
    """An open incident's dashboards are read again from the cached graph; the SQLMesh
    environments that reprocess (which ask SQLMesh's state, loading the project) are not:
    `splice incident show` on the demo took 1.8 s loading SQLMesh for them, 0.5 s without."""
    from splice.watch.blast import blast_radius, refresh_reach

    origin = "inventory:stock.levels"
    with Workspace.open(ws_dir) as ws:
        graph = ws.graph()
    diagnosis: dict[str, Any] = {"blast_radius": {"dashboards": [], "environments": ["kept"]}}
    with Workspace.open(ws_dir) as ws:
        refresh_reach(ws, diagnosis, origin)
        assert ws.graph_cached and not ws._providers  # neither SQLMesh nor dbt loaded
    reach = diagnosis["blast_radius"]
    assert {d["node"] for d in reach["dashboards"]} == {
        n for n in graph.descendants(origin) if graph.nodes[n].kind == "dashboard"
    } and reach["dashboards"]
    assert reach["environments"] == ["kept"]  # as diagnosed
    with Workspace.open(ws_dir) as ws:
        whole = blast_radius(ws, ws.graph(), origin)  # the diagnosis's own: SQLMesh is asked
        assert "inventory" in ws._providers and whole["dashboards"] == reach["dashboards"]
