"""Principals everywhere: API keys, who may decide (person or agent, scopes, owner, requester),
[policy] allow_as and decisions, and what the decision rows, audit log and receipt record.
On a real copy of the demo workspace (pricing owned by maria then sam, finance by lee)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from principals_support import agent, person
from test_approval_rules import T0, _pending

from splice import api
from splice.approvals import auditlog, autonomy
from splice.cli.main import cli, register_commands
from splice.errors import AccessError, ApprovalError
from splice.repair import approvals, store
from splice.repair.flow import apply, propose
from splice.repair.revert import undo
from splice.support.principals import Principal, os_user
from splice.workspace.core import Workspace

register_commands()


@pytest.fixture
def ws(fresh_demo: Path):
    with Workspace.open(fresh_demo) as w:
        yield w


def _cli(root: Path, *args: str):
    return CliRunner().invoke(cli, ["-w", str(root), *args])


def _policy(root: Path, **settings: str) -> None:
    """Set [policy] keys in the workspace's splice.toml (the demo's section is last)."""
    toml = root / "splice.toml"
    text = toml.read_text().replace("allow_as = true\n", "")
    toml.write_text(text + "".join(f"{k} = {v}\n" for k, v in settings.items()))


# -- API keys -------------------------------------------------------------------------------------
def test_a_key_is_shown_once_stored_as_a_salted_hash_and_revocable(fresh_demo: Path) -> None:
    made = _cli(fresh_demo, "keys", "create", "--principal", "Maria", "--kind", "person",
                "--scopes", "read,propose,approve", "--json")  # fmt: skip
    assert made.exit_code == 0, made.output
    rec = json.loads(made.output)
    raw, key_id = rec["key"], rec["id"]
    assert raw.startswith(f"spk_{key_id}_") and len(raw) > 40
    other = json.loads(_cli(fresh_demo, "keys", "create", "--principal", "claude", "--kind",
                            "agent", "--json").output)  # fmt: skip
    assert other["scopes"] == ["read", "propose"]

    listed = _cli(fresh_demo, "keys", "list", "--json")
    rows = json.loads(listed.output)
    assert [(r["id"], r["principal"], r["kind"], r["scopes"], r["revoked"]) for r in rows] == [
        (key_id, "Maria", "person", ["read", "propose", "approve"], False),
        (other["id"], "claude", "agent", ["read", "propose"], False),
    ]
    assert raw not in listed.output and "secret" not in listed.output

    with Workspace.open(fresh_demo) as ws:
        who = api.authenticate_key(ws, raw)
        assert (who.name, who.kind, who.auth, who.credential) == ("Maria", "person", "api-key",
                                                                  key_id)  # fmt: skip
        assert who.may("approve")
        assert api.list_keys(ws)[0].last_used_at is not None
        secret = raw.split("_", 2)[2]
        refused = [raw[:-1] + ("A" if raw[-1] != "A" else "B"),  # a wrong secret
                   f"spk_{'0' * 12}_{secret}",  # an unknown id
                   "spk_" + key_id, "not a key", ""]  # malformed  # fmt: skip
        for bad in refused:
            with pytest.raises(AccessError, match="^invalid or revoked API key.$"):
                api.authenticate_key(ws, bad)
        path = Path(ws.state.path)

    # no key, and no secret, anywhere in the state's files (the database, its WAL)
    for f in path.parent.glob(path.name + "*"):
        data = f.read_bytes()
        assert secret.encode() not in data and raw.encode() not in data, f
    with Workspace.open(fresh_demo) as ws:
        stored = ws.state.conn.execute("SELECT secret_hash FROM api_keys").fetchall()
        hashes = [h for (h,) in stored]
        assert all(h.startswith("scrypt$") for h in hashes)
        assert len({h.split("$")[4] for h in hashes}) == 2  # a salt per key

    out = _cli(fresh_demo, "keys", "revoke", key_id)
    assert out.exit_code == 0 and "revoked" in out.output, out.output
    with Workspace.open(fresh_demo) as ws:
        with pytest.raises(AccessError, match="invalid or revoked"):
            api.authenticate_key(ws, raw)
        kinds = [(e.kind, e.actor) for e in auditlog.entries(ws.state)]
        assert ("key-create", os_user()) in kinds and ("key-revoke", os_user()) in kinds
        assert auditlog.verify(ws.state).intact
    listed = json.loads(_cli(fresh_demo, "keys", "list", "--json").output)
    assert listed[0]["revoked"] and listed[0]["revoked_by"] == os_user()


def test_keys_refuse_what_they_could_never_do(ws: Workspace) -> None:
    with pytest.raises(AccessError, match="an agent's key cannot hold the approve scope"):
        api.create_key(ws, name="claude", kind="agent", scopes="read,propose,approve")
    with pytest.raises(AccessError, match="may not make API keys"):
        api.create_key(ws, name="x", kind="person", scopes="read", principal=agent())
    r = _cli(ws.root, "keys", "create", "--principal", "x", "--kind", "person", "--scopes", "rw")
    assert r.exit_code == 2 and "unknown scope 'rw'" in r.output and "Traceback" not in r.output


# -- who may decide -------------------------------------------------------------------------------
STRONG_AGENT = agent("claude", scopes="read,propose,approve")


@pytest.mark.parametrize("action", ["approve", "reject", "apply", "undo", "stop", "resume"])
def test_an_agent_never_decides_whatever_its_scopes(ws: Workspace, action: str) -> None:
    p = _pending(ws, by="maria")
    calls = {
        "approve": lambda: approvals.approve(ws, p.proposal_id, principal=STRONG_AGENT),
        "reject": lambda: approvals.reject(ws, p.proposal_id, principal=STRONG_AGENT, reason="x"),
        "apply": lambda: apply(ws, p.proposal_id, principal=STRONG_AGENT),
        "undo": lambda: undo(ws, p.proposal_id, principal=STRONG_AGENT),
        "stop": lambda: autonomy.stop(ws.state, ws.config, principal=STRONG_AGENT, reason="x"),
        "resume": lambda: autonomy.resume(ws.state, ws.config, principal=STRONG_AGENT),
    }
    with pytest.raises(AccessError) as e:
        calls[action]()
    assert f"claude (agent, api-key) may not {action}: an agent never decides" in e.value.message
    assert "propose" in (e.value.fix or "")  # what an agent does instead
    assert store.load(ws.state, p.proposal_id).status == "pending"
    assert [x.kind for x in auditlog.entries(ws.state)] == ["propose", "request"]


def test_an_agent_proposes_and_is_recorded_as_the_requester(ws: Workspace) -> None:
    with pytest.raises(AccessError, match=r"may not propose: that needs the 'propose' scope"):
        propose(ws, "INC-404", principal=agent("claude", scopes="read"))
    bot = agent("claude")  # read,propose: its request is recorded as an agent's
    p = _pending(ws, by=bot, t0=time.time())
    assert p.requester == {"name": "claude", "kind": "agent", "auth": "api-key",
                           "credential": "test-key"}  # fmt: skip
    rows = json.loads(_cli(ws.root, "proposals", "--json").output)
    assert rows[0]["requester"]["kind"] == "agent" and rows[0]["created_by"] == "claude"
    assert "by claude (agent, api-key test-key)" in _cli(ws.root, "proposals").output


@pytest.mark.parametrize(
    ("scopes", "action"),
    [("read,propose", "approve"), ("read,propose", "apply"), ("read,propose", "undo"),
     ("read,propose", "resume"), ("read", "reject"), ("read", "stop")],
)  # fmt: skip
def test_a_person_without_the_scope_is_refused(ws: Workspace, scopes: str, action: str) -> None:
    p = _pending(ws)
    weak = person("maria", auth="api-key", scopes=scopes)
    calls = {
        "approve": lambda: approvals.approve(ws, p.proposal_id, principal=weak),
        "reject": lambda: approvals.reject(ws, p.proposal_id, principal=weak, reason="x"),
        "apply": lambda: apply(ws, p.proposal_id, principal=weak),
        "undo": lambda: undo(ws, p.proposal_id, principal=weak),
        "stop": lambda: autonomy.stop(ws.state, ws.config, principal=weak, reason="x"),
        "resume": lambda: autonomy.resume(ws.state, ws.config, principal=weak),
    }
    need = "approve" if action in ("approve", "apply", "undo", "resume") else "propose"
    with pytest.raises(AccessError, match=f"may not {action}: that needs the '{need}' scope"):
        calls[action]()
    assert store.load(ws.state, p.proposal_id).status == "pending"


def test_the_requester_and_a_non_owner_are_refused_however_authenticated(ws: Workspace) -> None:
    p = _pending(ws, by=person("Maria", auth="os-user"))
    keyed = person("maria", auth="api-key")  # the same person by another way in
    with pytest.raises(ApprovalError, match="maria created or requested .* cannot approve it"):
        approvals.approve(ws, p.proposal_id, principal=keyed, now=T0 + 1)
    with pytest.raises(ApprovalError, match="lee is not an owner of domain pricing"):
        approvals.approve(ws, p.proposal_id, principal=person("lee", auth="api-key"), now=T0 + 1)
    got = approvals.approve(ws, p.proposal_id, principal=person("sam", auth="api-key"), now=T0 + 2)
    assert got.status == "approved"


# -- what is recorded -----------------------------------------------------------------------------
def test_decision_rows_the_audit_log_and_the_receipt_say_how_each_decider_was_known(
    ws: Workspace,
) -> None:
    from splice.repair.receipt import build_receipt, receipt_markdown

    rec, raw = api.create_key(ws, name="sam", kind="person", scopes="read,approve",
                              principal=person("maria"))  # fmt: skip
    sam = api.authenticate_key(ws, raw)
    p = _pending(ws, by=agent("claude"))
    approvals.approve(ws, p.proposal_id, principal=sam, comment="checked", now=T0 + 1)

    d = store.decisions(ws.state, p.proposal_id)
    assert [(x.decision, x.actor, x.principal_kind, x.principal_auth, x.principal_credential)
            for x in d] == [("request", "claude", "agent", "api-key", "test-key"),
                            ("approve", "sam", "person", "api-key", rec.key_id)]  # fmt: skip
    logged = [
        e.as_dict()["payload"]["principal"] for e in auditlog.entries(ws.state, p.proposal_id)
    ]
    assert logged[-1] == {"name": "sam", "kind": "person", "auth": "api-key",
                          "credential": rec.key_id}  # fmt: skip
    assert logged[0]["kind"] == "agent"  # the proposal itself
    assert auditlog.verify(ws.state).intact

    cur = store.load(ws.state, p.proposal_id)
    r = build_receipt(cur.as_dict(), {"id": "INC-1"}, [x.as_dict() for x in d], [], None)
    assert r["requester"]["kind"] == "agent"
    assert r["approved_by"][0] | {"at": None} == {
        "by": "sam", "kind": "person", "auth": "api-key", "credential": rec.key_id, "at": None,
        "comment": "checked", "domains": ["pricing"]}  # fmt: skip
    md = receipt_markdown(r)
    assert "- Requested by: claude (agent, api-key test-key)" in md
    assert f"- Approved by: sam (person, api-key {rec.key_id}) at" in md
    assert f"approve by sam (person, api-key {rec.key_id})" in md  # the decisions section


# -- [policy] -------------------------------------------------------------------------------------
def test_without_allow_as_the_cli_refuses_as_and_records_the_os_user(fresh_demo: Path) -> None:
    me = os_user()
    toml = fresh_demo / "splice.toml"
    toml.write_text(toml.read_text().replace('owners = ["maria", "sam"]',
                                             f'owners = ["maria", "sam", "{me}"]'))  # fmt: skip
    _policy(fresh_demo)  # allow_as defaults to false
    with Workspace.open(fresh_demo) as ws:
        assert ws.config.policy.allow_as is False
        p = _pending(ws, t0=time.time())
    r = _cli(fresh_demo, "approve", p.proposal_id, "--as", "maria")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "--as 'maria' is refused: splice.toml [policy] allow_as is false" in r.output
    assert f"the operating-system user {me!r}" in r.output
    ok = _cli(fresh_demo, "approve", p.proposal_id)
    assert ok.exit_code == 0, ok.output
    assert f"approved by {me} (person, os-user)" in ok.output
    with Workspace.open(fresh_demo) as ws:
        last = store.decisions(ws.state, p.proposal_id)[-1]
        assert (last.decision, last.actor, last.principal_kind, last.principal_auth) == (
            "approve", me, "person", "os-user")  # fmt: skip


def test_decisions_on_the_server_refuse_the_cli_but_not_a_key(fresh_demo: Path) -> None:
    _policy(fresh_demo, allow_as="true", decisions='"server"')
    with Workspace.open(fresh_demo) as ws:
        p = _pending(ws, t0=time.time())
    for args in (["approve", p.proposal_id, "--as", "maria"], ["approve", p.proposal_id],
                 ["reject", p.proposal_id, "--reason", "no"], ["stop", "--reason", "drill"],
                 ["undo", p.proposal_id]):  # fmt: skip
        r = _cli(fresh_demo, *args)
        assert r.exit_code == 2, (args, r.output)
        assert '[policy] decisions = "server"' in r.output and "splice serve" in r.output, r.output
        assert "http://127.0.0.1:8765/mcp" in r.output, "the message names the server's address"
    with Workspace.open(fresh_demo) as ws:
        assert store.load(ws.state, p.proposal_id).status == "pending"
        _, raw = api.create_key(ws, name="maria", kind="person", scopes="read,propose,approve")
        maria = api.authenticate_key(ws, raw)  # what splice serve does with her key
        assert api.approve(ws, p.proposal_id, principal=maria).status == "approved"
        assert api.reject(ws, p.proposal_id, principal=Principal.of(
            "sam", kind="person", auth="oauth"), reason="revoked").status == "rejected"  # fmt: skip
        # proposing stays allowed anywhere: the scope rule applies, not the server rule
        with pytest.raises(AccessError, match="that needs the 'propose' scope"):
            api.propose(ws, "INC-1", principal=person("lee", scopes="read"))
