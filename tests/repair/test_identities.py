"""Identities that cannot be borrowed (issue 34, item 6): a principal is its kind, its name and
how it was authenticated, never a name alone. On a real copy of the demo workspace (pricing
owned by maria then sam, finance by lee)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from principals_support import person
from test_approval_rules import T0, _pending

from splice import api
from splice.cli.main import cli, register_commands
from splice.errors import ApprovalError, InputError
from splice.repair import approvals, store
from splice.support.principals import NAME_LIMIT, Principal, unborrowed
from splice.workspace.core import Workspace

register_commands()


def _cli(root: Path, *args: str):
    return CliRunner().invoke(cli, ["-w", str(root), *args])


def _one_line_refusal(r, *words: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    text = " ".join(r.output.split())
    for w in words:
        assert w in text, (w, r.output)


def test_an_agent_named_like_an_owner_is_not_the_owner(fresh_demo: Path) -> None:
    """An agent whose name is maria's (recorded before agents were renamed, or over any
    transport) does not make maria the person its requester: maria still approves."""
    with Workspace.open(fresh_demo) as ws:
        bot = Principal.of("maria", kind="agent", auth="stdio", scopes="read,propose",
                           credential="os-user:ci")  # fmt: skip
        p = _pending(ws, by=bot)
        got = approvals.approve(ws, p.proposal_id, principal=person("maria"), now=T0 + 60)
        assert [d.actor for d in store.decisions(ws.state, p.proposal_id)][-1] == "maria"
        assert got.status in ("approved", "pending")  # pending while another domain must too
        # the person herself still never approves what she asked for, however she signs in
        q = _pending(ws, by=person("maria"))
        with pytest.raises(ApprovalError, match="cannot approve it"):
            approvals.approve(ws, q.proposal_id, principal=person("maria", auth="api-key"),
                              now=T0 + 60)  # fmt: skip


def test_a_name_recorded_before_principals_is_compared_by_name(fresh_demo: Path) -> None:
    with Workspace.open(fresh_demo) as ws:
        p = _pending(ws, by=person("maria"))
        with ws.state.transaction() as conn:  # as a proposal from before principals
            conn.execute("UPDATE repair_proposals SET payload = json_remove(payload, "
                         "'$.requester'), requester_kind = NULL, requester_auth = NULL")  # fmt: skip
            conn.execute("UPDATE repair_decisions SET principal_kind = NULL")
        assert store.load(ws.state, p.proposal_id).requester is None
        bot_maria = Principal.of("maria", kind="person", auth="api-key", credential="k9")
        with pytest.raises(ApprovalError, match="cannot approve it"):
            approvals.approve(ws, p.proposal_id, principal=bot_maria, now=T0 + 60)


def test_an_agent_claiming_a_persons_or_splices_name_is_recorded_as_agent_name(
    fresh_demo: Path,
) -> None:
    with Workspace.open(fresh_demo) as ws:
        for claimed in ("maria", "Lee", "splice", "splice-operator"):
            got = api.agent_principal(ws, Principal.of(claimed, kind="agent", auth="stdio"))
            assert got.name == f"agent:{claimed}" and got.record()["claimed"] == claimed
        assert api.agent_principal(ws, Principal.of("claude", kind="agent", auth="stdio")).name \
            == "claude"  # fmt: skip
        # a person with an API key is a person's name too
        api.create_key(ws, name="rita", kind="person", scopes="read")
        assert api.agent_principal(ws, Principal.of("rita", kind="agent", auth="stdio")).name \
            == "agent:rita"  # fmt: skip
        # an agent's key whose name became an owner's after it was made
        _rec, raw = api.create_key(ws, name="ana", kind="agent", scopes="read,propose")
    toml = fresh_demo / "splice.toml"
    toml.write_text(toml.read_text().replace('owners = ["lee"]', 'owners = ["lee", "ana"]'))
    with Workspace.open(fresh_demo) as ws:
        who = api.authenticate_key(ws, raw)
        assert (who.name, who.kind, who.claimed) == ("agent:ana", "agent", "ana")
        assert api.reconfirm_key(ws, raw).name == "agent:ana"
        # a person's name never begins with the agents' prefix
        with pytest.raises(InputError, match="names beginning 'agent:' are agents'"):
            Principal.of("agent:maria", kind="person", auth="cli-as")


def test_keys_are_never_made_for_reserved_names_nor_agents_named_like_people(
    fresh_demo: Path,
) -> None:
    for name in ("splice", "Splice-Autonomy", "splice-operator"):
        r = _cli(fresh_demo, "keys", "create", "--principal", name, "--kind", "agent")
        _one_line_refusal(r, "a name Splice records its own decisions under", "Fix:")
        r = _cli(fresh_demo, "keys", "create", "--principal", name, "--kind", "person",
                 "--scopes", "read,approve")  # fmt: skip
        _one_line_refusal(r, "a name Splice records its own decisions under")
    r = _cli(fresh_demo, "keys", "create", "--principal", "maria", "--kind", "agent")
    _one_line_refusal(r, "'maria' is a person's name", "an agent's key may not take it", "Fix:")
    ok = _cli(fresh_demo, "keys", "create", "--principal", "rita", "--kind", "person", "--json")
    assert ok.exit_code == 0, ok.output
    r = _cli(fresh_demo, "keys", "create", "--principal", "RITA", "--kind", "agent")
    _one_line_refusal(r, "'RITA' is a person's name")
    listed = json.loads(_cli(fresh_demo, "keys", "list", "--json").output)
    assert [(k["principal"], k["kind"]) for k in listed] == [("rita", "person")]


def test_names_have_a_length_limit(fresh_demo: Path) -> None:
    long = "m" * (NAME_LIMIT + 1)
    with pytest.raises(InputError, match=f"at most {NAME_LIMIT} characters"):
        Principal.of(long, kind="person", auth="cli-as")
    assert Principal.of("m" * NAME_LIMIT, kind="person", auth="cli-as").name == "m" * NAME_LIMIT
    # the agents' prefix does not count against the name it was given
    bot = unborrowed(Principal.of("m" * NAME_LIMIT, kind="agent", auth="stdio"),
                     {"m" * NAME_LIMIT})  # fmt: skip
    assert bot.name == "agent:" + "m" * NAME_LIMIT
    assert Principal.from_dict(bot.as_dict()) == bot
    r = _cli(fresh_demo, "keys", "create", "--principal", long, "--kind", "person")
    _one_line_refusal(r, f"at most {NAME_LIMIT} characters")
    r = _cli(fresh_demo, "approve", "PR-1", "--as", long)
    _one_line_refusal(r, f"at most {NAME_LIMIT} characters")
