"""`splice run` on the demo with the real tools: a clean run, the journal, a no-op run."""

from __future__ import annotations

import json
from pathlib import Path

from run_support import attempts, query, run_in, runs_json, splice_cli, versions

FINANCE_MODELS = {
    "finance:currency_regions",
    "finance:metricflow_time_spine",  # the semantic layer's calendar (a table)
    "finance:stg_gmv_daily",
    "finance:fct_gmv_qtd",
    "finance:fct_gmv_by_currency",
    "finance:fct_gmv_by_channel",
}


def test_clean_run_then_noop_run(fresh_demo: Path) -> None:
    # The demo was built through `splice run`: its evidence is there, so a run builds nothing
    # (and loads no tool: the demo's run remembered its no-op plan)
    nothing = run_in(fresh_demo)
    assert nothing.ok and nothing.segments == [] and nothing.nodes == {}
    # every finance node rebuilt on purpose (as `dbt build` would), in dbt's segment only
    first = run_in(fresh_demo, "finance:*", full=True)
    assert first.ok, first.to_dict()
    assert set(first.built) == FINANCE_MODELS
    assert not first.failed_nodes and not first.skipped_nodes
    assert all(c.status == "pass" for c in first.checks.values()) and len(first.checks) == 16
    assert {s.format for s in first.segments} == {"dbt"}
    assert {s.method for s in first.segments} == {"dbt build"}
    assert set(versions(fresh_demo)) >= FINANCE_MODELS
    assert {versions(fresh_demo)[n] for n in FINANCE_MODELS} == {2}  # the demo's build was 1
    assert {attempts(fresh_demo)[n] for n in FINANCE_MODELS} == {"succeeded"}
    assert query(fresh_demo, "SELECT COUNT(*) FROM finance.fct_gmv_qtd") == [(92,)]
    seed = first.nodes["finance:currency_regions"]
    assert seed.rows == 30  # dbt-duckdb reports rows for seeds (adapter_response)

    # nothing changed: the next run builds nothing (and remembers that), the one after it
    # loads no tool (the remembered plan)
    before = versions(fresh_demo)
    second = run_in(fresh_demo)
    assert second.ok and second.segments == [] and second.nodes == {}
    assert versions(fresh_demo) == before  # no version moved
    third = run_in(fresh_demo)
    assert third.ok and third.nodes == {}
    assert any("that plan is reused without loading the tools" in n for n in third.notes)

    # the journal plays both back, through the CLI
    runs = runs_json(fresh_demo)
    assert [r["run_id"] for r in runs[:4]] == [
        third.run_id,
        second.run_id,
        first.run_id,
        nothing.run_id,
    ]
    assert runs[2]["status"] == "success" and runs[2]["summary"]["counts"]["success"] == 6
    shown = splice_cli("runs", "show", first.run_id, "--json", cwd=fresh_demo)
    assert shown.returncode == 0, shown.stderr
    events = json.loads(shown.stdout)["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"segment_started", "node_started", "node_finished", "check_finished"} <= set(kinds)
    finished = {e["node_id"]: e for e in events if e["kind"] == "node_finished"}
    assert set(finished) == FINANCE_MODELS
    assert all(e["project"] == "finance" and e["duration"] is not None for e in finished.values())
    assert all(
        e["project"] for e in events if e["kind"] != "run_started" and e["kind"] != "run_finished"
    )
    # node_finished comes after its node_started, and only once its evidence is committed
    seqs = {(e["kind"], e["node_id"]): e["seq"] for e in events}
    assert all(seqs[("node_started", n)] < seqs[("node_finished", n)] for n in FINANCE_MODELS)
    assert all("version" in e["data"] for e in finished.values())
    text = splice_cli("runs", cwd=fresh_demo)
    assert text.returncode == 0 and first.run_id in text.stdout and "success" in text.stdout


def test_noop_after_a_run_loads_no_tool_and_an_edit_during_the_run_is_not_hidden(
    fresh_demo: Path,
) -> None:
    from splice.api import run
    from splice.run.runner import make_run_plan, run_plan, run_session
    from splice.workspace.core import Workspace

    sql = fresh_demo / "finance" / "models" / "marts" / "fct_gmv_qtd.sql"
    sql.write_text(sql.read_text() + "\n-- edited before the run\n")
    with Workspace.open(fresh_demo) as ws, run_session(ws, command="test") as session:
        plan, who = make_run_plan(ws, None)
        assert "finance:fct_gmv_qtd" in plan.to_build
        sql.write_text(sql.read_text() + "\n-- edited while the run went on\n")
        report = run_plan(ws, plan, session=session, planner=who)
    assert report.ok, report.to_dict()
    # the edit is seen: the next run plans from scratch and builds the edited model
    again = run_in(fresh_demo)
    assert again.ok and set(again.built) == {"finance:fct_gmv_qtd"}
    assert not any("that plan is reused" in n for n in again.notes)
    # that run remembered its no-op plan: the next one loads neither dbt nor SQLMesh
    with Workspace.open(fresh_demo) as ws:
        third = run(ws)
        assert ws._graph is None and not ws._providers
    assert third.ok and third.nodes == {}
    assert any("that plan is reused" in n for n in third.notes)


UNIT_TEST = """
unit_tests:
  - name: stg_gmv_daily_passes_rows_through
    model: stg_gmv_daily
    given:
      - input: source('pricing', 'agg_gmv_daily')
        rows:
          - {booking_date: 2026-07-01, currency: EUR, bookings: 1, gmv_local: 10.0, gmv_usd: 11.0}
    expect:
      rows:
        - {booking_date: 2026-07-01, currency: EUR, bookings: 1, gmv_local: 10.0, gmv_usd: 11.0}
"""


def test_dbt_runs_exactly_the_planned_nodes_with_or_without_a_selection(fresh_demo: Path) -> None:
    # every finance node is planned: dbt is given no --select, and runs nothing else
    first = run_in(fresh_demo, "finance:*", full=True)
    assert first.ok and set(first.built) == FINANCE_MODELS
    assert not [n for s in first.segments for n in s.notes if "not planned" in n]
    # a unit test Splice does not plan: dbt must not run it either
    (fresh_demo / "finance" / "models" / "unit_tests.yml").write_text(UNIT_TEST)
    again = run_in(fresh_demo, "finance:*", full=True)
    assert again.ok, again.to_dict()
    assert set(again.built) == FINANCE_MODELS
    assert not [n for s in again.segments for n in s.notes if "not planned" in n]
    # part of the project: one exact selector per node
    part = run_in(fresh_demo, "finance:fct_gmv_qtd+", full=True)
    assert part.ok and set(part.built) == {"finance:fct_gmv_qtd"}
    assert not [n for s in part.segments for n in s.notes if "not planned" in n]
