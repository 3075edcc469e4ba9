"""The demo's rates feed run by a real Airflow 3 (``airflow standalone`` on 127.0.0.1, started
by Splice for ``[ingestion.airflow] local``): the DAG's runs are incident evidence; the repair's
reload is a DAG run with the days in its conf (its run id in the journal and the receipt); a
run that fails in Airflow fails the step and the undo puts the rows back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.orchestrators.orchestrator_support import (
    FX,
    cli,
    fx_rows,
    one_watch_per_orchestrator_run,
    orchestrator_run,
)
from tests.repair.principals_support import approve_everywhere, as_principal

from splice.demo.story import StoryResult

pytestmark = pytest.mark.orchestrators

SYSTEM = "airflow"  # the orchestrator of this module's fixtures (conftest.py)


def test_the_dag_is_in_the_graph_and_its_runs_are_incident_evidence(story: StoryResult) -> None:
    ws = story.build.workspace
    node = json.loads(cli(ws, "show", FX, "--json").stdout)
    assert node["tool"] == "airflow" and node["writes"] == "warehouse.raw.fx_rates"
    assert node["orchestrator"]["link"].endswith("/dags/fx_rates_ingest")
    shown = cli(ws, "incident", "show", story.incidents[0].incident_id, "--json")
    assert shown.exit_code == 0, shown.output
    orch = json.loads(shown.stdout)["diagnosis"]["source"]["orchestrator"]
    assert orch["system"] == "airflow" and not orch.get("error")
    morning = [r for r in orch["runs"] if "demo: the morning load" in r["tags"].get("note", "")]
    assert morning and morning[0]["status"] == "SUCCESS"  # it succeeded, on frozen rates


def test_the_repair_reload_is_an_airflow_run_named_in_the_journal_and_receipt(
    copy: Path,
) -> None:
    from splice.demo.story import tell_repair

    fixed = tell_repair(copy, "INC-1")
    p, res = fixed.proposal, fixed.applied
    spec = p.steps[0].detail["orchestrator"]
    assert spec["system"] == "airflow" and spec["runs"][0]["run_config"]["conf"] == {
        "start": "2026-09-28", "end": "2026-09-29"}  # fmt: skip
    assert res.run.ok and res.verification.passed
    assert all(d == a for d, _c, _r, a in fx_rows(copy))  # the days carry their own rates now
    run_id = res.run.nodes[FX].external[0]["run_id"]
    assert run_id.startswith(f"splice__{p.proposal_id}__")
    assert orchestrator_run(copy, run_id).status == "SUCCESS"
    receipt = json.loads(cli(copy, "receipt", p.proposal_id, "--json").stdout)
    ext = receipt["runs"][0]["orchestrator_runs"][0]
    assert ext["run_id"] == run_id and ext["url"].endswith(f"/dags/fx_rates_ingest/runs/{run_id}")


def test_a_run_that_fails_in_airflow_fails_the_step_and_the_undo_puts_rows_back(
    copy: Path,
) -> None:
    from splice.demo.vendor import settings_path
    from splice.repair import store
    from splice.repair.flow import apply, propose
    from splice.workspace.core import Workspace

    before = fx_rows(copy)
    settings_path(copy).write_text(json.dumps({"incident": "broken", "freeze": {
        "from": "2026-09-28", "to": "2026-09-29", "serve_as_of": "2026-09-27"}}))  # fmt: skip
    with Workspace.open(copy) as ws:
        p = propose(ws, "INC-1", principal=as_principal("splice-agent"))
        approve_everywhere(ws, p.proposal_id, "maria")  # and lee, for finance
        done = apply(ws, p.proposal_id, principal=as_principal("maria"))
        assert not done.run.ok
        msg = done.run.nodes[FX].message or ""
        assert re.search(r"airflow run splice__PR-1__\w+ FAILURE: task\(s\) load failed", msg), msg
        assert store.load(ws.state, p.proposal_id).status == "undone"
    assert fx_rows(copy) == before  # the undo put back exactly what was there


def test_an_airflow_run_of_the_feed_triggers_one_watch_across_restarts(copy: Path) -> None:
    one_watch_per_orchestrator_run(copy)
