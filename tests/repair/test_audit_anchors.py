"""Anchors outside the workspace ([audit] anchors): every head Splice writes is appended to a
PostgreSQL table its writer may only INSERT into, a git remote that refuses rewritten history,
or a webhook. Rolling back the state and the witness together, or an anchor going backwards,
is TAMPERED, before and after ordinary commands. Real PostgreSQL, real git, a real HTTP
receiver, all on this machine."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from test_audit_reblessing import _cli, _copy_state, _restore_state, logged  # noqa: F401

from splice.state.anchors import postgres_ddl


def _add_anchor(root: Path, body: str) -> None:
    with (root / "splice.toml").open("a") as f:
        f.write(f"\n[[audit.anchors]]\n{body}\n")


def _verify(root: Path) -> tuple[int, dict[str, Any]]:
    r = _cli(root, "audit-log", "verify", "--json")
    return r.returncode, json.loads(r.stdout)


def _roll_back_state_and_witness(root: Path, tmp: Path) -> None:
    """Copies of the state and the witness taken now, put back after two more decisions:
    the witness agrees with the rolled-back state, so only an anchor can tell."""
    early = tmp / "early.db"
    _copy_state(root, early)
    witness = (root / "splice-witness.json").read_bytes()
    for args in (("stop", "--reason", "drill", "--as", "maria"), ("resume", "--as", "maria")):
        r = _cli(root, *args)
        assert r.returncode == 0, r.stderr
    _restore_state(root, early)
    (root / "splice-witness.json").write_bytes(witness)


def test_postgres_anchor_append_only_and_a_rollback_is_tampered(
    logged: Path,  # noqa: F811
    pg_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    role = f"anchor_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'anchor-pw'")
        for stmt in postgres_ddl("splice_audit_anchor", role):
            admin.execute(stmt)
    parts = urlsplit(pg_url)
    writer = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
    _add_anchor(logged, f'type = "postgres"\nname = "ledger"\nurl = "{writer}"\n'
                        'password_env = "ANCHOR_PW"')  # fmt: skip
    monkeypatch.setenv("ANCHOR_PW", "anchor-pw")
    # no head in it yet: verify says so
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor" and "ledger" in report["detail"]
    r = _cli(logged, "audit-log", "anchor")
    assert r.returncode == 0 and "ledger" in r.stdout, r.stderr
    assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
    code, report = _verify(logged)
    assert code == 0, report
    assert any(c["check"] == "anchor ledger" and c["ok"] for c in report["checks"])
    # the writer cannot rewrite what it appended, and nobody can delete it
    with psycopg.connect(writer, password="anchor-pw", autocommit=True) as w:
        with pytest.raises(psycopg.Error):
            w.execute("UPDATE splice_audit_anchor SET seq = 1")
        with pytest.raises(psycopg.Error):
            w.execute("DELETE FROM splice_audit_anchor")
    with psycopg.connect(pg_url, autocommit=True) as admin, pytest.raises(psycopg.Error) as e:
        admin.execute("DELETE FROM splice_audit_anchor")
    assert "append-only" in str(e.value)
    _roll_back_state_and_witness(logged, tmp_path)
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor", report
    # an ordinary command that writes carries on from the rolled-back head: still TAMPERED
    assert _cli(logged, "stop", "--reason", "again", "--as", "maria").returncode == 0
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor", report


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def test_git_anchor_a_commit_per_head_and_history_going_back_is_tampered(
    logged: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    remote = tmp_path / "anchors.git"
    _git("init", "-q", "--bare", str(remote))
    _git("-C", str(remote), "config", "receive.denyNonFastForwards", "true")
    _add_anchor(logged, f'type = "git"\nname = "history"\nrepo = "{tmp_path / "clone"}"\n'
                        f'remote = "{remote}"')  # fmt: skip
    assert _cli(logged, "audit-log", "anchor").returncode == 0
    assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
    assert _cli(logged, "resume", "--as", "maria").returncode == 0
    log = _git("-C", str(remote), "log", "--format=%s", "splice-audit").splitlines()
    assert len(log) == 3 and log[0].startswith("splice audit head"), log
    code, report = _verify(logged)
    assert code == 0, report
    # the remote's branch moved back to an older head (someone with push rights, a reset)
    tip = _git("-C", str(remote), "rev-parse", "splice-audit").strip()
    older = _git("-C", str(remote), "rev-parse", "splice-audit~1").strip()
    _git("-C", str(remote), "update-ref", "refs/heads/splice-audit", older)
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor" and "missing" in report["detail"], report
    _git("-C", str(remote), "update-ref", "refs/heads/splice-audit", tip)
    assert _verify(logged)[0] == 0
    # the workspace rolled back, state and witness together: the remote still has the heads
    _roll_back_state_and_witness(logged, tmp_path)
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor", report
    assert _cli(logged, "stop", "--reason", "again", "--as", "maria").returncode == 0
    code, report = _verify(logged)
    assert code == 1 and report["problem"] == "anchor", report


class _Receiver:
    """A webhook anchor on 127.0.0.1: POSTs append heads, GET answers them."""

    def __init__(self) -> None:
        self.heads: list[dict[str, Any]] = []
        self.down = False
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.down:
                    self.send_response(503)
                    self.end_headers()
                    return
                receiver.heads.append(json.loads(body))
                self.send_response(201)
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                data = json.dumps({"heads": receiver.heads}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/heads"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.httpd.shutdown()
    r.httpd.server_close()


def test_webhook_anchor_a_refused_head_is_loud_and_sent_again(
    logged: Path,  # noqa: F811
    receiver: _Receiver,
) -> None:
    _add_anchor(logged, f'type = "webhook"\nname = "hook"\nurl = "{receiver.url}"\n'
                        f'read_url = "{receiver.url}"')  # fmt: skip
    assert _cli(logged, "audit-log", "anchor").returncode == 0
    assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
    seqs = [h["seq"] for h in receiver.heads]
    assert len(seqs) == 2 and seqs[1] == seqs[0] + 1, seqs
    assert _verify(logged)[0] == 0
    receiver.down = True
    r = _cli(logged, "resume", "--as", "maria")
    assert r.returncode == 2 and "committed" in r.stderr and "audit-log anchor" in r.stderr
    code, report = _verify(logged)  # the anchor lacks the head: it cannot vouch for it
    assert code == 1 and "missing" in report["detail"]
    receiver.down = False
    assert _cli(logged, "audit-log", "anchor").returncode == 0
    assert _verify(logged)[0] == 0


def test_a_write_only_webhook_is_reported_as_not_checked(
    logged: Path,  # noqa: F811
    receiver: _Receiver,
) -> None:
    _add_anchor(logged, f'type = "webhook"\nname = "hook"\nurl = "{receiver.url}"')
    assert _cli(logged, "stop", "--reason", "drill", "--as", "maria").returncode == 0
    assert receiver.heads
    r = _cli(logged, "audit-log", "verify")
    assert r.returncode == 0
    assert "anchor hook: NOT checked: write-only" in r.stdout
