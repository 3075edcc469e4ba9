"""The witness outside .splice/: a workspace that had state never silently starts a new one,
and the audit log cannot be cut or rewritten together with its head unnoticed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from principals_support import as_principal
from tamper_support import local_signer, rehash_from
from tests.cli_runner import run_cli

from splice.approvals import auditlog
from splice.repair import store
from splice.workspace.core import Workspace


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(root), *args])


@pytest.fixture
def logged(fresh_demo: Path) -> Path:
    """The demo with a few audit-log entries (a proposal requested, approved, rejected)."""
    from test_approval_rules import T0, _pending

    from splice.repair import approvals

    with Workspace.open(fresh_demo) as ws:
        p = _pending(ws)
        approvals.approve(ws, p.proposal_id, principal=as_principal("maria"), now=T0 + 1)
        approvals.reject(
            ws, p.proposal_id, principal=as_principal("sam"), reason="revoked", now=T0 + 2
        )
    return fresh_demo


def _witness(root: Path) -> dict:
    return json.loads((root / "splice-witness.json").read_text())


def test_the_witness_follows_every_append(logged: Path) -> None:
    w = _witness(logged)
    with Workspace.open(logged) as ws:
        head = ws.state.audit_head()
        assert head is not None and (w["audit_seq"], w["audit_hash"]) == head
        assert w["state_id"] == ws.state.state_id()
    res = _cli(logged, "audit-log", "verify")
    assert res.returncode == 0 and f"head {head[0]} {head[1]}" in res.stdout


@pytest.mark.parametrize("how", ["deleted", "truncated", "another-workspace"])
def test_a_lost_state_is_refused_until_new_state_is_asked_for(
    logged: Path, tmp_path: Path, how: str
) -> None:
    state = logged / ".splice" / "state.db"
    for f in state.parent.glob("state.db-*"):
        f.unlink()
    if how == "deleted":
        state.unlink()
    elif how == "truncated":
        state.write_bytes(b"")
    else:
        other = tmp_path / "other"
        from splice.state.store import StateStore

        another = StateStore.open(other / "state.db")
        another.state_id()
        another.close()
        shutil.copy(other / "state.db", state)
    before = state.read_bytes() if state.exists() else None
    res = _cli(logged, "audit-log", "verify")
    assert res.returncode == 2, res.stderr
    assert "--new-state" in res.stderr and "Traceback" not in res.stderr
    word = {"deleted": "is missing", "truncated": "is empty", "another-workspace": "is not this"}
    assert word[how] in res.stderr
    # nothing was started in its place
    assert (state.read_bytes() if state.exists() else None) == before
    # asked for explicitly: a new, empty state, and the witness follows it
    res = _cli(logged, "--new-state", "audit-log", "verify")
    assert res.returncode == 0 and "intact: 0 entries" in res.stdout, res.stderr
    with Workspace.open(logged) as ws:
        assert _witness(logged)["state_id"] == ws.state.state_id()
    assert _cli(logged, "audit-log", "verify").returncode == 0


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        ("UPDATE repair_audit_log SET actor='lee' WHERE seq=3", "rewritten"),
        ("DELETE FROM repair_audit_log WHERE seq=(SELECT MAX(seq) FROM repair_audit_log)",
         "truncated"),
    ],
)  # fmt: skip
def test_a_consistent_rewrite_of_chain_and_head_is_caught_by_the_witness(
    logged: Path, tamper: str, problem: str
) -> None:
    con = sqlite3.connect(logged / ".splice" / "state.db")
    con.execute(tamper)
    rehash_from(con, 1, local_signer(logged))  # re-signed with the workspace's own key
    con.commit()
    con.close()
    with Workspace.open(logged) as ws:
        # the chain agrees with its own head: only the witness can tell
        assert auditlog.verify(ws.state).intact
        assert store.list_proposals(ws.state, target="prod")
    res = _cli(logged, "audit-log", "verify", "--json")
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert report["intact"] is False and report["problem"] == problem
    assert "witness" in report["detail"]


@pytest.mark.parametrize(
    ("witness", "doing", "error"),
    [
        ("splice.toml/w.json", "read", "Not a directory"),  # its parent is a file
        ("/proc/splice/w.json", "written", "No such file or directory"),  # no dir can be made
    ],
)
def test_a_witness_path_splice_cannot_use_is_one_line_naming_the_setting(
    fresh_demo: Path, witness: str, doing: str, error: str
) -> None:
    toml = fresh_demo / "splice.toml"
    text = toml.read_text()
    assert "\n[workspace]\n" in text
    toml.write_text(text.replace("\n[workspace]\n", f'\n[workspace]\nwitness = "{witness}"\n', 1))
    for args in (("incidents",), ("--new-state", "audit-log", "verify")):
        res = _cli(fresh_demo, *args)
        assert res.returncode == 2, (res.stdout, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.stderr and "unexpected" not in lines[0]
        path = witness if witness.startswith("/") else str(fresh_demo / witness)
        assert (
            f"witness {path} ([workspace] witness in splice.toml) cannot be {doing}: " in (lines[0])
        )
        assert error in lines[0] and "Fix: point [workspace] witness in splice.toml" in lines[0]


def test_the_witness_lock_in_a_place_splice_cannot_write_is_a_state_error() -> None:
    from splice.errors import StateError
    from splice.state import witness

    w = witness.Witness("state-x", 1.0)
    for act in (
        lambda: witness.write(Path("/proc/splice/w.json"), w),
        lambda: witness.writing(Path("/proc/splice/w.json")).__enter__(),
    ):
        with pytest.raises(StateError, match=r"\[workspace\] witness in splice.toml"):
            act()
