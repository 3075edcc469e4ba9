"""``splice serve`` keeps its SQLite state connection between requests (one per thread), on
the built demo: a kept connection still sees what other processes commit, and it is never
used once the state file or the witness changed, once it was left inside a transaction, or
from another thread."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from splice import api
from splice.errors import StateError
from splice.state.store import StateStore


def _keys(hub: object) -> list[str]:
    with hub.workspace() as ws:  # type: ignore[attr-defined]
        return [k.principal for k in api.list_keys(ws)]


def _opens(hub: object) -> int:
    return int(hub.stats()["state_opens"])  # type: ignore[attr-defined]


def test_a_kept_connection_sees_other_processes_commits(fresh_demo: Path) -> None:
    hub = api.hub(fresh_demo)
    assert _keys(hub) == []
    assert _keys(hub) == []
    assert _opens(hub) == 1  # the second request reused the first one's connection

    made = subprocess.run(
        [sys.executable, "-m", "splice", "-w", str(fresh_demo), "keys", "create",
         "--principal", "ci-agent", "--kind", "agent", "--scopes", "read"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert _keys(hub) == ["ci-agent"]  # another process's commit, read at once
    # that commit moved the audit log's head, so the witness changed: opened and checked again
    assert _opens(hub) == 2
    assert _keys(hub) == ["ci-agent"] and _opens(hub) == 2


def test_a_state_swapped_under_a_kept_connection_is_refused(
    fresh_demo: Path, tmp_path: Path
) -> None:
    hub = api.hub(fresh_demo)
    assert _keys(hub) == []
    state = fresh_demo / ".splice" / "state.db"
    other = StateStore.open(tmp_path / "other.db")  # another state: another id
    other.state_id()
    other.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{state}{suffix}").unlink(missing_ok=True)
    shutil.copy(tmp_path / "other.db", state)
    with pytest.raises(StateError, match="not this workspace's"):
        _keys(hub)


def test_a_connection_left_in_a_transaction_or_on_another_thread_is_not_reused(
    fresh_demo: Path,
) -> None:
    hub = api.hub(fresh_demo)
    with pytest.raises(RuntimeError), hub.workspace() as ws:
        ws.state.conn.execute("BEGIN IMMEDIATE")
        raise RuntimeError("the request failed half-way")
    assert _keys(hub) == [] and _opens(hub) == 2  # not handed the open transaction
    seen: list[list[str]] = []
    t = threading.Thread(target=lambda: seen.append(_keys(hub)))
    t.start()
    t.join()
    assert seen == [[]] and _opens(hub) == 3  # the other thread opened its own
    assert _keys(hub) == [] and _opens(hub) == 3  # and this thread still has its own
