"""``splice serve`` refuses every caller it cannot authenticate (401) or who lacks the scope
(403), writes nothing for them, and lets a person who owns the domain approve what an agent
proposed. Real server, real identity provider keys, real MCP clients, all on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from tests.mcp.mcp_support import PROTOCOLS, ToolFailed, call
from tests.serve.serve_support import (
    ISSUER,
    make_key,
    running_server,
    served_copy,
    server_decides,
    splice,
)
from tests.serve.serve_support import (
    Served as ServedBase,
)


class Served(ServedBase):
    def written(self) -> tuple[int, int]:
        """(audit-log entries, proposals): what a refused caller must not change."""
        import sqlite3

        con = sqlite3.connect(self.ws / ".splice" / "state.db")
        try:
            return (
                con.execute("SELECT count(*) FROM repair_audit_log").fetchone()[0],
                con.execute("SELECT count(*) FROM repair_proposals").fetchone()[0],
            )
        finally:
            con.close()


@pytest.fixture(scope="module", params=PROTOCOLS)
def served(
    stale_story: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Served]:
    """A served copy of the story; its clients speak one protocol (each test runs for both)."""
    from splice.demo.vendor import set_incident

    ws, idp, port = served_copy(
        stale_story.build.workspace, tmp_path_factory.mktemp("serve") / "travel"
    )
    set_incident(ws, None)  # the vendor has fixed its feed: the repair can reload good rates
    server_decides(ws)
    keys = {
        "agent": make_key(ws, "ci-agent", "agent", "read,propose"),
        "sam": make_key(ws, "sam", "person", "read,propose,approve"),
        "lee": make_key(ws, "lee", "person", "read,propose,approve"),
        "ana": make_key(ws, "ana", "person", "read,propose,approve"),
        "reader": make_key(ws, "rita", "person", "read"),
        "no-read": make_key(ws, "nora", "person", "propose"),
        "revoked": make_key(ws, "old-bot", "agent", "read"),
    }
    refused = splice(ws, "keys", "create", "--principal", "rogue", "--kind", "agent", "--scopes",
                     "read,approve")  # fmt: skip
    assert refused.returncode == 2 and "agent" in refused.stderr  # an agent never approves
    key_id = keys["revoked"].split("_")[1]
    r = splice(ws, "keys", "revoke", key_id)
    assert r.returncode == 0, r.stderr
    with running_server(ws, port) as base:
        yield Served(ws, base, idp, keys, request.param)
    idp.close()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256_with_public_key(s: Served) -> str:
    """The classic confusion attack: HS256 'signed' with the provider's public key."""
    pem = (
        s.idp.keys["k1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    claims = jwt.decode(s.token(), options={"verify_signature": False})
    body = _b64(json.dumps(claims).encode())
    sig = hmac.new(pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(sig)}"


def _alg_none(s: Served) -> str:
    claims = jwt.decode(s.token(), options={"verify_signature": False})
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "k1"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}."


def test_callers_it_cannot_authenticate_get_401_and_nothing_is_written(served: Served) -> None:
    s = served
    s.idp.add_key("rogue", publish=False)
    before = s.written()
    # a rogue key's signature presented under a published kid
    _, body, sig = s.idp.token(s.audience, kid="rogue").split(".")
    k1_header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "k1"}).encode())
    bad = {
        "no token": None,
        "garbage": "not-a-token",
        "bad signature": f"{k1_header}.{body}.{sig}",
        "wrong audience": s.idp.token("https://elsewhere.example/mcp"),
        "wrong issuer": s.token(issuer="https://evil.example"),
        "expired": s.token(expires_in=-3600),
        "alg none": _alg_none(s),
        "HS256 with the public key": _hs256_with_public_key(s),
        "unknown kid": s.idp.token(s.audience, kid="rogue"),
        "revoked API key": s.keys["revoked"],
        "made-up API key": "spk_deadbeef_" + "x" * 40,
    }
    for what, token in bad.items():
        status, headers = s.post(token)
        assert status == 401, (what, status)
        assert "resource_metadata=" in headers.get("www-authenticate", ""), what
    assert s.written() == before


def test_a_key_without_the_read_scope_gets_403(served: Served) -> None:
    before = served.written()
    status, headers = served.post(served.keys["no-read"])
    assert status == 403
    assert "insufficient_scope" in headers.get("www-authenticate", "")
    status, _ = served.post(served.token(scope="openid profile"))
    assert status == 403
    assert served.written() == before


def test_protected_resource_metadata_is_served(served: Served) -> None:
    r = httpx2.get(f"{served.base}/.well-known/oauth-protected-resource/mcp", timeout=10)
    assert r.status_code == 200
    meta = r.json()
    assert meta["resource"] == served.audience
    assert ISSUER in [a.rstrip("/") for a in meta["authorization_servers"]]
    health = httpx2.get(f"{served.base}/healthz", timeout=10).json()
    assert health["status"] == "ok" and set(health["auth"]) == {"api-key", "oauth"}


def test_rotated_keys_are_fetched_once_and_unknown_kids_refused(served: Served) -> None:
    s = served
    assert s.post(s.token())[0] == 200
    time.sleep(0.6)  # past the served refetch_interval (0.5 s): a new kid may be fetched
    fetched = s.idp.fetches
    s.idp.add_key("k2")  # the provider rotates: a new key is published
    assert s.post(s.token(kid="k2"))[0] == 200
    assert s.idp.fetches == fetched + 1
    assert s.post(s.token(kid="k2"))[0] == 200
    assert s.idp.fetches == fetched + 1  # cached from now on


def test_an_agent_token_named_like_an_owner_is_agent_name(served: Served) -> None:
    """An agent's token from the identity provider whose name claim is an owner's (lee) is
    the agent ``agent:lee``, never lee the person (issue 34, item 6)."""
    s = served
    bot = s.token(sub="lee", azp="ci-bot", scope="splice:approve")

    async def main() -> str:
        async with s.session(bot) as sess:
            with pytest.raises(ToolFailed) as e:
                await call(sess, "accept_level", incident_id="INC-1")
            return str(e.value)

    before = s.written()
    msg = anyio.run(main)
    assert "agent:lee (agent, oauth) may not accept-level" in msg, msg
    assert s.written() == before


def test_the_requester_cannot_approve_its_own_proposal(served: Served) -> None:
    s = served

    async def main() -> str:
        async with s.session(s.keys["sam"]) as sam:
            incs = (await call(sam, "list_incidents"))["incidents"]
            p = await call(sam, "propose_repair", incident_id=incs[0]["id"])
            before = s.written()
            with pytest.raises(ToolFailed) as e:
                await call(sam, "approve_proposal", proposal_id=p["proposal_id"])
            assert s.written() == before
            # the requester may withdraw it (a decision recorded under sam's key)
            withdrawn = await call(
                sam, "reject_proposal", proposal_id=p["proposal_id"], reason="duplicate"
            )
            assert withdrawn["status"] == "rejected"
            return str(e.value)

    assert "request" in anyio.run(main)


def test_agent_proposes_owner_approves_over_mcp_and_it_applies(served: Served) -> None:
    s = served

    async def refused(token: str, tool: str, **args: Any) -> str:
        before = s.written()
        async with s.session(token) as sess:
            with pytest.raises(ToolFailed) as e:
                await call(sess, tool, **args)
        assert s.written() == before, f"{tool} refused but something was written"
        return str(e.value)

    async def main() -> tuple[dict, dict, dict]:
        async with s.session(s.keys["agent"], client="ci") as agent:
            inc = (await call(agent, "list_incidents"))["incidents"][0]
            proposal = await call(agent, "propose_repair", incident_id=inc["id"])
        pid = proposal["proposal_id"]
        # who may not approve, and why
        msg = await refused(s.keys["reader"], "propose_repair", incident_id=inc["id"])
        assert "propose" in msg and "scope" in msg
        msg = await refused(s.keys["agent"], "approve_proposal", proposal_id=pid)
        assert "agent" in msg
        # an agent token from the identity provider, with every scope, is refused too
        bot = s.token(sub="ci-bot-account", azp="ci-bot", scope="splice:approve")
        msg = await refused(bot, "approve_proposal", proposal_id=pid)
        assert "agent" in msg
        msg = await refused(s.keys["ana"], "approve_proposal", proposal_id=pid)
        assert "owner" in msg
        # the owner approves with her identity provider's token: pricing has approved, and the
        # result says finance (whose dbt models the repair rebuilds) still has to
        async with s.session(s.token(sub="maria")) as maria:
            partly = await call(maria, "approve_proposal", proposal_id=pid, comment="ok")
            assert partly["status"] == "pending", partly
            assert [w["domain"] for w in partly["waiting_for"]] == ["finance"]
            msg = await refused(s.token(sub="maria"), "apply_proposal", proposal_id=pid)
            assert "finance" in msg
        async with s.session(s.keys["lee"]) as lee:
            approved = await call(lee, "approve_proposal", proposal_id=pid, comment="finance ok")
        async with s.session(s.token(sub="maria")) as maria:
            applied = await call(maria, "apply_proposal", proposal_id=pid)
            receipt = await call(maria, "get_receipt", proposal_id=pid)
            audit = await call(maria, "verify_audit_log")
        assert audit["intact"] is True
        return approved, applied, receipt

    approved, applied, receipt = anyio.run(main)
    assert approved["status"] == "approved"
    pid = approved["proposal_id"]
    # the CLI may not decide; every decision the server recorded carries its signature
    r = splice(s.ws, "undo", pid, "--as", "maria")
    assert r.returncode == 2 and "server" in r.stderr, r.stderr
    r = splice(s.ws, "audit-log", "verify", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "by a server key" in json.dumps(json.loads(r.stdout)["checks"])
    import sqlite3

    con = sqlite3.connect(s.ws / ".splice" / "state.db")
    signers = dict(con.execute(
        "SELECT kind, signer FROM repair_audit_log WHERE proposal_id = ? AND kind IN "
        "('approve', 'apply')", (pid,)).fetchall())  # fmt: skip
    con.close()
    key = [line for line in (s.ws / "splice.toml").read_text().splitlines()
           if line.startswith("server_keys")][0]  # fmt: skip
    assert signers and all(k and k in key for k in signers.values()), signers
    text = json.dumps(receipt)
    assert '"oauth"' in text and "maria" in text and '"api-key"' in text and "ci-agent" in text
