"""Never "verified" while damage remains: the scope follows the damage as it lands, verification
recomputes every node from the repaired inputs, and the fault's own test judges the origin.

On the real stack (dlt, SQLMesh, dbt, DuckDB), with the Friday freeze (Thursday's rates served
for Friday 2026-09-25: Friday's, Saturday's and Sunday's bookings convert at it) and the
stale-rates story (Friday's rates served on Monday and Tuesday 2026-09-28/29).
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
from friday_support import FridayStory, give_node_scope
from principals_support import approve_everywhere, as_principal

from splice.demo import relocate

FRI, SAT, SUN = "2026-09-25", "2026-09-26", "2026-09-27"
BOOKINGS = "pricing:marts.fct_bookings_usd"
RATES = "pricing:fx.daily_rates"


@pytest.fixture
def friday(friday_story: FridayStory) -> FridayStory:
    """The Friday freeze up to its incident (the session's, read-only: copy it)."""
    return friday_story


def _copy(src: Path, dest: Path, *, fixed: bool = True) -> Path:
    from splice.demo.vendor import set_incident

    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)
    if fixed:
        set_incident(dest, None)  # the vendor fixed its feed
    return dest


def _incident(friday: FridayStory) -> str:
    (inc,) = friday.watch.incidents
    return str(inc.incident_id)


def _nodes(diagnosis: dict[str, Any]) -> dict[str, list[str]]:
    return {n["node"]: n["intervals"] for n in (diagnosis.get("scope") or {}).get("nodes") or []}


def _set_scope(ws: Any, incident_id: str, nodes: dict[str, list[str]], **extra: Any) -> None:
    """Write the incident's per-node scope as an earlier diagnosis left it."""
    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
    diag = dict(inc.diagnosis)
    scope = dict(diag.get("scope") or {})
    for n in scope.get("nodes") or []:
        if n["node"] in nodes:
            n["intervals"] = nodes[n["node"]]
            n["ranges"] = [[nodes[n["node"]][0], nodes[n["node"]][-1]]]
    scope.update(extra)
    diag["scope"] = scope
    with ws.state.transaction() as conn:
        conn.execute("UPDATE incidents SET diagnosis = ? WHERE incident_id = ?",
                     (json.dumps(diag), incident_id))  # fmt: skip


def _repair(ws: Any, incident_id: str) -> Any:
    """Propose (the agent), approve (every domain's owner), apply: the applied result."""
    from splice import api

    p = api.propose(ws, incident_id, principal=as_principal("splice-agent"))
    approve_everywhere(ws, p.proposal_id, "maria")
    res = api.apply(ws, p.proposal_id, principal=as_principal("maria"))
    assert res.run.ok, res.run.summary()
    return res


def _cli(ws: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from splice.cli.main import cli, register_commands

    register_commands()
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def test_the_scope_is_derived_again_as_the_weekend_lands(friday: FridayStory, tmp_path: Path
                                                         ) -> None:  # fmt: skip
    """The diagnosis made on Friday listed Friday's bookings only (the weekend was not built);
    the next watch derives the scope again from the data as it is now: the weekend joins it."""
    from splice import api
    from splice.watch.incidents import get_incident

    ws_dir = _copy(friday.workspace, tmp_path / "travel", fixed=False)
    inc = _incident(friday)
    with api.open_workspace(ws_dir) as ws:
        give_node_scope(ws, inc)
        # as Friday's watch left it: the weekend not built yet, the scope seen through Friday
        _set_scope(ws, inc, {BOOKINGS: [FRI], "pricing:marts.agg_gmv_daily": [FRI]},
                   through=FRI, derived_at=0.0)  # fmt: skip
        api.watch(ws)
        diag = get_incident(ws.state.conn, inc).diagnosis
    nodes = _nodes(diag)
    assert nodes[BOOKINGS] == [FRI, SAT, SUN], nodes
    assert nodes["pricing:marts.agg_gmv_daily"] == [FRI, SAT, SUN]
    assert nodes[RATES] == [FRI]
    assert diag["scope"]["through"] >= SUN and diag["scope"]["derived_at"] > 0
    assert diag["fault"]["class"] == "stopped_moving"  # the class is kept
    shown = _cli(ws_dir, "incident", "show", inc)
    assert shown.exit_code == 0, shown.output
    assert "derived" in shown.output  # when the scope was derived, and on what


def test_recomputation_catches_a_repair_that_left_a_day_wrong(friday: FridayStory,
                                                              tmp_path: Path) -> None:  # fmt: skip
    """A scope that forgot Sunday: the repair restates Friday and Saturday, every old check
    passes, but Sunday's bookings still convert at the frozen rate.  Recomputing the bookings
    mart from the repaired rates finds Sunday, names it with example rows, keeps the incident
    open with Sunday in its scope; the follow-up proposal covers it and is verified."""
    from splice import api
    from splice.watch.incidents import get_incident

    ws_dir = _copy(friday.workspace, tmp_path / "travel")
    inc = _incident(friday)
    with api.open_workspace(ws_dir) as ws:
        give_node_scope(ws, inc)
        _set_scope(ws, inc, {BOOKINGS: [FRI, SAT], "pricing:marts.agg_gmv_daily": [FRI, SAT]})
        v = _repair(ws, inc).verification
        assert not v.passed, v.summary
        by_node = {n["node"]: n for n in v.recomputed["nodes"]}
        assert list(by_node[BOOKINGS]["differ"]) == [SUN], by_node[BOOKINGS]
        assert by_node[BOOKINGS]["examples"]["only in production"][0]["booking_date"] == SUN
        assert by_node[RATES]["differ"] == {}
        assert f"{BOOKINGS} differs from its rebuild on {SUN}" in v.summary
        i = get_incident(ws.state.conn, inc)
        assert i.status == "open"
        assert SUN in _nodes(i.diagnosis)[BOOKINGS]
        # the follow-up covers Sunday, and only then is the repair verified
        p2 = api.propose(ws, inc, principal=as_principal("splice-agent"))
        assert SUN in {d for n in p2.scope["nodes"] if n["node"] == BOOKINGS
                       for d in n["intervals"]}  # fmt: skip
        approve_everywhere(ws, p2.proposal_id, "maria")
        res2 = api.apply(ws, p2.proposal_id, principal=as_principal("maria"))
        assert res2.verification.passed, res2.verification.summary
        assert "production equals the rebuild on every interval" in res2.verification.summary
        assert get_incident(ws.state.conn, inc).status == "resolved"
        receipt = api.receipt(ws, p2.proposal_id)
    md = api.receipt_markdown(receipt)
    assert "Recomputed from the repaired inputs" in md and "Recomputation cost:" in md


def test_the_faults_own_test_fails_a_reload_that_fetched_the_frozen_day_again(
    stale_story: Any, tmp_path: Path
) -> None:
    """The vendor is fixed for Monday but still serves Friday's rates for Tuesday when the
    repair reloads: Tuesday no longer repeats the day before (Monday moved), so the detectors
    are content, and recomputation agrees with the reloaded rows; the fault's own test does
    not: Tuesday still holds Friday's values.  ``splice verify`` says so again, and passes once
    the vendor is honest and the follow-up repair has run."""
    from splice import api
    from splice.demo.layout import VENDOR_FILE
    from splice.demo.vendor import INCIDENTS
    from splice.watch.incidents import get_incident

    ws_dir = _copy(stale_story.build.workspace, tmp_path / "travel", fixed=False)
    half = json.loads(json.dumps(INCIDENTS["stale-rates"]))
    half["freeze"]["from"] = "2026-09-29"  # Monday fixed, Tuesday still frozen
    (ws_dir / VENDOR_FILE).write_text(json.dumps(half))
    with api.open_workspace(ws_dir) as ws:
        res = _repair(ws, "INC-1")
        p, v = res.proposal, res.verification
        assert not v.passed, v.summary
        failed = {f["interval"]: f for f in v.fault_test["failed"]}
        assert list(failed) == ["2026-09-29"], v.fault_test["failed"]
        assert failed["2026-09-29"]["still"] >= failed["2026-09-29"]["series"] // 2
        assert "the fault's own test still fails on 2026-09-29" in v.summary
        assert get_incident(ws.state.conn, "INC-1").status == "open"
    again = _cli(ws_dir, "verify", p.proposal_id, "--as", "maria", "--json")
    assert again.exit_code == 1, again.output
    out = json.loads(again.stdout)
    assert [f["interval"] for f in out["verification"]["fault_test"]["failed"]] == ["2026-09-29"]
    # the vendor is honest now: the follow-up repair is verified, and so is the first again
    from splice.demo.vendor import set_incident

    set_incident(ws_dir, None)
    with api.open_workspace(ws_dir) as ws:
        p2 = api.propose(ws, "INC-1", principal=as_principal("splice-agent"))
        approve_everywhere(ws, p2.proposal_id, "maria")
        res2 = api.apply(ws, p2.proposal_id, principal=as_principal("maria"))
        assert res2.verification.passed, res2.verification.summary
    bad = _cli(ws_dir, "verify", "PR-404", "--as", "maria")
    assert bad.exit_code == 2 and "PR-404" in bad.output


def test_verify_refuses_a_proposal_that_is_not_applied(story_copy: Path) -> None:
    from splice import api

    with api.open_workspace(story_copy) as ws:
        p = api.propose(ws, "INC-1", principal=as_principal("splice-agent"))
    r = _cli(story_copy, "verify", p.proposal_id, "--as", "maria")
    assert r.exit_code == 2
    assert f"proposal {p.proposal_id} is pending: only an applied repair is verified" in r.output
    assert "splice approve" in r.output


def test_recompute_compares_numbers_to_ten_digits(tmp_path: Path) -> None:
    """The comparison itself: a double summed in another order is equal; a cent is not."""
    from sqlglot import parse_one

    from splice.graph.relations import parse_relation
    from splice.repair.recompute import compare

    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.t AS SELECT DATE '2026-09-25' + CAST(i AS INT) AS d, CAST(0.1 AS DOUBLE) * 3 AS x, "
                "CAST(1.00 AS DECIMAL(18, 2)) AS m FROM range(3) r(i)")  # fmt: skip
    same = parse_one("SELECT DATE '2026-09-25' + CAST(i AS INT) AS d, CAST(0.3 AS DOUBLE) AS x, CAST(1.00 AS DECIMAL(18, 2)) "
                     "AS m FROM range(3) r(i)", dialect="duckdb")  # fmt: skip
    rel = parse_relation("s.t")
    assert con.execute("SELECT x = 0.3 FROM s.t LIMIT 1").fetchone() == (False,)  # not equal bits
    ok = compare(con, "n", rel, same, "d", date(2026, 9, 25), date(2026, 9, 27), "duckdb")
    assert ok.ok and ok.rows_prod == 3 == ok.rows_fresh
    off = parse_one("SELECT DATE '2026-09-25' + CAST(i AS INT) AS d, CAST(0.3 AS DOUBLE) AS x, CAST(CASE WHEN i = 1 THEN 1.01 "
                    "ELSE 1.00 END AS DECIMAL(18, 2)) AS m FROM range(3) r(i)", dialect="duckdb")  # fmt: skip
    bad = compare(con, "n", rel, off, "d", date(2026, 9, 25), date(2026, 9, 27), "duckdb")
    assert bad.differ == {"2026-09-26": 2}
    assert bad.examples["only in production"][0]["m"] == 1.0
    assert bad.examples["only in rebuild"][0]["m"] == 1.01
