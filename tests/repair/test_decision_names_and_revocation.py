"""Who may decide, hardened: names normalised before they are compared, undo behind the same
rules as apply, approvals that can be revoked and that expire, control characters escaped."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from principals_support import agent, as_principal, person
from test_approval_rules import HOUR, T0, _kinds, _pending

from splice.approvals import autonomy
from splice.cli.main import cli, register_commands
from splice.errors import AccessError, ApprovalError, InputError, RepairError
from splice.repair import approvals, store
from splice.repair.flow import apply
from splice.repair.revert import undo
from splice.workspace.core import Workspace

register_commands()


@pytest.fixture
def ws(fresh_demo: Path):
    with Workspace.open(fresh_demo) as w:
        yield w


@pytest.mark.parametrize(
    "disguise",
    ["maria\u200b", "\u2060maria", "ｍａｒｉａ", "ma\u00adria", " MARIA\t", "maria\x00"],
    ids=["zero-width-space", "word-joiner", "full-width", "soft-hyphen", "case-space", "nul"],
)
def test_a_disguised_name_is_still_the_proposer(ws: Workspace, disguise: str) -> None:
    p = _pending(ws, by=person(disguise))  # proposed under a name that looks like maria's
    with pytest.raises(ApprovalError, match="cannot approve it"):
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 60)
    assert store.load(ws.state, p.proposal_id).status == "pending"


def test_names_are_stored_normalised_and_blank_names_refused(ws: Workspace) -> None:
    p = _pending(ws)
    for blank in ("\u200b\u200b", " \u2060 ", ""):
        with pytest.raises(InputError, match="a principal needs a name"):
            person(blank)
    for reserved in ("Splice\u200b", "ｓｐｌｉｃｅ-autonomy"):
        with pytest.raises(AccessError, match="a person decides under their own name"):
            approvals.approve(ws, p.proposal_id, principal=person(reserved), now=T0 + 1)
    approvals.approve(ws, p.proposal_id, principal=as_principal(" ｓａｍ\u200b "), now=T0 + 2)
    assert store.decisions(ws.state, p.proposal_id)[-1].actor == "sam"


def test_undo_needs_an_owner_of_the_domain_and_no_stop(ws: Workspace) -> None:
    p = _pending(ws)
    # lee owns finance, not pricing: an undo rewrites pricing's rows
    with pytest.raises(ApprovalError, match="lee may not undo .*only an owner of domain pricing"):
        undo(ws, p.proposal_id, principal=as_principal("lee"))
    # an owner passes the rule (and then meets the status rule)
    with pytest.raises(
        RepairError, match="only an applied, failed or interrupted repair is undone"
    ):
        undo(ws, p.proposal_id, principal=as_principal("sam"))
    autonomy.stop(
        ws.state, ws.config, principal=as_principal("lee"), reason="close freeze", now=T0 + 5
    )
    with pytest.raises(ApprovalError, match="org-wide stop is active.*nothing is undone"):
        undo(ws, p.proposal_id, principal=as_principal("maria"))
    res = CliRunner().invoke(cli, ["-w", str(ws.root), "undo", p.proposal_id, "--as", "lee"])
    assert res.exit_code == 2 and "org-wide stop" in res.output


def test_an_owner_revokes_an_approval_before_it_is_applied(ws: Workspace) -> None:
    p = _pending(ws, by="splice-agent")
    approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 10)
    with pytest.raises(AccessError, match="an agent never decides"):
        approvals.reject(ws, p.proposal_id, principal=agent(), reason="x", now=T0 + 20)
    with pytest.raises(ApprovalError, match="may not revoke the approval"):
        approvals.reject(ws, p.proposal_id, principal=as_principal("lee"), reason="x", now=T0 + 20)
    got = approvals.reject(
        ws, p.proposal_id, principal=as_principal("sam"), reason="vendor not fixed", now=T0 + 30
    )
    assert got.status == "rejected"
    assert _kinds(ws, p.proposal_id)[-2:] == ["approve", "reject"]
    with pytest.raises(ApprovalError, match="is rejected"):
        apply(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 40)


def test_an_approval_not_applied_in_time_expires(ws: Workspace) -> None:
    p = _pending(ws)
    approvals.approve(
        ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 3 * HOUR
    )  # late in its window
    # the approval has its own window (4h from the approval), not the request's
    assert approvals.refresh(ws, store.load(ws.state, p.proposal_id), now=T0 + 5 * HOUR).status == (
        "approved"
    )
    done = approvals.refresh(ws, store.load(ws.state, p.proposal_id), now=T0 + 7 * HOUR + 1)
    assert done.status == "expired"
    assert "the approval expired" in (store.decisions(ws.state, p.proposal_id)[-1].comment or "")
    with pytest.raises(RepairError):
        apply(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 8 * HOUR)


def test_audit_log_show_escapes_control_characters(ws: Workspace) -> None:
    p = _pending(ws)
    approvals.reject(
        ws,
        p.proposal_id,
        principal=as_principal("sam"),
        reason="ok\x1b[2J\x1b]0;pwned\x07 done",
        now=T0 + 1,
    )
    res = CliRunner().invoke(cli, ["-w", str(ws.root), "audit-log", "show", p.proposal_id])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\x07" not in res.output
    assert "\\x1b[2J" in res.output
