"""The rules of approval, as adversarial tests on a real workspace's state (the demo's domains:
pricing owned by maria then sam at L2, finance owned by lee at L1; approval expiry 4h)."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner
from principals_support import agent, as_principal, person

from splice.approvals import auditlog, autonomy
from splice.cli.main import cli, register_commands
from splice.errors import AccessError, ApprovalError, RepairError
from splice.repair import approvals, store
from splice.repair.flow import apply
from splice.repair.model import Proposal, Step
from splice.support.principals import SYSTEM, Principal
from splice.workspace.core import Workspace

register_commands()
T0 = 1_790_000_000.0  # a fixed "now" (2026-09-21): expiry and escalation are counted from it
HOUR = 3600.0


def _pending(
    ws: Workspace,
    *,
    by: str | Principal = "splice-agent",
    domain: str = "pricing",
    t0: float = T0,
) -> Proposal:
    """A pending proposal as propose leaves it (the undo itself is tested elsewhere), asked
    for by ``by`` (``splice-agent`` is an agent, any other name a person)."""
    by = as_principal(by)
    p = Proposal(
        store.new_proposal_id(ws.state), "INC-1", ws.target, domain, "restatement",
        "Repair INC-1: stale rates", "the vendor served Friday's rates",
        date(2026, 9, 28), date(2026, 9, 29),
        [Step("restate", "pricing", ["pricing:fx.daily_rates"], date(2026, 9, 28),
              date(2026, 9, 29), ["sqlmesh", "plan"])],
        ["sqlmesh plan prod --restate-model fx.daily_rates"], {}, None, by.name, t0,
        t0 + 4 * HOUR,
    )  # fmt: skip
    store.save(ws.state, p, principal=by, now=t0)

    def requested(cur: Proposal) -> None:
        cur.requested_at = t0

    return store.transition(ws.state, p.proposal_id, "pending", principal=by, now=t0,
                            update=requested)  # fmt: skip


@pytest.fixture
def ws(fresh_demo: Path):
    with Workspace.open(fresh_demo) as w:
        yield w


def _kinds(ws: Workspace, pid: str) -> list[str]:
    return [e.kind for e in auditlog.entries(ws.state, pid)]


def test_an_owner_approves_and_the_decision_is_logged(ws: Workspace) -> None:
    p = _pending(ws)
    got = approvals.approve(
        ws, p.proposal_id, principal=as_principal("sam"), comment="ok", now=T0 + 60
    )
    assert got.status == "approved"
    assert _kinds(ws, p.proposal_id) == ["propose", "request", "approve"]
    assert [d.actor for d in store.decisions(ws.state, p.proposal_id)][-1] == "sam"
    assert auditlog.verify(ws.state).intact


@pytest.mark.parametrize("who", ["maria", "MARIA ", "Maria"])
def test_nobody_approves_their_own_proposal(ws: Workspace, who: str) -> None:
    p = _pending(ws, by="maria")  # an owner proposed it
    with pytest.raises(ApprovalError, match="cannot approve it"):
        approvals.approve(ws, p.proposal_id, principal=person(who), now=T0 + 60)
    assert store.load(ws.state, p.proposal_id).status == "pending"
    assert "approve" not in _kinds(ws, p.proposal_id)
    approvals.approve(
        ws, p.proposal_id, principal=as_principal("sam"), now=T0 + 60
    )  # the other owner may


def test_an_agent_never_approves_even_with_the_approve_scope_and_named_an_owner(
    fresh_demo: Path,
) -> None:
    toml = fresh_demo / "splice.toml"  # the agent is even listed as an owner of pricing
    toml.write_text(toml.read_text().replace('owners = ["maria", "sam"]',
                                             'owners = ["maria", "sam", "claude"]'))  # fmt: skip
    with Workspace.open(fresh_demo) as ws:
        p = _pending(ws, by="maria")
        strong = agent("claude", scopes="read,propose,approve")
        with pytest.raises(AccessError, match=r"claude \(agent, api-key\) may not approve: an "
                           "agent never decides"):  # fmt: skip
            approvals.approve(ws, p.proposal_id, principal=strong, now=T0 + 1)
        assert store.load(ws.state, p.proposal_id).status == "pending"
        for reserved in ("splice", "splice-autonomy"):
            with pytest.raises(AccessError, match="a person decides under their own name"):
                approvals.approve(ws, p.proposal_id, principal=person(reserved), now=T0 + 1)
        assert "approve" not in _kinds(ws, p.proposal_id)


def test_a_non_owner_is_refused_by_the_cli_with_the_owners_named(ws: Workspace) -> None:
    import time

    p = _pending(ws, t0=time.time())
    r = CliRunner().invoke(cli, ["-w", str(ws.root), "approve", p.proposal_id, "--as", "lee"])
    assert r.exit_code == 2, r.output
    assert "lee is not an owner of domain pricing; its owners are maria, sam" in r.output
    assert "Traceback" not in r.output
    with Workspace.open(ws.root) as again:
        assert store.load(again.state, p.proposal_id).status == "pending"


def test_an_unanswered_request_escalates_then_expires_and_is_never_granted(ws: Workspace) -> None:
    p = _pending(ws)  # maria, then sam; 4h expiry: sam is asked after 2h
    assert approvals.asked(ws, approvals.refresh(ws, p, now=T0 + HOUR)) == ["maria"]
    assert approvals.asked(ws, approvals.refresh(ws, p, now=T0 + 2 * HOUR + 1)) == ["maria", "sam"]
    assert approvals.refresh(ws, p, now=T0 + 3 * HOUR).status == "pending"  # escalated once only
    assert _kinds(ws, p.proposal_id).count("escalate") == 1
    with pytest.raises(ApprovalError, match="expired unanswered"):
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 4 * HOUR + 1)
    final = store.load(ws.state, p.proposal_id)
    assert final.status == "expired"
    assert _kinds(ws, p.proposal_id)[-1] == "expire"
    with pytest.raises(RepairError):
        apply(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 5 * HOUR)
    assert store.load(ws.state, p.proposal_id).status == "expired"


def test_nothing_is_approved_or_applied_during_an_org_wide_stop(ws: Workspace) -> None:
    p = _pending(ws)
    q = _pending(ws)
    approvals.approve(ws, q.proposal_id, principal=as_principal("maria"), now=T0 + 1)
    autonomy.stop(
        ws.state,
        ws.config,
        principal=as_principal("lee"),
        reason="quarter close freeze",
        now=T0 + 2,
    )
    with pytest.raises(ApprovalError, match="org-wide stop is active"):
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 3)
    with pytest.raises(ApprovalError, match="org-wide stop is active"):
        apply(ws, q.proposal_id, principal=as_principal("maria"), now=T0 + 3)
    assert store.load(ws.state, q.proposal_id).status == "approved"  # nothing ran
    with pytest.raises(ApprovalError, match="only an owner of a domain"):
        autonomy.resume(ws.state, ws.config, principal=as_principal("bob"))
    autonomy.resume(ws.state, ws.config, principal=as_principal("lee"))
    assert (
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 4).status
        == "approved"
    )
    kinds = [e.kind for e in auditlog.entries(ws.state)]
    assert kinds.index("stop") < kinds.index("resume")


def test_an_unapproved_or_rejected_proposal_never_runs(ws: Workspace) -> None:
    p = _pending(ws)
    with pytest.raises(ApprovalError, match="not approved, and Splice may not approve it itself"):
        apply(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 1)
    with pytest.raises(ApprovalError, match="may not reject"):
        approvals.reject(
            ws, p.proposal_id, principal=as_principal("lee"), reason="not mine", now=T0 + 1
        )
    approvals.reject(
        ws, p.proposal_id, principal=as_principal("sam"), reason="vendor not fixed yet", now=T0 + 2
    )
    with pytest.raises(ApprovalError, match="is rejected"):
        apply(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 3)
    with pytest.raises(ApprovalError, match="only a pending proposal is approved"):
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 3)
    assert "apply" not in _kinds(ws, p.proposal_id)
    from splice.run.journal import Journal

    with Journal.for_workspace(ws) as j:
        assert not [r for r in j.runs(limit=50) if "splice apply" in (r.command or "")]


def _tamper(ws: Workspace, sql: str, *args: object) -> None:
    con = sqlite3.connect(ws.state.path)
    try:
        con.execute(sql, args)
        con.commit()
    finally:
        con.close()


@pytest.mark.parametrize(
    ("sql", "problem", "seq"),
    [
        ("UPDATE repair_audit_log SET actor = 'maria' WHERE seq = 3", "edited", 3),
        ("UPDATE repair_audit_log SET payload = '{}' WHERE seq = 2", "edited", 2),
        ("DELETE FROM repair_audit_log WHERE seq = 2", "deleted", 2),
        ("DELETE FROM repair_audit_log WHERE seq = (SELECT MAX(seq) FROM repair_audit_log)",
         "truncated", 4),
    ],
)  # fmt: skip
def test_audit_log_verify_detects_an_edited_or_deleted_entry(
    ws: Workspace, sql: str, problem: str, seq: int
) -> None:
    p = _pending(ws)  # propose, request
    approvals.approve(ws, p.proposal_id, principal=as_principal("sam"), now=T0 + 1)  # approve
    autonomy.stop(
        ws.state, ws.config, principal=as_principal("lee"), reason="drill", now=T0 + 2
    )  # stop: 4 entries
    ok = CliRunner().invoke(cli, ["-w", str(ws.root), "audit-log", "verify"])
    assert ok.exit_code == 0 and "intact: 4 entries" in ok.output
    _tamper(ws, sql)
    r = CliRunner().invoke(cli, ["-w", str(ws.root), "audit-log", "verify", "--json"])
    assert r.exit_code == 1
    import json

    report = json.loads(r.output)
    assert (report["intact"], report["problem"], report["seq"]) == (False, problem, seq)


def test_the_cli_lists_proposals_with_who_was_asked(ws: Workspace) -> None:
    p = _pending(ws)
    r = CliRunner().invoke(cli, ["-w", str(ws.root), "proposals", "--json"])
    assert r.exit_code == 0, r.output
    import json

    rows = json.loads(r.output)
    # read now (long after T0): the request expired, so it is listed only with --all
    assert rows == []
    r = CliRunner().invoke(cli, ["-w", str(ws.root), "proposals", "--all"])
    assert f"{p.proposal_id} expired" in r.output


def test_autonomy_never_applies_a_restatement_and_needs_a_proven_record(fresh_demo: Path) -> None:
    toml = fresh_demo / "splice.toml"
    text = toml.read_text().replace('autonomy = "L2"', 'autonomy = "L3"', 1)
    toml.write_text(text)
    with Workspace.open(fresh_demo) as ws:
        assert ws.config.domains[0].autonomy == "L3"
        p = _pending(ws)  # a restatement
        with pytest.raises(ApprovalError, match="a restatement always needs a person's approval"):
            apply(ws, p.proposal_id, principal=SYSTEM, now=T0 + 1)
        q = _pending(ws)
        q.change_class = "reload_ingestion"
        with ws.state.transaction() as conn:
            store._write(conn, q, T0)
        with pytest.raises(ApprovalError, match="0 clean reload_ingestion application"):
            apply(ws, q.proposal_id, principal=SYSTEM, now=T0 + 1)
        autonomy.stop(
            ws.state, ws.config, principal=as_principal("sam"), reason="drill", now=T0 + 2
        )
        with pytest.raises(ApprovalError, match="org-wide stop"):
            apply(ws, q.proposal_id, principal=SYSTEM, now=T0 + 3)
        with pytest.raises(AccessError, match="an agent never decides"):  # never an agent
            apply(ws, q.proposal_id, principal=agent(scopes="read,propose,approve"), now=T0 + 3)
        assert {store.load(ws.state, x.proposal_id).status for x in (p, q)} == {"pending"}
