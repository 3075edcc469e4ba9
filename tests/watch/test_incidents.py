"""Incidents: the demo's stale-rates story end to end, and the grouping rules on real state."""

from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from tests.cli_runner import run_cli
from tests.story_support import assert_stale_rates_diagnosed

from splice.demo.story import StoryResult
from splice.state.store import StateStore
from splice.watch.incidents import get_incident, list_incidents, update_incidents


@pytest.fixture(scope="module")
def story(stale_story: StoryResult) -> StoryResult:
    """The session's story (read only: a test that watches again works on a copy)."""
    return stale_story


def splice(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(ws), *args])


def test_the_story_opens_one_incident_on_mondays_data(story: StoryResult) -> None:
    # the clean quarter raised nothing, and every audit and test of the bad days passed
    assert story.baseline_points > 10_000 and story.baseline_anomalies == 0
    assert story.run.ok and not story.run.failed_checks
    assert story.run.counts().get("checks_pass", 0) >= 20
    assert len(story.incidents) == 1
    inc = story.incidents[0]
    assert inc.status == "open" and inc.first_interval == date(2026, 9, 28)
    # every anomaly of this watch is in the one incident
    assert inc.anomalies == len(story.watch.anomalies) > 50

    d = inc.diagnosis
    assert d["origin"]["node"] == "pricing:fx.daily_rates"
    assert "rate_to_usd" in d["origin"]["columns"]
    path = [f"{s['node']}.{s['column']}" for s in d["path"]]
    assert path == [
        "pricing:marts.agg_gmv_daily.gmv_usd",
        "pricing:marts.fct_bookings_usd.amount_usd",
        "pricing:fx.daily_rates.rate_to_usd",
        "ingestion:fx_rates_ingest.rate_to_usd",
    ]
    assert d["path"][-1]["relation"] == "warehouse.raw.fx_rates"
    # the cause outside the project: the load succeeded, the payload's as-of is Friday's
    src = d["source"]
    assert src["node"] == "ingestion:fx_rates_ingest" and src["runner"] == "dlt"
    assert src["loads"] and all(ld["succeeded"] for ld in src["loads"])
    as_of = {
        x["interval"]: x["oldest"] for p in src["payload_dates"] for x in p["days"] if x["stale"]
    }
    assert as_of == {"2026-09-28": "2026-09-25", "2026-09-29": "2026-09-25"}
    assert "succeeded" in d["cause"] and "2026-09-25 (Fri)" in d["cause"]
    # the fault is named first, with its numbers: which day's values repeat, how long
    assert d["fault"]["class"] == "stopped_moving" and d["fault"]["n"] == 2
    assert d["fault"]["evidence"]["same_as"] == "2026-09-25"
    assert d["cause"].startswith(
        "Stopped moving: 29 of 29 series repeat 2026-09-25 (Fri)'s values on 2026-09-28 (Mon), "
        "2026-09-29 (Tue) (2 intervals in a row). fx_rates_ingest ran and succeeded"
    )
    # blast radius: both SQLMesh marts, the dbt finance models, every dashboard
    blast = d["blast_radius"]
    nodes = {n["node"] for n in blast["nodes"]}
    assert {"pricing:marts.fct_bookings_usd", "pricing:marts.agg_gmv_daily"} <= nodes
    assert {"finance:stg_gmv_daily", "finance:fct_gmv_qtd", "finance:fct_gmv_by_currency",
            "finance:fct_gmv_by_channel"} <= nodes  # fmt: skip
    assert {x["node"] for x in blast["dashboards"]} == {
        "dashboards:pricing_ops", "finance:exposure:gmv_usd_dashboard", "finance:exposure:q3_close",
    }  # fmt: skip
    assert {m["name"] for m in blast["metrics"]} == {"gmv_usd", "gmv_semantic", "fx_rate"}
    envs = {(e["project"], e["environment"]) for e in blast["environments"]}
    assert ("pricing", "prod") in envs and ("finance", "prod") in envs
    # the scope: exactly the stale days
    assert d["scope"]["start"] == "2026-09-28" and d["scope"]["end"] == "2026-09-29"
    assert d["scope"]["intervals"] == ["2026-09-28", "2026-09-29"]


def test_the_story_finds_what_it_finds_on_every_warehouse(story: StoryResult) -> None:
    assert_stale_rates_diagnosed(story, "duckdb")


def test_incidents_cli_lists_and_shows_the_diagnosis(story: StoryResult) -> None:
    ws = story.build.workspace
    listed = splice(ws, "incidents", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == [story.incidents[0].incident_id]

    shown = splice(ws, "incident", "show", rows[0]["id"].lower(), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["diagnosis"]["scope"]["end"] == "2026-09-29"

    text = splice(ws, "incident", "show", rows[0]["id"])
    assert text.returncode == 0, text.stderr
    for words in ("Where it starts: pricing:fx.daily_rates", "Cause: Stopped moving: 29 of 29",
                  "Blast radius", "Q3 close", "Scope: 2026-09-28..2026-09-29"):  # fmt: skip
        assert words in text.stdout, text.stdout

    missing = splice(ws, "incident", "show", "INC-99")
    assert missing.returncode == 2
    assert "no incident 'INC-99'" in missing.stderr and rows[0]["id"] in missing.stderr


def test_watching_again_does_not_open_another_incident(story: StoryResult, tmp_path: Path) -> None:
    import shutil

    from splice.demo import relocate
    from splice.watch.service import watch
    from splice.workspace.core import Workspace

    ws_dir = tmp_path / "travel"
    shutil.copytree(story.build.workspace, ws_dir, symlinks=True)
    relocate(ws_dir)
    first = story.incidents[0].incident_id
    with Workspace.open(ws_dir) as ws:
        again = watch(ws)
        assert again.points == 0 and again.incidents == []
        # a backfill judges everything afresh: the same incident continues, no new one
        full = watch(ws, backfill=True)
        assert [i.incident_id for i in full.incidents] == [first]
        assert [i.incident_id for i in list_incidents(ws.state.conn, "prod")] == [first]


# -- grouping on a real state, with the diagnosis left out ---------------------------------------
def _anomaly(conn: Any, sid: int, node: str, day: str, metric: str = "m") -> None:
    conn.execute(
        "INSERT INTO watch_anomalies (series_id, target, metric, node_id, dims, interval_start, "
        "detector, direction, value, expected, score, reason, data, watch_id, detected_at) "
        "VALUES (?, 'prod', ?, ?, '{}', ?, 'spike', 'up', 1, 0, 5, 'r', '{}', 'w', 0)",
        (sid, metric, node, day),
    )


def test_grouping_joins_related_nodes_and_days_and_extends_open_incidents(tmp_path: Path) -> None:
    store = StateStore.open(tmp_path / "state.db")
    conn = store.conn
    nodes = ["p:fx", "p:mart", "q:other"]
    for i, n in enumerate(nodes, 1):
        conn.execute(
            "INSERT INTO watch_series (series_id, target, metric, spec, node_id, kind, dims, "
            "created_at) VALUES (?, 'prod', ?, 's', ?, 'value', '{}', 0)",
            (i, f"m{i}", n),
        )
    related = lambda a, b: a == b or {a, b} == {"p:fx", "p:mart"}  # noqa: E731
    seen: list[str] = []

    def diag(inc: str, anomalies: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append(inc)
        return {"title": f"{len(anomalies)} anomalies", "origin": {"node": "p:fx"}}

    _anomaly(conn, 1, "p:fx", "2026-09-28")
    _anomaly(conn, 2, "p:mart", "2026-09-29")
    _anomaly(conn, 3, "q:other", "2026-09-28")  # same day, unrelated node: its own incident
    _anomaly(conn, 1, "p:fx", "2026-10-20")  # the same node three weeks later: its own
    made = update_incidents(conn, "prod", related, diag, transaction=store.transaction)
    assert sorted((i.incident_id, i.anomalies) for i in made) == [
        ("INC-1", 2), ("INC-2", 1), ("INC-3", 1),
    ]  # fmt: skip
    fx = next(i for i in made if i.anomalies == 2)
    assert (fx.first_interval, fx.last_interval) == (date(2026, 9, 28), date(2026, 9, 29))

    # nothing new: nothing is diagnosed again
    seen.clear()
    assert update_incidents(conn, "prod", related, diag, transaction=store.transaction) == []
    assert seen == []

    # an anomaly on the mart three days later continues the open incident
    _anomaly(conn, 2, "p:mart", "2026-10-02")
    again = update_incidents(conn, "prod", related, diag, transaction=store.transaction)
    assert [(i.incident_id, i.anomalies) for i in again] == [(fx.incident_id, 3)]
    assert get_incident(conn, fx.incident_id).last_interval == date(2026, 10, 2)
    store.close()
