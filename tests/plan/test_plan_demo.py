"""Planning on the demo workspace with the real tools (dbt, SQLMesh, DuckDB).

The runner is simulated the way it records evidence: after a node succeeds it calls
``record_build`` with the node's fingerprint and the decision's inputs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from splice.demo import relocate
from splice.plan.evidence import last_builds, record_build
from splice.plan.fingerprint import fingerprints
from splice.plan.model import Plan
from splice.plan.planner import EnvironmentRefusedError, explain, make_plan
from splice.workspace.core import Workspace

DBT_BUILT = {
    "finance:currency_regions",
    "finance:metricflow_time_spine",  # the semantic layer's calendar (a table)
    "finance:stg_gmv_daily",
    "finance:fct_gmv_qtd",
    "finance:fct_gmv_by_currency",
    "finance:fct_gmv_by_channel",
}
SQLMESH_MODELS = {
    "pricing:fx.daily_rates",
    "pricing:marts.fct_bookings_usd",
    "pricing:marts.agg_gmv_daily",
}


def record_plan(ws: Workspace, plan: Plan, run_id: str) -> None:
    """What the runner does after each node of the plan succeeds."""
    built = [n for n in plan.to_build if ws.graph().nodes[n].kind in ("model", "seed", "snapshot")]
    fps = fingerprints(ws, built)
    for nid in built:
        record_build(
            ws.state,
            target=ws.target,
            node_id=nid,
            fingerprint=fps[nid],
            run_id=run_id,
            upstream=plan.decisions[nid].inputs,
        )


def models_to_build(plan: Plan) -> set[str]:
    return {n for n in plan.to_build if plan.decisions[n].reasons[0].code != "selected_test"}


@pytest.fixture(scope="module")
def recorded(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with Splice evidence of a first run (every dbt node recorded as built)."""
    dest = tmp_path_factory.mktemp("plan") / "travel"
    shutil.copytree(demo_workspace, dest, symlinks=True)
    relocate(dest)
    with Workspace.open(dest) as ws:
        record_plan(ws, make_plan(ws), "run-1")
    return dest


@pytest.fixture
def copy_of_recorded(recorded: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "travel"
    shutil.copytree(recorded, dest, symlinks=True)
    relocate(dest)
    return dest


def test_the_demo_plans_nothing_after_its_build_through_splice(fresh_demo: Path) -> None:
    # `splice demo` builds through `splice run`: the first plan finds every build's evidence
    with Workspace.open(fresh_demo) as ws:
        plan = make_plan(ws, fresh=True)
        assert plan.to_build == [] and plan.segments == []
        recs = last_builds(ws.state, "prod")
        assert {n: (recs[n].version, recs[n].reason) for n in SQLMESH_MODELS | DBT_BUILT} == {
            n: (1, "build") for n in SQLMESH_MODELS | DBT_BUILT
        }


def test_built_by_hand_sqlmesh_is_complete_dbt_never_built_then_noop(fresh_demo: Path) -> None:
    # a workspace built with the tools by hand: no Splice state at all
    for f in (fresh_demo / ".splice").glob("state.db*"):
        f.unlink()
    (fresh_demo / "splice-witness.json").unlink()
    with Workspace.open(fresh_demo) as ws:
        plan = make_plan(ws)
        for nid in SQLMESH_MODELS:
            d = plan.decisions[nid]
            assert d.action == "reuse", d.because
            assert d.tool_view["missing_intervals"] == [] and d.tool_view["change"] is None
            assert d.fingerprint["snapshot"] == d.tool_view["snapshot"]
        assert models_to_build(plan) == DBT_BUILT
        assert all(plan.decisions[n].reasons[0].code == "never_built" for n in DBT_BUILT)
        assert {s.project for s in plan.segments} == {"finance"}
        assert plan.execution_time == "2026-10-01T00:00:00"  # the demo's clock
        # SQLMesh's state became evidence: version 1, observed
        recs = last_builds(ws.state, "prod")
        assert {n: (recs[n].version, recs[n].reason) for n in SQLMESH_MODELS} == {
            n: (1, "observed") for n in SQLMESH_MODELS
        }

        record_plan(ws, plan, "run-1")
        again = make_plan(ws)
        assert again.to_build == [] and again.segments == []
        assert {d.reasons[0].code for d in again.decisions.values()} == {"unchanged"}
        assert last_builds(ws.state, "prod")["finance:stg_gmv_daily"].inputs == {
            "pricing:marts.agg_gmv_daily": 1
        }


def test_changed_dbt_sql_builds_it_and_its_downstream_only(copy_of_recorded: Path) -> None:
    sql = copy_of_recorded / "finance" / "models" / "staging" / "stg_gmv_daily.sql"
    sql.write_text(sql.read_text().replace("gmv_usd\n", "gmv_usd  -- in US dollars\n"))
    with Workspace.open(copy_of_recorded) as ws:
        plan = make_plan(ws)
        assert models_to_build(plan) == {
            "finance:stg_gmv_daily",
            "finance:fct_gmv_qtd",
            "finance:fct_gmv_by_currency",
        }
        stg = plan.decisions["finance:stg_gmv_daily"]
        assert [(r.code, r.components) for r in stg.reasons] == [("code_changed", ("sql",))]
        for down in ("finance:fct_gmv_qtd", "finance:fct_gmv_by_currency"):
            assert [r.code for r in plan.decisions[down].reasons] == ["upstream_code_changed"]
            assert (
                "finance:stg_gmv_daily builds in this plan: its code changed: sql"
                in plan.decisions[down].because
            )
        assert plan.decisions["finance:currency_regions"].action == "reuse"
        assert [s.project for s in plan.segments] == ["finance"]
        assert "not_null_stg_gmv_daily_gmv_usd" in " ".join(plan.segments[0].node_ids)
        assert explain(ws, "finance:fct_gmv_qtd").startswith(
            "finance:fct_gmv_qtd builds because finance:stg_gmv_daily"
        )

    from splice.cli.main import cli, register_commands

    register_commands()
    runner = CliRunner()
    res = runner.invoke(cli, ["-w", str(copy_of_recorded), "plan", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["target"] == "prod" and data["segments"][0]["project"] == "finance"
    assert data["decisions"]["finance:stg_gmv_daily"]["reasons"][0]["components"] == ["sql"]
    res = runner.invoke(cli, ["-w", str(copy_of_recorded), "plan", "-s", "stg_gmv_daily+"])
    assert res.exit_code == 0, res.output
    assert "s1 finance (dbt, target prod)" in res.output
    assert "BUILD finance:stg_gmv_daily" in res.output and "its code changed: sql" in res.output


def test_changed_sqlmesh_model_shows_its_category_and_builds_dbt_downstream(
    copy_of_recorded: Path,
) -> None:
    sql = copy_of_recorded / "pricing" / "models" / "marts" / "agg_gmv_daily.sql"
    sql.write_text(
        sql.read_text().replace(
            "SUM(amount_usd) AS gmv_usd", "ROUND(SUM(amount_usd), 2) AS gmv_usd"
        )
    )
    with Workspace.open(copy_of_recorded) as ws:
        plan = make_plan(ws)
        agg = plan.decisions["pricing:marts.agg_gmv_daily"]
        assert agg.action == "build"
        assert agg.tool_view["change"] == "directly modified"
        assert agg.tool_view["change_category"] == "breaking"
        assert agg.tool_view["missing_interval_count"] == 92
        assert "SQLMesh: breaking change" in agg.because
        assert models_to_build(plan) == {
            "pricing:marts.agg_gmv_daily",
            "finance:stg_gmv_daily",
            "finance:fct_gmv_qtd",
            "finance:fct_gmv_by_currency",
        }
        stg = plan.decisions["finance:stg_gmv_daily"]
        assert stg.reasons[0].code == "upstream_code_changed"
        assert (
            "pricing:marts.agg_gmv_daily builds in this plan: SQLMesh: breaking change"
            in stg.because
        )
        assert [(s.id, s.project, s.depends_on) for s in plan.segments] == [
            ("s1", "pricing", []),
            ("s2", "finance", ["s1"]),
        ]
        assert any(
            n.startswith("pricing:audit:marts.agg_gmv_daily") for n in plan.segments[0].node_ids
        )


def test_new_version_of_agg_gmv_daily_builds_stg_with_the_versions(copy_of_recorded: Path) -> None:
    with Workspace.open(copy_of_recorded) as ws:
        agg = "pricing:marts.agg_gmv_daily"
        before = last_builds(ws.state, "prod")[agg].version
        fp = fingerprints(ws, [agg])[agg]
        assert (
            record_build(ws.state, target="prod", node_id=agg, fingerprint=fp, run_id="run-2")
            == before + 1
        )
        plan = make_plan(ws)
        stg = plan.decisions["finance:stg_gmv_daily"]
        assert stg.action == "build"
        assert stg.because == f"{agg} changed: version {before} -> {before + 1}"
        assert explain(ws, "finance:stg_gmv_daily") == (
            f"finance:stg_gmv_daily builds because {agg} changed: version {before} -> {before + 1}"
        )
        assert plan.decisions["finance:fct_gmv_by_channel"].action == "reuse"
        assert plan.decisions[agg].action == "reuse"  # SQLMesh: nothing to do


def test_sqlmesh_run_by_hand_is_observed_and_incomplete_intervals_are_said(
    copy_of_recorded: Path,
) -> None:
    with Workspace.open(copy_of_recorded) as ws:
        # with the clock two days on, agg_gmv_daily misses 2 days and is not selected
        plan = make_plan(ws, "finance:stg_gmv_daily", execution_time="2026-10-03", observe=False)
        stg = plan.decisions["finance:stg_gmv_daily"]
        assert stg.action == "reuse"
        assert stg.reasons[-1].code == "incomplete_upstream_intervals"
        assert "2 intervals missing (2026-10-01 .. 2026-10-02)" in stg.reasons[-1].text
        assert any("finance:stg_gmv_daily would read incomplete data" in w for w in plan.warnings)
        # selecting it as well: SQLMesh fills the days first, so stg builds after it
        plan = make_plan(
            ws,
            "pricing:marts.agg_gmv_daily finance:stg_gmv_daily",
            execution_time="2026-10-03",
            observe=False,
        )
        assert (
            plan.decisions["pricing:marts.agg_gmv_daily"].tool_view["missing_interval_count"] == 2
        )
        assert plan.decisions["finance:stg_gmv_daily"].reasons[0].code == "upstream_data_changed"
        assert "version 1 -> 2" in plan.decisions["finance:stg_gmv_daily"].because

    # someone runs SQLMesh by hand for 2026-10-01
    from sqlmesh import Context

    ctx = Context(paths=str(copy_of_recorded / "pricing"))
    try:
        ctx.run("prod", execution_time="2026-10-02")
    finally:
        ctx.close()
    with Workspace.open(copy_of_recorded) as ws:
        plan = make_plan(ws, execution_time="2026-10-02")
        recs = last_builds(ws.state, "prod")
        assert recs["pricing:marts.agg_gmv_daily"].version == 2
        assert recs["pricing:marts.agg_gmv_daily"].reason == "observed"
        assert plan.decisions["finance:stg_gmv_daily"].because == (
            "pricing:marts.agg_gmv_daily changed: version 1 -> 2"
        )
        make_plan(ws, execution_time="2026-10-02")  # observing twice records nothing new
        assert last_builds(ws.state, "prod")["pricing:marts.agg_gmv_daily"].version == 2


def test_dev_target_reading_prod_is_refused(copy_of_recorded: Path) -> None:
    with Workspace.open(copy_of_recorded, target="dev") as ws:
        plan = make_plan(ws)
        agg = plan.decisions["pricing:marts.agg_gmv_daily"]
        assert agg.action == "build" and "environment 'dev' is new" in agg.because
        assert plan.decisions["finance:stg_gmv_daily"].reasons[0].code == "never_built"
        assert plan.environments == {"pricing": "dev", "finance": "dev"}

    sources = copy_of_recorded / "finance" / "models" / "sources.yml"
    sources.write_text(
        sources.read_text().replace(
            "\"{{ 'marts' if target.name == 'prod' else 'marts__' ~ target.name }}\"", "marts"
        )
    )
    with Workspace.open(copy_of_recorded, target="dev") as ws:
        rows = ws.state.conn.execute("SELECT COUNT(*) FROM evidence_versions").fetchone()[0]
        with pytest.raises(EnvironmentRefusedError) as info:
            make_plan(ws, "finance:*")
        err = info.value
        assert err.node.startswith("finance:source:pricing.")
        assert err.relation is not None and err.relation.startswith("warehouse.marts.")
        assert err.relation in err.message and "refused before anything runs" in err.message
        assert err.fix
        # nothing was observed or written before the refusal
        assert ws.state.conn.execute("SELECT COUNT(*) FROM evidence_versions").fetchone()[0] == rows
        # prod reads prod: fine
    with Workspace.open(copy_of_recorded, target="prod") as ws:
        assert make_plan(ws, "finance:*").target == "prod"


def _memoised(plan: Plan) -> bool:
    return "memo" in plan.timings and any("that plan is reused" in w for w in plan.warnings)


def test_a_noop_plan_is_given_again_without_loading_the_tools(copy_of_recorded: Path) -> None:
    with Workspace.open(copy_of_recorded) as ws:
        first = make_plan(ws)
    assert not first.to_build and not _memoised(first)
    with Workspace.open(copy_of_recorded) as ws:
        again = make_plan(ws)
        assert ws._graph is None and not ws._providers  # neither dbt nor SQLMesh was loaded
    assert _memoised(again)
    assert {n: (d.action, d.because) for n, d in again.decisions.items()} == {
        n: (d.action, d.because) for n, d in first.decisions.items()
    }
    with Workspace.open(copy_of_recorded) as ws:
        assert not _memoised(make_plan(ws, fresh=True))
        # a later clock, when a SQLMesh interval falls due, plans from scratch
        due = make_plan(ws, execution_time="2026-10-02")
        assert not _memoised(due)
        assert due.decisions["pricing:marts.agg_gmv_daily"].action == "build"
    # a changed file of a project plans from scratch
    sql = copy_of_recorded / "finance" / "models" / "marts" / "fct_gmv_qtd.sql"
    sql.write_text(sql.read_text() + "\n-- quarter to date\n")
    with Workspace.open(copy_of_recorded) as ws:
        changed = make_plan(ws)
    assert not _memoised(changed)
    assert changed.decisions["finance:fct_gmv_qtd"].action == "build"


def test_sqlmesh_state_changed_by_hand_is_seen_through_the_memo(copy_of_recorded: Path) -> None:
    with Workspace.open(copy_of_recorded) as ws:
        assert not make_plan(ws).to_build  # remembered
    from sqlmesh import Context

    ctx = Context(paths=str(copy_of_recorded / "pricing"))
    try:
        ctx.run("prod", execution_time="2026-10-02")  # someone runs SQLMesh by hand
    finally:
        ctx.close()
    with Workspace.open(copy_of_recorded) as ws:
        plan = make_plan(ws)  # the demo's own clock: the memo would still be in time
    assert not _memoised(plan)
    assert plan.decisions["finance:stg_gmv_daily"].action == "build"


@pytest.mark.parametrize(
    ("selection", "when"),
    [
        (None, "2026-10-01"),
        (None, "2026-10-03"),
        (["pricing:marts.agg_gmv_daily"], "2026-10-03"),  # upstream backfilled first
    ],
)
def test_sqlmesh_view_read_from_state_equals_sqlmesh_own_plan(
    copy_of_recorded: Path, selection: list[str] | None, when: str
) -> None:
    """With no local change, the view is read from SQLMesh's state instead of building
    SQLMesh's plan: it must say exactly what SQLMesh's own plan says."""
    from splice.plan.sqlmesh_view import (
        environment_state,
        plan_view,
        resolve_execution_time,
    )

    with Workspace.open(copy_of_recorded) as ws:
        et = resolve_execution_time(ws, when)
        ids = selection or sorted(SQLMESH_MODELS)
        state = environment_state(ws, "pricing", execution_time=et)
        fast = plan_view(ws, "pricing", ids, execution_time=et, state=state)
        built = plan_view(ws, "pricing", ids, execution_time=et)  # SQLMesh's plan builder
    assert all(v.tool_view.get("from_state") for v in fast.nodes.values())
    assert not any(v.tool_view.get("from_state") for v in built.nodes.values())

    def said(view):  # type: ignore[no-untyped-def]
        return {
            n: (
                v.action,
                [r.text for r in v.reasons],
                v.tool_view["missing_intervals"],
                v.tool_view["missing_interval_count"],
                v.changes_data,
            )
            for n, v in view.nodes.items()
        }

    assert said(fast) == said(built)
    assert fast.also_backfilled == built.also_backfilled
    if selection and when == "2026-10-03":
        assert set(fast.also_backfilled) == {
            "pricing:fx.daily_rates",
            "pricing:marts.fct_bookings_usd",
        }
    assert fast.new_environment == built.new_environment is False
