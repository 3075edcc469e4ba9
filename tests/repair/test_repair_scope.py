"""The repair covers the whole damage, per node, and verification measures all of it.

A Friday freeze (the vendor re-serves Thursday's rates for Friday 2026-09-25) damages Friday's
rates, and through the as-of join Friday's, Saturday's and Sunday's bookings and GMV.  With the
real tools: the proposal restates the rates for Friday only and the bookings mart (with the GMV
mart through SQLMesh's cascade) for the weekend too; verification measures the weekend; a repair
restricted to Friday is not verified; a mart left wrong after the repaired scope keeps the
incident open (production differs from its rebuild there) until a follow-up repairs it.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
from friday_support import FridayStory, give_node_scope, strip_node_scope
from principals_support import approve_everywhere, as_principal

from splice.demo import relocate

FRI, SAT, SUN, MON = (date(2026, 9, d) for d in (25, 26, 27, 28))


@pytest.fixture
def friday(friday_story: FridayStory) -> FridayStory:
    """The Friday freeze up to its incident (the session's, read-only: copy it)."""
    return friday_story


def _copy(story: FridayStory, dest: Path) -> Path:
    from splice.demo.vendor import set_incident

    shutil.copytree(story.workspace, dest, symlinks=True)
    relocate(dest)
    set_incident(dest, None)  # the vendor fixed its feed
    return dest


def _query(ws: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _gmv(ws: Path) -> dict[date, float]:
    return dict(_query(ws, "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily "
                           "GROUP BY 1"))  # fmt: skip


def _cli(ws: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from splice.cli.main import cli, register_commands

    register_commands()
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def _incident(friday: FridayStory) -> str:
    assert len(friday.watch.incidents) == 1
    inc = friday.watch.incidents[0]
    assert inc.diagnosis["origin"]["node"] == "pricing:fx.daily_rates"
    return str(inc.incident_id)


def test_a_friday_freeze_is_restated_over_the_weekend_and_verified_there(
    friday: FridayStory, tmp_path: Path
) -> None:
    from splice.repair.flow import apply
    from splice.workspace.core import Workspace

    ws_dir = _copy(friday, tmp_path / "travel")
    inc = _incident(friday)
    before = _gmv(ws_dir)
    with Workspace.open(ws_dir) as ws:
        give_node_scope(ws, inc)  # what the diagnosis lists per node (kept when it does)
    r = _cli(ws_dir, "propose", inc, "--as", "splice-agent", "--json")
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)

    # the rates for Friday only; the bookings mart for the weekend beyond SQLMesh's cascade
    restate = next(s for s in p["steps"] if s["kind"] == "restate")
    done = [(x["node"], x["start"], x["end"]) for x in restate["detail"]["restatements"]]
    assert done == [("pricing:fx.daily_rates", "2026-09-25", "2026-09-25"),
                    ("pricing:marts.fct_bookings_usd", "2026-09-26", "2026-09-27")]  # fmt: skip
    cascade = {(c["node"], c["start"], c["end"]) for x in restate["detail"]["restatements"]
               for c in x["cascade"]}  # fmt: skip
    assert ("pricing:marts.agg_gmv_daily", "2026-09-26", "2026-09-27") in cascade
    assert not any(n == "pricing:fx.daily_rates" and s != "2026-09-25" for n, s, _ in cascade)
    assert any("--restate-model marts.fct_bookings_usd --start 2026-09-26 --end 2026-09-27" in c
               for c in p["commands"])  # fmt: skip
    # the proposal lists every node's damaged intervals and how each is rewritten
    nodes = {n["node"]: n for n in p["scope"]["nodes"]}
    for mart in ("pricing:marts.fct_bookings_usd", "pricing:marts.agg_gmv_daily"):
        assert nodes[mart]["intervals"] == ["2026-09-25", "2026-09-26", "2026-09-27"]
        assert nodes[mart]["rewrites"] == [["2026-09-25", "2026-09-27"]]
        assert "not_rewritten" not in nodes[mart]
        assert 0 < nodes[mart]["rows_scoped"] < nodes[mart]["rows_total"]
    assert nodes["pricing:fx.daily_rates"]["rewrites"] == [["2026-09-25", "2026-09-25"]]
    assert nodes["finance:fct_gmv_qtd"]["rewrites"] == "all"
    # the undo holds every rewritten range before anything runs
    undo = {(u["node_id"], u["start"], u["end"]) for u in p["undo"]}
    assert ("pricing:marts.fct_bookings_usd", "2026-09-25", "2026-09-27") in undo
    assert ("pricing:fx.daily_rates", "2026-09-25", "2026-09-25") in undo
    shown = _cli(ws_dir, "proposals")
    assert shown.exit_code == 0, shown.output

    with Workspace.open(ws_dir) as ws:
        from splice.repair import store
        from splice.repair.render import proposal_lines

        text = "\n".join(proposal_lines(store.load(ws.state, p["proposal_id"])))
        assert ("pricing:marts.fct_bookings_usd: 2026-09-25..2026-09-27; SQLMesh's cascade of "
                "fx.daily_rates 2026-09-25; restated 2026-09-26..2026-09-27") in text  # fmt: skip
        approve_everywhere(ws, p["proposal_id"], "maria")
        res = apply(ws, p["proposal_id"], principal=as_principal("maria"))
        assert res.run.ok, res.run.summary()
        v = res.verification
        assert v.passed, v.summary
        from splice.watch.incidents import get_incident

        assert get_incident(ws.state.conn, inc).status == "resolved"
    # the weekend was measured, and it moved back; nothing else did
    gmv = [f["interval"] for f in v.figures if f["metric"] == "gmv_usd"]
    assert gmv == ["2026-09-25", "2026-09-26", "2026-09-27"]
    after = _gmv(ws_dir)
    assert {d for d in before if before[d] != after[d]} == {FRI, SAT, SUN}
    rates = _query(ws_dir, "SELECT DISTINCT rate_as_of FROM warehouse.marts.fct_bookings_usd "
                           "WHERE booking_date BETWEEN '2026-09-25' AND '2026-09-27'")  # fmt: skip
    assert rates == [(FRI,)]  # every weekend booking converted at Friday's real rate


def test_a_repair_restricted_to_the_origins_days_is_not_verified(
    friday: FridayStory, tmp_path: Path
) -> None:
    """Proposed from the origin's intervals alone (an incident without a per-node scope), the
    repair restates Friday; the weekend stays wrong, and verification says so."""
    from splice.repair.flow import apply, propose
    from splice.workspace.core import Workspace

    ws_dir = _copy(friday, tmp_path / "travel")
    inc = _incident(friday)
    with Workspace.open(ws_dir) as ws:
        give_node_scope(ws, inc)
        removed = strip_node_scope(ws, inc)
        assert removed["nodes"]
        p = propose(ws, inc, principal=as_principal("splice-agent"))
        restate = next(s for s in p.steps if s.kind == "restate")
        assert [x["node"] for x in restate.detail["restatements"]] == ["pricing:fx.daily_rates"]
        give_node_scope(ws, inc)  # the damage as the diagnosis knows it
        approve_everywhere(ws, p.proposal_id, "maria")
        res = apply(ws, p.proposal_id, principal=as_principal("maria"))
        assert res.run.ok
        v = res.verification
        assert not v.passed
        missing = {m["node"]: m["intervals"] for m in v.not_rewritten}
        assert missing["pricing:marts.fct_bookings_usd"] == ["2026-09-26", "2026-09-27"]
        assert {"spec": "gmv_usd", "node": "pricing:marts.agg_gmv_daily",
                "intervals": ["2026-09-26", "2026-09-27"]} in v.unreached  # fmt: skip
        assert "did not rewrite: pricing:marts.fct_bookings_usd 2026-09-26..2026-09-27" in v.summary
        from splice.watch.incidents import get_incident

        assert get_incident(ws.state.conn, inc).status == "open"


def test_a_mart_left_wrong_after_the_repaired_scope_is_never_verified(
    friday: FridayStory, tmp_path: Path
) -> None:
    """Monday's GMV goes wrong too (the mart itself, a second fault) and joins the open
    incident.  The repair of the Friday freeze restates the weekend; recomputing the GMV mart
    from the repaired bookings finds Monday still differs from its rebuild, so it is not
    verified: INC-1 stays open with Monday in its scope, Monday's anomaly is kept in it, and the
    follow-up proposal restates Monday and is verified."""
    from splice.repair.flow import apply, propose
    from splice.watch.incidents import get_incident, incident_anomalies
    from splice.watch.service import watch
    from splice.workspace.core import Workspace

    ws_dir = _copy(friday, tmp_path / "travel")
    inc = _incident(friday)
    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"))
    try:
        (table,) = con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_name LIKE 'marts__agg_gmv_daily__%' AND table_type = 'BASE TABLE'"
        ).fetchone()
        con.execute(f"UPDATE warehouse.{table} SET gmv_usd = gmv_usd * 10 "
                    "WHERE booking_date = '2026-09-28'")  # fmt: skip
    finally:
        con.close()
    with Workspace.open(ws_dir) as ws:
        watch(ws, backfill=True, only=["gmv_usd"])
        on_monday = [a for a in incident_anomalies(ws.state.conn, inc) if a["interval"] == MON]
        assert on_monday and on_monday[0]["metric"] == "gmv_usd"  # filed into the open INC-1
        give_node_scope(ws, inc, force=True)
        p = propose(ws, inc, principal=as_principal("splice-agent"))
        approve_everywhere(ws, p.proposal_id, "maria")
        res = apply(ws, p.proposal_id, principal=as_principal("maria"))
        v = res.verification
        assert not v.passed, v.summary
        assert "pricing:marts.agg_gmv_daily differs from its rebuild on 2026-09-28" in v.summary
        differ = {n["node"]: n["differ"] for n in v.recomputed["nodes"] if n["differ"]}
        assert differ == {"pricing:marts.agg_gmv_daily": {"2026-09-28": 60}}
        conn = ws.state.conn
        old = get_incident(conn, inc)
        assert old.status == "open"
        assert MON in [a["interval"] for a in incident_anomalies(conn, inc)]
        assert v.followup and "kept in INC-1, which stays open" in v.followup
        nodes = {n["node"]: n["intervals"] for n in old.diagnosis["scope"]["nodes"]}
        assert "2026-09-28" in nodes["pricing:marts.agg_gmv_daily"]
        p2 = propose(ws, inc, principal=as_principal("splice-agent"))
        approve_everywhere(ws, p2.proposal_id, "maria")
        res2 = apply(ws, p2.proposal_id, principal=as_principal("maria"))
        assert res2.verification.passed, res2.verification.summary
        assert get_incident(conn, inc).status == "resolved"
    assert _gmv(ws_dir)[MON] == pytest.approx(_gmv(_copy(friday, tmp_path / "x"))[MON])


def test_intervals_a_blocking_audit_left_missing_are_restated_and_name_the_audit(
    friday: FridayStory, tmp_path: Path
) -> None:
    from splice.repair.flow import propose
    from splice.repair.render import proposal_lines
    from splice.watch.incidents import get_incident
    from splice.workspace.core import Workspace

    ws_dir = _copy(friday, tmp_path / "travel")
    inc = _incident(friday)
    with Workspace.open(ws_dir) as ws:
        give_node_scope(ws, inc)
        diag = get_incident(ws.state.conn, inc).diagnosis
        diag["scope"]["blocked"] = [{
            "node": "pricing:marts.agg_gmv_daily", "intervals": ["2026-09-28"],
            "audit": "assert_gmv_positive", "audited_node": "pricing:marts.fct_bookings_usd",
            "run_id": "r20260928-000000-abcdef"}]  # fmt: skip
        with ws.state.transaction() as conn:
            conn.execute("UPDATE incidents SET diagnosis = ? WHERE incident_id = ?",
                         (json.dumps(diag), inc))  # fmt: skip
        p = propose(ws, inc, principal=as_principal("splice-agent"))
    restate = next(s for s in p.steps if s.kind == "restate")
    done = [(x["node"], x["start"], x["end"]) for x in restate.detail["restatements"]]
    assert ("pricing:marts.agg_gmv_daily", "2026-09-28", "2026-09-28") in done
    nodes = {n["node"]: n for n in p.scope["nodes"]}
    assert nodes["pricing:marts.agg_gmv_daily"]["rewrites"] == [["2026-09-25", "2026-09-28"]]
    assert p.scope["blocked"][0]["audit"] == "assert_gmv_positive"
    text = "\n".join(proposal_lines(p))
    assert "Missing because a blocking audit stopped the run (part of the scope):" in text
    assert ("pricing:marts.agg_gmv_daily: 2026-09-28 (audit assert_gmv_positive on "
            "pricing:marts.fct_bookings_usd, run r20260928-000000-abcdef)") in text  # fmt: skip
    assert any(u.node_id == "pricing:marts.agg_gmv_daily" and u.end == MON for u in p.undo)
