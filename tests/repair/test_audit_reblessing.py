"""No ordinary command re-blesses a tampered audit log: the witness only ever moves to a head
that extends the one it recorded, a deleted witness stops every write until an owner
re-creates it, forged entries are caught by their signatures, and receipts are cross-checked.

Every tamper is what an attacker with write access to the workspace can do (the state file,
the witness file, the workspace's own local signing key); each is TAMPERED before and after
each kind of ordinary command, reading and writing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
import test_state_witness
from principals_support import as_principal
from tamper_support import forge_append, local_signer, rehash_from
from tests.cli_runner import run_cli
from tests.serve.serve_support import server_decides

from splice.approvals import auditlog
from splice.workspace.core import Workspace

logged = test_state_witness.logged  # the fixture: a proposal requested, approved, withdrawn


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(root), *args])


def _state(root: Path) -> Path:
    return root / ".splice" / "state.db"


def _witness_bytes(root: Path) -> bytes | None:
    w = root / "splice-witness.json"
    return w.read_bytes() if w.exists() else None


def _rewrite_approver(root: Path) -> None:
    """maria's approval rewritten as sam's, the chain re-hashed and re-signed consistently."""
    con = sqlite3.connect(_state(root))
    seq, payload = con.execute(
        "SELECT seq, payload FROM repair_audit_log WHERE kind='approve'"
    ).fetchone()
    data = json.loads(payload)
    data["principal"]["name"] = "sam"
    con.execute(
        "UPDATE repair_audit_log SET actor='sam', payload=? WHERE seq=?",
        (auditlog.canonical(data), seq),
    )
    rehash_from(con, seq, local_signer(root))
    con.commit()
    con.close()


def _copy_state(root: Path, dest: Path) -> None:
    src = sqlite3.connect(_state(root))
    out = sqlite3.connect(dest)
    src.backup(out)
    src.close()
    out.close()


def _restore_state(root: Path, copy: Path) -> None:
    for f in _state(root).parent.glob("state.db-*"):
        f.unlink()
    _state(root).write_bytes(copy.read_bytes())


#: (reading commands, writing commands) run after a tamper
READING = [("proposals",), ("audit-log", "show"), ("incidents",)]
WRITING = [
    ("stop", "--reason", "checking", "--as", "maria"),
    ("keys", "create", "--principal", "bot-x", "--kind", "agent", "--scopes", "read"),
    ("watch",),
]


def _still_tampered(root: Path, problem: str | None = None) -> None:
    r = _cli(root, "audit-log", "verify", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["intact"] is False
    if problem:
        assert report["problem"] == problem, report


@pytest.mark.parametrize("tamper", ["rewrite", "rollback"])
def test_a_tampered_log_stays_tampered_after_every_ordinary_command(
    logged: Path, tmp_path: Path, tamper: str
) -> None:
    if tamper == "rewrite":
        _rewrite_approver(logged)
    else:  # roll the state back to a copy taken before the last decisions
        early = tmp_path / "early.db"
        _copy_state(logged, early)
        assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
        assert _cli(logged, "resume", "--as", "maria").returncode == 0
        _restore_state(logged, early)
    witnessed = _witness_bytes(logged)
    written = _count(logged)
    _still_tampered(logged, "rewritten" if tamper == "rewrite" else "truncated")
    for args in READING:
        r = _cli(logged, *args)
        assert r.returncode == 0, (args, r.stderr)
        _still_tampered(logged)
    for args in WRITING:
        r = _cli(logged, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "no longer extends what the witness recorded" in r.stderr, r.stderr
        assert "accept-divergence" in r.stderr and "Traceback" not in r.stderr
        _still_tampered(logged)
    # nothing moved the witness, and nothing was written to the state
    assert _witness_bytes(logged) == witnessed
    assert _count(logged) == written


def _count(root: Path) -> tuple[int, int]:
    con = sqlite3.connect(_state(root))
    try:
        return (
            con.execute("SELECT count(*) FROM repair_audit_log").fetchone()[0],
            con.execute("SELECT count(*) FROM api_keys").fetchone()[0],
        )
    finally:
        con.close()


def test_an_owner_accepts_a_divergence_and_it_is_recorded_in_both(
    logged: Path, tmp_path: Path
) -> None:
    early = tmp_path / "early.db"
    _copy_state(logged, early)
    assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
    _restore_state(logged, early)
    _still_tampered(logged, "truncated")
    # not by someone who owns no domain, not without a reason
    r = _cli(logged, "audit-log", "accept-divergence", "--as", "rita", "--reason", "backup")
    assert r.returncode == 2 and "owner" in r.stderr, r.stderr
    r = _cli(logged, "audit-log", "accept-divergence", "--as", "maria", "--reason", "restored "
             "the state from last night's backup")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "entry" in r.stdout and "gone" in r.stdout
    r = _cli(logged, "audit-log", "verify")
    assert r.returncode == 0, r.stderr
    assert "accept-divergence accepted by maria" in r.stdout
    witness = json.loads((logged / "splice-witness.json").read_text())
    assert witness["divergences"][0]["by"]["name"] == "maria"
    assert witness["divergences"][0]["reason"].startswith("restored")
    with Workspace.open(logged) as ws:
        last = auditlog.entries(ws.state)[-1]
    assert last.kind == "accept-divergence" and (witness["audit_seq"], witness["audit_hash"]) == (
        last.seq,
        last.hash,
    )
    # ordinary commands write again, and the log verifies after them
    assert _cli(logged, "stop", "--reason", "after", "--as", "maria").returncode == 0
    assert _cli(logged, "audit-log", "verify").returncode == 0


def test_a_deleted_witness_stops_every_write_until_an_owner_recreates_it(logged: Path) -> None:
    (logged / "splice-witness.json").unlink()
    r = _cli(logged, "audit-log", "verify", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["problem"] == "witness-missing"
    for args in READING:
        assert _cli(logged, *args).returncode == 0, args
    for args in WRITING:
        r = _cli(logged, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "witness" in r.stderr and "is missing" in r.stderr and "rewitness" in r.stderr
    # no command made a new witness in its place
    assert not (logged / "splice-witness.json").exists()
    assert _cli(logged, "audit-log", "verify").returncode == 1
    r = _cli(logged, "audit-log", "rewitness", "--as", "lee", "--reason", "the volume was wiped")
    assert r.returncode == 0, r.stderr
    assert _cli(logged, "audit-log", "verify").returncode == 0
    shown = _cli(logged, "audit-log", "show").stdout
    assert "rewitness lee" in shown
    witness = json.loads((logged / "splice-witness.json").read_text())
    assert witness["divergences"][0]["kind"] == "rewitness"


def test_an_appended_forged_entry_is_caught_by_its_signature(logged: Path) -> None:
    """Write access to the state appends an entry with a consistent hash; it cannot sign it.
    Unsigned, it is caught whatever the policy (every entry since signing began is signed)."""
    con = sqlite3.connect(_state(logged))
    seq = forge_append(con, kind="approve", actor="maria", proposal_id="PR-1",
                       payload={"principal": {"name": "maria", "kind": "person",
                                              "auth": "api-key", "credential": "k1"}})  # fmt: skip
    con.commit()
    con.close()
    r = _cli(logged, "audit-log", "verify", "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and report["problem"] == "unsigned" and report["seq"] == seq
    # it extends the witness, so commands go on; none of them signs it after the fact
    assert _cli(logged, "stop", "--reason", "x", "--as", "maria").returncode == 0
    report = json.loads(_cli(logged, "audit-log", "verify", "--json").stdout)
    assert report["problem"] == "unsigned" and report["seq"] == seq


@pytest.mark.parametrize("signed_with", ["none", "local", "server"])
def test_with_server_decisions_a_forged_approval_needs_the_servers_key(
    logged: Path, signed_with: str
) -> None:
    from splice.state import signing

    server_decides(logged)
    # the decisions made before the policy were the CLI's: accept them as they stand by
    # starting from a workspace whose decisions all came through the server
    con = sqlite3.connect(_state(logged))
    con.execute("UPDATE repair_audit_log SET kind='status' WHERE kind IN ('approve','reject')")
    rehash_from(con, 1, signing.from_file(logged / signing.SERVE_KEY, create=False))
    con.commit()
    con.close()
    w = json.loads((logged / "splice-witness.json").read_text())
    with Workspace.open(logged) as ws:
        w["audit_seq"], w["audit_hash"] = ws.state.audit_head()
    (logged / "splice-witness.json").write_text(json.dumps(w))
    assert _cli(logged, "audit-log", "verify").returncode == 0
    signer = {
        "none": None,
        "local": local_signer(logged),
        "server": signing.from_file(logged / signing.SERVE_KEY, create=False),
    }[signed_with]
    con = sqlite3.connect(_state(logged))
    forge_append(con, kind="approve", actor="maria", proposal_id="PR-1",
                 payload={"principal": {"name": "maria", "kind": "person", "auth": "api-key",
                                        "credential": "k1"}}, signer=signer)  # fmt: skip
    con.commit()
    con.close()
    r = _cli(logged, "audit-log", "verify", "--json")
    report = json.loads(r.stdout)
    if signed_with == "server":  # the boundary: whoever holds the server's key can decide
        assert r.returncode == 0, report
    else:
        assert r.returncode == 1 and report["problem"] == "unsigned", report
        assert ("server_keys" if signed_with == "local" else "not signed") in report["detail"]
    # the CLI cannot decide under this policy
    r = _cli(logged, "stop", "--reason", "x", "--as", "maria")
    assert r.returncode == 2 and "splice serve" in r.stderr


def test_receipts_are_cross_checked_against_the_chain(logged: Path) -> None:
    """A receipt carries the head at its time: a rewrite of the entries before it, even with
    the witness rewritten to match, no longer holds that head."""
    with Workspace.open(logged) as ws:
        head = ws.state.audit_head()
        auditlog.record(ws.state, kind="receipt", principal=as_principal("maria"),
                        proposal_id="PR-1",
                        payload={"audit_head": {"seq": head[0], "hash": head[1]}})  # fmt: skip
    r = _cli(logged, "audit-log", "verify", "--json")
    assert r.returncode == 0
    assert any(c["check"] == "receipts" and c["detail"].startswith("1 ")
               for c in json.loads(r.stdout)["checks"])  # fmt: skip
    _rewrite_approver(logged)
    # the attacker moves the witness too
    w = json.loads((logged / "splice-witness.json").read_text())
    with Workspace.open(logged) as ws:
        w["audit_seq"], w["audit_hash"] = ws.state.audit_head()
    (logged / "splice-witness.json").write_text(json.dumps(w))
    r = _cli(logged, "audit-log", "verify", "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and report["problem"] == "receipt", report
    assert "PR-1" in report["detail"]
