"""The page's session cookie and its secret, without a server."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from splice.web.session import Sessions, csrf_ok, server_secret


def test_the_secret_is_made_once_private_and_shared_by_workers(tmp_path: Path) -> None:
    got: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: got.append(server_secret(tmp_path))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1 and len(got[0]) >= 48  # one secret for all
    path = tmp_path / ".splice" / "serve-secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert server_secret(tmp_path) == got[0]  # a restart keeps everyone signed in


def test_the_environment_overrides_the_secret_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPLICE_SERVE_SECRET", "from-the-vault")
    assert server_secret(tmp_path) == b"from-the-vault"
    assert not (tmp_path / ".splice" / "serve-secret").exists()


def test_a_cookie_from_another_secret_expired_or_altered_is_refused() -> None:
    a, b = Sessions(b"a" * 32), Sessions(b"b" * 32)
    data = a.new({"name": "maria", "kind": "person", "auth": "api-key"})
    value = a.dumps(data)
    assert a.loads(value) == data
    assert b.loads(value) is None  # another server's secret
    assert a.loads(value, now=data["exp"] + 1) is None  # expired
    body, sig = value.split(".")
    assert a.loads(f"{body}x.{sig}") is None and a.loads("") is None and a.loads("a.b.c") is None
    assert a.new({"name": "x"}, expires=1.0)["exp"] == 1  # a token's expiry shortens it


def test_csrf_tokens_are_per_session() -> None:
    s = Sessions(os.urandom(32))
    one, two = s.new({"name": "a"}), s.new({"name": "b"})
    assert one["csrf"] != two["csrf"]
    assert csrf_ok(one, one["csrf"]) and not csrf_ok(one, two["csrf"]) and not csrf_ok(one, "")
