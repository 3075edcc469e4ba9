"""The reading commands on an unchanged demo: answered from the graph cache (and the plan memo),
with neither dbt nor SQLMesh imported, and the same answers as when the tools are loaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from tests.tool_probe import probe

from splice.cli.main import cli, register_commands
from splice.lineage.service import workspace_lineage
from splice.workspace import graph_cache
from splice.workspace.core import Workspace

COMMANDS = [
    ["ls", "--json"],
    ["graph", "--json"],
    ["lineage", "finance:fct_gmv_qtd.gmv_usd_qtd", "--json"],
    ["doctor", "--json"],
    ["plan", "--json"],
]


def comparable(args: list[str], text: str) -> Any:
    data = json.loads(text)
    if args[0] == "lineage":
        data.pop("stats")
    if args[0] == "plan":
        data = {
            n: (d["action"], [r["text"] for r in d["reasons"]])
            for n, d in data["decisions"].items()
        }
    return data


def test_reading_commands_on_an_unchanged_demo_import_neither_tool(
    fresh_demo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "tools.json"
    first = {}
    for args in COMMANDS:  # the first of each fills the cache (and the plan memo)
        _tools, first[args[0]] = probe(fresh_demo, args, out)
    for args in COMMANDS:
        tools, text = probe(fresh_demo, args, out)
        assert tools == [], f"splice {' '.join(args)} imported {tools}"
        assert comparable(args, text) == comparable(args, first[args[0]])
    # the same answers as with the tools loaded
    register_commands()
    runner = CliRunner()
    for args in COMMANDS:
        extra = ["--fresh"] if args[0] == "plan" else []
        res = runner.invoke(cli, ["-w", str(fresh_demo), "--no-cache", *args, *extra])
        assert res.exit_code in (0, 1), res.output
        assert comparable(args, res.output) == comparable(args, first[args[0]]), args


def test_warm_lineage_follows_the_warehouse_and_the_dlt_pipeline(fresh_demo: Path) -> None:
    with Workspace.open(fresh_demo) as ws:
        cold = workspace_lineage(ws)
        key = ws.graph_key
    with Workspace.open(fresh_demo) as ws:
        warm = workspace_lineage(ws)
        assert ws.graph_cached and not ws._providers
    assert warm.stats.get("warm") and not cold.stats.get("warm")
    assert {k: v.to_dict() for k, v in warm.models.items()} == {
        k: v.to_dict() for k, v in cold.models.items()
    }
    # a column added in the warehouse changes what lineage resolves: no warm answer
    with duckdb.connect(str(fresh_demo / "warehouse.duckdb")) as con:
        con.execute("ALTER TABLE raw.bookings ADD COLUMN coupon VARCHAR")
    with Workspace.open(fresh_demo) as ws:
        again = workspace_lineage(ws)
        assert ws.graph_cached  # the graph itself did not change
    assert not again.stats.get("warm")
    with Workspace.open(fresh_demo) as ws:
        assert workspace_lineage(ws).stats.get("warm")
    # the dlt pipeline's stored schema is part of the graph key (it names the job's columns)
    schema = next((fresh_demo / ".splice" / "dlt" / "fx_rates_ingest" / "schemas").glob("*.json"))
    schema.write_text(schema.read_text().replace('"rate_to_usd"', '"rate_in_usd"'))
    with Workspace.open(fresh_demo) as ws:
        assert graph_cache.graph_key(ws) != key


def test_lineage_does_not_open_the_warehouse_while_a_run_writes_it(fresh_demo: Path) -> None:
    """Between two segments of a run the DuckDB file is free for a moment; a reader opening it
    then would make the run's next segment fail on the lock. While another process holds the
    run's warehouse lock, lineage uses the columns it read last; once the run ends it reads
    the file again."""
    from tests.run_lock_holder import run_holding

    with Workspace.open(fresh_demo) as ws:
        workspace_lineage(ws)
    with duckdb.connect(str(fresh_demo / "warehouse.duckdb")) as con:
        con.execute("ALTER TABLE raw.bookings ADD COLUMN coupon VARCHAR")
    with run_holding(fresh_demo), Workspace.open(fresh_demo) as ws:
        during = workspace_lineage(ws)
    assert during.stats.get("warm"), "the columns read before the run: the file unopened"
    with Workspace.open(fresh_demo) as ws:
        after = workspace_lineage(ws)
    assert not after.stats.get("warm"), "the run ended: the new column is read"


def test_the_packed_lineage_carries_every_field() -> None:
    from splice.graph.model import Relation
    from splice.lineage import warm as lineage_warm
    from splice.lineage.types import ColumnLineage, ColumnRef, JoinKey, ModelLineage

    a, b = Relation("w", "raw", "a"), Relation(None, "raw", "b")
    ref = ColumnRef(a, "x", "indirect", ("JOIN", "FILTER"), True)
    full = ModelLineage(
        columns={
            "x": ColumnLineage("x", [ref, ColumnRef(b, "y")], "partly opaque"),
            "z": ColumnLineage("z"),
        },
        query_indirect=[ref],
        opaque_reason="why",
        warnings=["w1"],
        reads=[a, b],
        output=Relation("w", "marts", "m"),
        dialect="duckdb",
        joins=[JoinKey(ColumnRef(a, "x", "indirect", ("JOIN",)), ColumnRef(b, "y"), "left")],
    )
    import dataclasses

    for f in dataclasses.fields(ModelLineage):  # every field differs from its default
        assert getattr(full, f.name) != getattr(ModelLineage(), f.name), f.name
    models = {"p:m": full, "p:empty": ModelLineage()}
    back = lineage_warm.unpack(json.loads(json.dumps(lineage_warm.pack(models))))
    assert back == models
    assert type(back["p:m"].columns["x"].sources[0].subtypes) is tuple
    # an entry packed with other fields is not read
    stale = lineage_warm.pack(models)
    assert stale is not None
    stale["header"]["ColumnRef"] = ["relation", "column"]
    assert lineage_warm.unpack(stale) is None


def test_a_dlt_load_keeps_the_graph_a_new_dataset_does_not(fresh_demo: Path) -> None:
    state = fresh_demo / ".splice" / "dlt" / "fx_rates_ingest" / "state.json"

    def key() -> str:
        with Workspace.open(fresh_demo) as ws:
            return graph_cache.graph_key(ws)

    before = key()
    data = json.loads(state.read_text())
    data["_local"]["last_run_context"] = {"run": "another load"}  # what every load rewrites
    data["_state_version"] = int(data["_state_version"]) + 1
    state.write_text(json.dumps(data))
    assert key() == before
    data["dataset_name"] = "raw_v2"
    state.write_text(json.dumps(data))
    assert key() != before


def test_a_first_lineage_says_what_it_is_doing(
    fresh_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's spinner shows the workspace's progress: each project as its tool loads it
    (dbt parsing in a child process beside the first: the demo's finance project counts as
    big enough here), the rendering, the models analysed."""
    from splice.providers.dbt import DbtProvider

    monkeypatch.setattr(DbtProvider, "PREWARM_MIN_MODELS", 1)
    for kept in (fresh_demo / ".splice" / "dbt").rglob("partial_parse.msgpack"):
        kept.unlink()  # as on a first load: dbt has parsed nothing yet
    told: list[str] = []
    with Workspace.open(fresh_demo, use_cache=False) as ws:
        ws.progress = told.append
        wl = workspace_lineage(ws)
    loads = [m for m in told if m.startswith("loading ")]
    assert len(loads) == 2, told  # the demo's two projects, one at a time
    assert "dbt parsing beside it" in loads[0] and "dbt project finance (2/2)" in loads[1], loads
    n = len(wl.models)
    assert f"column lineage: {n:,}/{n:,} models" in told, told
    assert told.index(loads[1]) < told.index(f"rendering {n:,} models"), told
