"""The demo incident repaired end to end with the real tools: propose (undo first), approve,
apply as one journaled run, verify, receipt; and the undo of a repair restores exactly."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
from principals_support import approve_everywhere, as_principal
from record_support import clean_reloads

from splice.demo import relocate
from splice.demo.story import StoryResult, tell_repair
from splice.support.principals import SYSTEM


@pytest.fixture(scope="module")
def incident_ws(stale_story: StoryResult) -> StoryResult:
    """The session's story up to the diagnosis (read-only: copy it)."""
    return stale_story


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
    from splice.approvals import auditlog
    from splice.workspace.core import Workspace

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

        resolved = get_incident(ws.state.conn, inc)
        assert resolved.status == "resolved"
        # it keeps the count it was repaired for, as its evidence does (measuring again
        # replaced the stored anomalies: it said 0 while its evidence listed 29 series)
        assert resolved.anomalies == incident_ws.incidents[0].anomalies == 120
        from splice import api

        charts = {c["metric"]: c for c in api.incident_charts(ws, inc)}
        assert (charts["fx_rate"]["series_anomalous"], charts["fx_rate"]["series_total"]) == (
            29,
            30,
        )
        (listed,) = [i for i in api.list_incidents(ws, status=None) if i.incident_id == inc]
        assert listed.anomalies == 120  # `splice incidents --all` says the same
        r = res.receipt
        assert r["approved_by"][0]["by"] == "maria" and r["requested_by"] == "splice-agent"
        # and how each was known: the demo's agent proposes, its owner decides (names given)
        assert (r["approved_by"][0]["kind"], r["approved_by"][0]["auth"]) == ("person", "cli-as")
        assert (r["requester"]["kind"], r["requester"]["auth"]) == ("agent", "cli-as")
        from splice.repair.receipt import receipt_markdown

        md = receipt_markdown(r)
        assert "- Approved by: maria (person, cli-as) at" in md
        assert "- Requested by: splice-agent (agent, cli-as)" in md
        applied = [d for d in r["decisions"] if d["decision"] == "applied"]
        assert applied[0]["principal"] == {"name": "maria", "kind": "person", "auth": "cli-as",
                                           "credential": None}  # fmt: skip
        gmv = [f for f in r["verification"]["figures"] if f["metric"] == "gmv_usd"]
        assert [f["interval"] for f in gmv] == ["2026-09-28", "2026-09-29"]
        assert all(f["before"] != f["after"] for f in gmv)
        kinds = [e.kind for e in auditlog.entries(ws.state, p.proposal_id)]
        assert kinds[0] == "propose" and kinds[-1] == "receipt" and "approve" in kinds
        assert auditlog.verify(ws.state).intact
        # the receipt carries the log's head at its time (a copy anchors the log)
        head = r["audit_head"]
        assert head["seq"] > 0 and len(head["hash"]) == 64
        assert [e.hash for e in auditlog.entries(ws.state) if e.seq == head["seq"]] == [
            head["hash"]
        ]
        from splice.errors import RepairError
        from splice.repair.flow import apply

        with pytest.raises(RepairError, match="already applied; it runs once"):
            apply(ws, p.proposal_id, principal=as_principal("maria"))

        # what the repair rebuilt is recorded with its code: the next plan builds nothing
        from splice.plan.planner import make_plan

        after_repair = make_plan(ws, fresh=True)
        assert after_repair.to_build == [], {
            n: after_repair.decisions[n].because for n in after_repair.to_build
        }


def _snapshot(ws: Path, relations: list[str]) -> dict[str, list[tuple]]:
    """Every row of every relation, in a fixed order (the whole table, not just the scope)."""
    con = duckdb.connect(str(ws / "warehouse.duckdb"))  # the tools' own may be open in-process
    try:
        return {r: con.execute(f"SELECT * FROM {r} ORDER BY ALL").fetchall() for r in relations}
    finally:
        con.close()


def _cli(ws: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from splice.cli.main import cli, register_commands

    register_commands()
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def test_undo_restores_byte_identical_data_after_a_repair_that_made_things_worse(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    from splice.demo.vendor import settings_path
    from splice.repair.flow import apply, propose
    from splice.workspace.core import Workspace

    ws_dir = _copy(incident_ws, tmp_path / "travel")
    inc = incident_ws.incidents[0].incident_id
    # the "fix" is worse: the vendor now serves rates a week older still for those days
    settings_path(ws_dir).write_text(json.dumps({"incident": "worse", "freeze": {
        "from": "2026-09-28", "to": "2026-09-29", "serve_as_of": "2026-09-18"}}))  # fmt: skip
    with Workspace.open(ws_dir) as ws:
        p = propose(ws, inc, principal=as_principal("splice-agent"))
        relations = [u.relation for u in p.undo]
        before = _snapshot(ws_dir, relations)
        approve_everywhere(ws, p.proposal_id, "sam")  # and lee, for finance's models
        res = apply(ws, p.proposal_id, principal=as_principal("sam"))
    assert res.run.ok
    assert not res.verification.passed  # still frozen: verification says so ...
    assert _snapshot(ws_dir, relations) != before  # ... and the data did change
    r = _cli(ws_dir, "undo", p.proposal_id, "--as", "maria")
    assert r.exit_code == 0, r.output
    assert "checksums equal" in r.output
    assert _snapshot(ws_dir, relations) == before  # every row of every relation, exactly
    with Workspace.open(ws_dir) as ws:
        from splice.repair import store, undo
        from splice.watch.incidents import get_incident

        assert undo.current_checksums(ws, p.undo) == [u.checksum for u in p.undo]
        assert store.load(ws.state, p.proposal_id).status == "undone"
        assert get_incident(ws.state.conn, inc).status == "open"
    again = _cli(ws_dir, "undo", p.proposal_id, "--as", "maria")
    assert (
        again.exit_code == 2
        and "only an applied, failed or interrupted repair is undone" in again.output
    )


BROKEN_INGEST = """
import sys, duckdb
start, end = sys.argv[2], sys.argv[4]
con = duckdb.connect("warehouse.duckdb")
con.execute("DELETE FROM raw.fx_rates WHERE rate_date BETWEEN ? AND ?", [start, end])
con.close()
sys.exit("vendor connection reset after deleting the old rows")
"""


def test_a_reload_that_fails_half_way_leaves_the_warehouse_as_the_undo_recorded_it(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    from splice.workspace.core import Workspace

    ws_dir = _copy(incident_ws, tmp_path / "travel")
    (ws_dir / "ingest" / "broken_ingest.py").write_text(BROKEN_INGEST)
    toml = ws_dir / "splice.toml"
    toml.write_text(
        toml.read_text().replace("ingest/fx_rates_ingest.py", "ingest/broken_ingest.py")
    )
    inc = incident_ws.incidents[0].incident_id

    r = _cli(ws_dir, "propose", inc, "--as", "splice-agent", "--json")
    assert r.exit_code == 0, r.output
    proposal = json.loads(r.stdout)
    pid, relations = proposal["proposal_id"], [u["relation"] for u in proposal["undo"]]
    assert proposal["status"] == "pending"
    before = _snapshot(ws_dir, relations)
    assert _cli(ws_dir, "approve", pid, "--as", "maria").exit_code == 0
    assert _cli(ws_dir, "approve", pid, "--as", "lee").exit_code == 0  # finance's models too
    r = _cli(ws_dir, "apply", pid, "--as", "maria")
    assert r.exit_code == 1, r.output
    assert _snapshot(ws_dir, relations) == before
    with Workspace.open(ws_dir) as ws:
        from splice.repair import store
        from splice.watch.incidents import get_incident

        assert store.load(ws.state, pid).status == "undone"
        assert [d.decision for d in store.decisions(ws.state, pid)][-2:] == ["failed", "undo"]
        assert get_incident(ws.state.conn, inc).status == "open"
    shown = _cli(ws_dir, "receipt", pid, "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["status"] == "undone"


def test_at_l3_a_proven_reload_is_approved_and_applied_by_splice_itself(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    """A reload of one ingestion job for named days, in a domain at L3 with a clean record,
    runs without a person's approval; Splice's approval is in the log under its own name."""
    import time

    from splice.approvals import auditlog
    from splice.demo.vendor import set_incident
    from splice.repair import store, undo
    from splice.repair.flow import apply, request_approval
    from splice.repair.model import Proposal, Step
    from splice.workspace.core import Workspace

    ws_dir = _copy(incident_ws, tmp_path / "travel")
    toml = ws_dir / "splice.toml"
    toml.write_text(toml.read_text().replace('autonomy = "L2"', 'autonomy = "L3"', 1)
                    .replace("proven_record = 3", "proven_record = 1"))  # fmt: skip
    set_incident(ws_dir, None)  # the vendor is fixed
    inc = incident_ws.incidents[0].incident_id
    day0, day1 = date(2026, 9, 28), date(2026, 9, 29)
    argv = ["python", "ingest/fx_rates_ingest.py", "--start", "2026-09-28", "--end", "2026-09-29"]

    def reload_proposal(ws: Workspace) -> Proposal:
        now = time.time()
        p = Proposal(
            store.new_proposal_id(ws.state), inc, ws.target, "pricing", "reload_ingestion",
            "reload fx_rates_ingest", "stale vendor rates", day0, day1,
            [Step("reload", "ingestion", ["ingestion:fx_rates_ingest"], day0, day1, argv,
                  {"runner": "dlt", "writes": ["raw.fx_rates"], "cwd": str(ws.root)})],
            [" ".join(argv)], {}, None, "splice-agent", now, now + 3600,
        )  # fmt: skip
        store.save(ws.state, p, principal=as_principal("splice-agent"))
        entries = undo.capture(ws, p.proposal_id, [
            ("ingestion:fx_rates_ingest", "warehouse.raw.fx_rates", "rate_date", day0, day1)])  # fmt: skip
        undo.verify_restorable(ws, entries)
        return request_approval(
            ws, p.proposal_id, entries, principal=as_principal("splice-agent"), now=now
        )

    with Workspace.open(ws_dir) as ws:
        first = reload_proposal(ws)
        # no record yet: Splice may not approve it itself; an owner does, and it runs clean
        with pytest.raises(Exception, match="0 clean reload_ingestion application"):
            apply(ws, first.proposal_id, principal=SYSTEM)
        from splice.repair import approvals

        approvals.approve(ws, first.proposal_id, principal=as_principal("maria"))
        done = apply(ws, first.proposal_id, principal=as_principal("maria"))
        assert done.run.ok
        # the reload alone leaves the models' frozen Monday behind: not verified, so it is
        # no clean application, and Splice still may not apply the next one itself
        assert done.verification is not None and not done.verification.passed
        assert store.clean_record(ws.state, "pricing", "reload_ingestion") == 0
        with pytest.raises(Exception, match="0 clean reload_ingestion application"):
            apply(ws, reload_proposal(ws).proposal_id, principal=SYSTEM)
        clean_reloads(ws, "pricing", 1)  # then one that verified: the record of 1 it needs
        assert store.clean_record(ws.state, "pricing", "reload_ingestion") == 1

        second = reload_proposal(ws)
        done = apply(ws, second.proposal_id, principal=SYSTEM)
        assert done.run.ok and done.proposal.status == "applied"
        approved = [
            e for e in auditlog.entries(ws.state, second.proposal_id) if e.kind == "approve"
        ]
        assert [e.actor for e in approved] == ["splice"]
        assert approved[0].as_dict()["payload"]["principal"]["auth"] == "system"
        assert "approved autonomously" in approved[0].as_dict()["payload"]["comment"]
        assert done.verification is not None and not done.verification.passed  # as the first
        assert store.clean_record(ws.state, "pricing", "reload_ingestion") == 0
        assert auditlog.verify(ws.state).intact


def _repaired(story: StoryResult, dest: Path) -> tuple[Path, str, Any, Any]:
    """A copy where the vendor fixed its feed and the repair was proposed, approved by maria
    and applied: (workspace, incident id, proposal, the apply's result)."""
    from splice.demo.vendor import set_incident
    from splice.repair.flow import apply, propose
    from splice.workspace.core import Workspace

    ws_dir = _copy(story, dest)
    set_incident(ws_dir, None)
    inc = story.incidents[0].incident_id
    with Workspace.open(ws_dir) as ws:
        p = propose(ws, inc, principal=as_principal("splice-agent"))
        approve_everywhere(ws, p.proposal_id, "maria")  # and lee, for finance's models
        done = apply(ws, p.proposal_id, principal=as_principal("maria"))
    return ws_dir, inc, p, done


def test_an_undo_forged_with_its_checksum_is_refused(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    """Saved rows edited together with the checksum in the proposal's row: the audit log
    recorded the undo when approval was requested, so the restore refuses."""
    import sqlite3

    from splice.repair import store, undo
    from splice.workspace.core import Workspace

    ws_dir, _inc, p, done = _repaired(incident_ws, tmp_path / "travel")
    assert done.run.ok
    with Workspace.open(ws_dir) as ws:
        p = store.load(ws.state, p.proposal_id)
    entry = p.undo[0]  # raw.fx_rates for the two days
    saved = ws_dir / entry.saved_to
    con = duckdb.connect()
    try:  # the forger's rows: every saved rate doubled
        con.execute(
            f"COPY (SELECT * REPLACE (rate_to_usd * 2 AS rate_to_usd) FROM read_parquet('{saved}'))"
            f" TO '{saved}.forged' (FORMAT PARQUET)"
        )
    finally:
        con.close()
    Path(f"{saved}.forged").replace(saved)
    with Workspace.open(ws_dir) as ws:
        forged = undo._file_checksum(duckdb.connect(), ws, entry)[1]
    assert forged != entry.checksum
    db = sqlite3.connect(ws_dir / ".splice" / "state.db")
    try:  # and the checksum in the proposal's row, to match
        (payload,) = db.execute(
            "SELECT payload FROM repair_proposals WHERE proposal_id=?", (p.proposal_id,)
        ).fetchone()
        data = json.loads(payload)
        data["undo"][0]["checksum"] = forged
        db.execute(
            "UPDATE repair_proposals SET payload=? WHERE proposal_id=?",
            (json.dumps(data), p.proposal_id),
        )
        db.commit()
    finally:
        db.close()
    before = _gmv(ws_dir)
    r = _cli(ws_dir, "undo", p.proposal_id, "--as", "maria")
    assert r.exit_code == 2, r.output
    assert "is not the one recorded in the audit log" in r.output
    assert "nothing was restored" in r.output
    assert _gmv(ws_dir) == before  # nothing was put back


def _set_saved_to(ws_dir: Path, proposal_id: str, index: int, saved_to: str) -> None:
    """Rewrite one undo entry's ``saved_to`` in the state, as whoever can write it would."""
    import sqlite3

    db = sqlite3.connect(ws_dir / ".splice" / "state.db")
    try:
        (payload,) = db.execute(
            "SELECT payload FROM repair_proposals WHERE proposal_id=?", (proposal_id,)
        ).fetchone()
        data = json.loads(payload)
        data["undo"][index]["saved_to"] = saved_to
        db.execute(
            "UPDATE repair_proposals SET payload=? WHERE proposal_id=?",
            (json.dumps(data), proposal_id),
        )
        db.commit()
    finally:
        db.close()


def test_an_undo_file_swapped_or_pointed_outside_the_undo_directory_is_refused(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    """Another relation's saved rows in place of a file, or an entry whose saved_to names a
    file outside .splice/undo/ (directly, through ``..`` or through a symlink): one line each,
    naming the relation and the file, and nothing is read from there or restored."""
    from splice.repair import store
    from splice.workspace.core import Workspace

    ws_dir, _inc, p, done = _repaired(incident_ws, tmp_path / "travel")
    assert done.run.ok
    with Workspace.open(ws_dir) as ws:
        p = store.load(ws.state, p.proposal_id)
    before = _gmv(ws_dir)

    def refused(*words: str) -> None:
        r = _cli(ws_dir, "undo", p.proposal_id, "--as", "maria")
        assert r.exit_code == 2, r.output
        (line,) = [x for x in r.output.splitlines() if x.startswith("Error:")]
        assert "unexpected" not in line and "Traceback" not in r.output
        for w in words:
            assert w in line, (w, line)
        assert _gmv(ws_dir) == before  # nothing was put back

    # (1) the file of fx.daily_rates replaced by the one of another relation
    rates, other = p.undo[1], p.undo[4]
    assert rates.columns != other.columns
    saved = ws_dir / rates.saved_to
    kept = saved.read_bytes()
    shutil.copyfile(ws_dir / other.saved_to, saved)
    refused(f"the saved rows in {saved.resolve()} do not match the columns of {rates.relation}",
            "nothing was restored")  # fmt: skip
    saved.write_bytes(kept)

    # (2) saved_to pointing outside .splice/undo/: never opened
    undo_root = (ws_dir / ".splice" / "undo").resolve()
    first = p.undo[0]
    outside = tmp_path / "outside.parquet"
    shutil.copyfile(ws_dir / first.saved_to, outside)  # even a file that would restore
    link = ws_dir / ".splice" / "undo" / p.proposal_id / "link.parquet"
    link.symlink_to("/etc/passwd")
    for saved_to in ("/etc/passwd", str(outside), ".splice/undo/../../splice.toml",
                     str(link.relative_to(ws_dir))):  # fmt: skip
        _set_saved_to(ws_dir, p.proposal_id, 0, saved_to)
        refused(f"the undo of {first.relation} names {saved_to}",
                f"which is outside {undo_root}", "nothing was restored")  # fmt: skip


def test_undo_then_repair_again_verifies_like_the_first_repair(
    incident_ws: StoryResult, tmp_path: Path
) -> None:
    from splice.repair.flow import apply, propose
    from splice.repair.revert import undo
    from splice.workspace.core import Workspace

    ws_dir, inc, first, done = _repaired(incident_ws, tmp_path / "travel")
    assert done.run.ok and done.verification.passed
    repaired = _gmv(ws_dir)
    with Workspace.open(ws_dir) as ws:
        undo(ws, first.proposal_id, principal=as_principal("maria"))
    assert _gmv(ws_dir) != repaired  # the stale days are back
    with Workspace.open(ws_dir) as ws:
        second = propose(ws, inc, principal=as_principal("splice-agent"))
        approve_everywhere(ws, second.proposal_id, "sam")
        again = apply(ws, second.proposal_id, principal=as_principal("sam"))
    assert again.run.ok
    assert again.verification.passed, again.verification.summary
    assert _gmv(ws_dir) == repaired
