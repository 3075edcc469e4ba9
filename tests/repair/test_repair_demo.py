"""The demo incident repaired end to end with the real tools: propose (undo first), approve,
apply as one journaled run, verify, receipt; and the undo of a repair restores exactly."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from splice.demo import relocate
from splice.demo.story import StoryResult, tell_repair, tell_stale_rates


@pytest.fixture(scope="module")
def incident_ws(tmp_path_factory: pytest.TempPathFactory) -> StoryResult:
    """The story up to the diagnosis (read-only: copy it)."""
    return tell_stale_rates(tmp_path_factory.mktemp("repair") / "travel")


def _copy(story: StoryResult, dest: Path) -> Path:
    shutil.copytree(story.build.workspace, dest, symlinks=True)
    relocate(dest)
    return dest


def _gmv(ws: Path) -> dict[date, float]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return dict(con.execute(
            "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily GROUP BY 1"
        ).fetchall())  # fmt: skip
    finally:
        con.close()


def _as_of(ws: Path) -> dict[date, date]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return dict(con.execute(
            "SELECT rate_date, MIN(as_of) FROM warehouse.fx.daily_rates "
            "WHERE rate_date BETWEEN '2026-09-25' AND '2026-09-30' GROUP BY 1"
        ).fetchall())  # fmt: skip
    finally:
        con.close()


def test_the_demo_incident_is_repaired_verified_and_receipted(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    from splice.repair import auditlog
    from splice.workspace import Workspace

    ws_dir = _copy(incident_ws, tmp_path / "travel")
    inc = incident_ws.incidents[0].incident_id
    before = _gmv(ws_dir)
    story = tell_repair(ws_dir, inc)
    p, res = story.proposal, story.applied

    # the proposal: reload the two days, restate with SQLMesh's cascade, rebuild dbt downstream
    assert [s.kind for s in p.steps] == ["reload", "restate", "rebuild"]
    assert p.steps[0].nodes == ["ingestion:fx_rates_ingest"]
    assert (p.scope_start, p.scope_end) == (date(2026, 9, 28), date(2026, 9, 29))
    assert set(p.steps[1].nodes) == {
        "pricing:fx.daily_rates", "pricing:marts.fct_bookings_usd", "pricing:marts.agg_gmv_daily",
    }  # fmt: skip
    assert any("--restate-model fx.daily_rates --start 2026-09-28 --end 2026-09-29" in c
               for c in p.commands)  # fmt: skip
    assert p.audit_diff and "moves_each_interval" in p.audit_diff
    assert p.cost["rows_scoped"] < p.cost["rows_full_rebuild"] / 10
    assert p.undo and all(u.checksum for u in p.undo)

    # one journaled run, every step and check green; the data is Friday-free again
    assert res.run.ok and [s.status for s in res.run.segments] == ["success"] * 3
    assert not res.run.failed_checks
    assert _as_of(ws_dir) == {d: d for d in _as_of(ws_dir)}  # as_of = rate_date everywhere
    after = _gmv(ws_dir)
    assert {d for d in before if before[d] != after[d]} == {date(2026, 9, 28), date(2026, 9, 29)}

    # verification resolved the incident, and the receipt says who, what and the figures
    assert res.verification.passed, res.verification.summary
    with Workspace.open(ws_dir) as ws:
        from splice.watch.incidents import get_incident

        assert get_incident(ws.state.conn, inc).status == "resolved"
        r = res.receipt
        assert r["approved_by"][0]["by"] == "maria" and r["requested_by"] == "splice-agent"
        gmv = [f for f in r["verification"]["figures"] if f["metric"] == "gmv_usd"]
        assert [f["interval"] for f in gmv] == ["2026-09-28", "2026-09-29"]
        assert all(f["before"] != f["after"] for f in gmv)
        kinds = [e.kind for e in auditlog.entries(ws.state, p.proposal_id)]
        assert kinds[0] == "propose" and kinds[-1] == "receipt" and "approve" in kinds
        assert auditlog.verify(ws.state).intact


def test_undo_after_the_repair_restores_the_warehouse_exactly(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    from splice.repair import undo
    from splice.workspace import Workspace

    ws_dir = _copy(incident_ws, tmp_path / "travel")
    stale = _gmv(ws_dir)
    story = tell_repair(ws_dir, incident_ws.incidents[0].incident_id)
    assert _gmv(ws_dir) != stale
    with Workspace.open(ws_dir) as ws:
        undo.undo(ws, story.proposal.proposal_id, actor="maria")
        again = undo.current_checksums(ws, story.proposal.undo)
    assert again == [u.checksum for u in story.proposal.undo]
    assert _gmv(ws_dir) == stale
