"""``splice serve``'s bearer-token authenticator on a real state: a burst of requests on one
API key hashes its secret once (scrypt: about 50 ms of CPU and 16 MiB each); when the trust in
a verified key lapses, the key is read again from the state, not hashed again; a key revoked
meanwhile is refused at the next recheck, and a wrong secret for a known key id never passes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from splice.auth import keys
from splice.auth import tokens as access
from splice.config.serve import ServeSection
from splice.errors import AccessError
from splice.state.store import StateStore
from splice.support.principals import Principal

ADMIN = Principal.of("ops", kind="person", auth="os-user", scopes="read,propose,approve")


def _on_state(db: Path, fn: Callable[..., Principal], calls: list[str]) -> Callable[[str], Any]:
    """``fn(state, raw)`` on a store of its own (as serve opens one per request), counted."""

    def run(raw: str) -> Principal:
        calls.append(raw)
        state = StateStore.open(db)
        try:
            return fn(state, raw)
        finally:
            state.close()

    return run


@pytest.fixture
def setup(tmp_path: Path) -> tuple[access.Authenticator, str, Path, list[str], list[str]]:
    db = tmp_path / "state.db"
    state = StateStore.open(db)
    try:
        _, key = keys.create(
            state, name="ci-agent", kind="agent", scopes="read,propose", principal=ADMIN
        )
    finally:
        state.close()
    hashed: list[str] = []
    reread: list[str] = []
    auth = access.Authenticator(
        ServeSection(),
        _on_state(db, keys.authenticate, hashed),
        _on_state(db, keys.reconfirm, reread),
    )
    return auth, key, db, hashed, reread


def test_a_burst_on_one_key_hashes_its_secret_once(setup: Any) -> None:
    auth, key, _, hashed, _ = setup
    start = threading.Barrier(24)
    got: list[Principal] = []

    def one() -> None:
        start.wait()
        got.append(auth.authenticate(key)[0])

    threads = [threading.Thread(target=one) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 24 and {p.name for p in got} == {"ci-agent"}
    assert {p.kind for p in got} == {"agent"}
    assert len(hashed) == 1  # not 24 scrypt hashes at once
    assert auth.checks == 1


def test_a_lapsed_key_is_read_again_and_a_revoked_one_refused(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth, key, db, hashed, reread = setup
    monkeypatch.setattr(access, "API_KEY_RECHECK", 0.05)
    assert auth.authenticate(key)[0].name == "ci-agent"
    time.sleep(0.1)
    assert auth.remembered(key) is None  # the trust lapsed
    assert auth.authenticate(key)[0].name == "ci-agent"
    assert (len(hashed), len(reread)) == (1, 1)  # read again, not hashed again

    state = StateStore.open(db)
    try:
        keys.revoke(state, key.split("_")[1], principal=ADMIN)
    finally:
        state.close()
    time.sleep(0.1)
    for _ in range(2):  # refused at the recheck, and from then on by the full check
        with pytest.raises(AccessError, match="invalid or revoked"):
            auth.authenticate(key)
    assert len(reread) == 2 and len(hashed) == 2


def test_a_wrong_secret_for_a_known_key_is_refused(setup: Any) -> None:
    auth, key, _, hashed, reread = setup
    assert auth.authenticate(key)[0].name == "ci-agent"
    forged = key[:-4] + ("aaaa" if not key.endswith("aaaa") else "bbbb")
    with pytest.raises(AccessError):
        auth.authenticate(forged)
    assert len(hashed) == 2 and not reread  # the forged token was hashed, never trusted
