"""A no-op `splice run` is a fast no-op (the remembered plan, no tool loaded) on a SQLMesh
project with an EMBEDDED model (tests/fixtures/projects/sqlmesh_kinds: its model
staging.valid_events never has an interval), for the whole project and for a selection; and
the run's note says the next run reuses its plan only when it does."""

from __future__ import annotations

from pathlib import Path

from fixture_projects import copy_fixture

from splice.api import plan, run
from splice.plan.memo import REUSED
from splice.workspace.core import Workspace

P = "sqlmesh_kinds"
FIRST = "2024-01-04"  # the raw data covers 2024-01-01 .. 2024-01-03
SELECTION = f"{P}:staging.events+"


def reused(notes: list[str]) -> bool:
    return any(REUSED in n for n in notes)


def test_a_noop_run_reuses_its_plan_with_an_embedded_model_and_for_a_selection(
    tmp_path: Path,
) -> None:
    root = copy_fixture(P, tmp_path)
    with Workspace.open(root) as ws:
        first = run(ws, execution_time=FIRST)
    assert first.ok, {n: (r.status, r.message) for n, r in first.nodes.items()}
    assert first.nodes[f"{P}:staging.valid_events"].status == "noop"  # the EMBEDDED model
    said = [n for n in first.notes if n.startswith("nothing is left to build")]
    assert said and "reuses this plan" in said[0], first.notes

    # what the note said: the next run reuses that plan, loading no tool
    with Workspace.open(root) as ws:
        again = run(ws, execution_time=FIRST)
        assert not ws._providers, "the no-op run loaded a tool"
    assert again.ok and not again.built and reused(again.notes), again.notes

    # a selection no run ever made is given the whole project's no-op plan, still no tool
    with Workspace.open(root) as ws:
        selected = run(ws, SELECTION, execution_time=FIRST)
        assert not ws._providers, "the no-op run of a selection loaded a tool"
    assert selected.ok and not selected.built and reused(selected.notes), selected.notes
    with Workspace.open(root) as ws:
        memo = plan(ws, SELECTION, execution_time=FIRST)
        assert not ws._providers
        fresh = plan(ws, SELECTION, execution_time=FIRST, fresh=True)
    assert "memo" in memo.timings and not memo.to_build
    # the same decisions, and only the selection's, as a plan from scratch
    assert {n: d.action for n, d in memo.decisions.items()} == {
        n: d.action for n, d in fresh.decisions.items()
    }
    assert f"{P}:ref.countries" not in memo.decisions
    assert f"{P}:marts.daily_revenue" in memo.decisions

    # the clock reaching a new interval: planned from scratch, and the interval builds
    with Workspace.open(root) as ws:
        later = plan(ws, SELECTION, execution_time="2024-01-05")
    assert "memo" not in later.timings
    assert later.decisions[f"{P}:staging.events"].action == "build"


def test_a_state_connection_of_its_own_is_read_from_its_duckdb_file(tmp_path: Path) -> None:
    """SQLMesh keeping its state in a DuckDB file of its own (``state_connection``, as the demo
    on Spark does): the no-op run still reuses its plan, reading that file, and a change to
    the state there (a restatement by hand removes intervals) is seen."""
    import duckdb

    root = copy_fixture(P, tmp_path)
    config = root / "config.yaml"
    text = config.read_text()
    own = "      database: kinds.duckdb\n"
    assert own in text
    config.write_text(
        text.replace(own, own + "    state_connection:\n      type: duckdb\n"
                     "      database: kinds_state.duckdb\n", 1)
    )  # fmt: skip
    with Workspace.open(root) as ws:
        first = run(ws, execution_time=FIRST)
        assert ws.provider(P).state_file() == str((root / "kinds_state.duckdb").resolve())
    assert first.ok, {n: (r.status, r.message) for n, r in first.nodes.items()}
    said = [n for n in first.notes if n.startswith("nothing is left to build")]
    assert said and "reuses this plan" in said[0], first.notes
    with duckdb.connect(str(root / "kinds.duckdb"), read_only=True) as wh:
        assert not wh.execute(
            "SELECT * FROM information_schema.tables WHERE table_schema = 'sqlmesh'"
        ).fetchall()  # the state is not in the warehouse

    with Workspace.open(root) as ws:
        again = run(ws, execution_time=FIRST)
        assert not ws._providers, "the no-op run loaded a tool"
    assert again.ok and not again.built and reused(again.notes), again.notes

    with duckdb.connect(str(root / "kinds_state.duckdb")) as state:  # a restatement by hand
        state.execute("DELETE FROM sqlmesh._intervals WHERE name LIKE '%events%'")
    with Workspace.open(root) as ws:
        after = plan(ws, execution_time=FIRST)
    assert "memo" not in after.timings
