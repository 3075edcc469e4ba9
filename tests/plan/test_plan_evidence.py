"""Evidence in Splice's state: versions, inputs seen, attempts, and crash safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from splice.plan.evidence import (
    history,
    last_attempts,
    last_builds,
    record_attempt,
    record_build,
    record_failure,
    version_before,
)
from splice.state.store import SCHEMA_VERSION, StateStore


def _store(tmp_path: Path) -> StateStore:
    return StateStore.open(tmp_path / "state.db")


def test_versions_grow_per_target_and_node(tmp_path: Path) -> None:
    s = _store(tmp_path)
    fp = {"sql": "a", "config": "b"}
    assert record_build(s, target="prod", node_id="p:a", fingerprint=fp, run_id="r1") == 1
    assert record_build(s, target="prod", node_id="p:a", fingerprint=fp, run_id="r2", rows=7) == 2
    assert record_build(s, target="dev", node_id="p:a", fingerprint=fp, run_id="r3") == 1
    rec = last_builds(s, "prod")["p:a"]
    assert (rec.version, rec.run_id, rec.rows, rec.reason, rec.fingerprint) == (
        2,
        "r2",
        7,
        "build",
        fp,
    )
    assert [h["version"] for h in history(s, "prod", "p:a")] == [1, 2]
    assert last_builds(s, "dev")["p:a"].version == 1
    s.close()


def test_upstream_versions_seen_are_recorded(tmp_path: Path) -> None:
    s = _store(tmp_path)
    for _ in range(3):
        record_build(s, target="prod", node_id="p:up", fingerprint={}, run_id="r")
    record_build(
        s, target="prod", node_id="q:down", fingerprint={}, run_id="r", upstream=["p:up", "p:never"]
    )
    rec = last_builds(s, "prod")["q:down"]
    assert rec.inputs == {"p:up": 3, "p:never": 0} and rec.inputs_recorded
    record_build(
        s, target="prod", node_id="q:down", fingerprint={}, run_id="r", upstream={"p:up": 2}
    )
    assert last_builds(s, "prod")["q:down"].inputs == {"p:up": 2}
    s.close()


def test_version_history_answers_what_a_build_saw(tmp_path: Path) -> None:
    s = _store(tmp_path)
    record_build(s, target="prod", node_id="p:up", fingerprint={}, run_id="r1")
    record_build(s, target="prod", node_id="q:down", fingerprint={}, run_id="r1")
    record_build(s, target="prod", node_id="p:up", fingerprint={}, run_id="r2")
    down = last_builds(s, "prod")["q:down"]
    assert not down.inputs_recorded
    assert version_before(s, "prod", "p:up", down.seq) == 1
    assert last_builds(s, "prod")["p:up"].version == 2
    s.close()


def test_attempts_failures_and_interruptions(tmp_path: Path) -> None:
    s = _store(tmp_path)
    record_build(s, target="prod", node_id="p:a", fingerprint={}, run_id="r1")
    record_attempt(s, target="prod", node_ids=["p:a", "p:b"], run_id="r2")
    record_failure(s, target="prod", node_id="p:a", run_id="r2", error=RuntimeError("boom"))
    att = last_attempts(s, "prod")
    assert att["p:a"].status == "failed" and "boom" in (att["p:a"].error or "")
    assert att["p:b"].status == "running"  # r2 never finished it
    assert last_builds(s, "prod")["p:a"].version == 1  # the last good build is kept
    record_build(s, target="prod", node_id="p:a", fingerprint={}, run_id="r3")
    assert last_attempts(s, "prod")["p:a"].status == "succeeded"
    s.close()


def test_migration_2_is_applied(tmp_path: Path) -> None:
    s = _store(tmp_path)
    assert s.schema_version == SCHEMA_VERSION >= 2
    tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "evidence_versions",
        "evidence_builds",
        "evidence_inputs",
        "evidence_attempts",
    } <= tables
    s.close()


def test_sigkill_inside_record_build_leaves_state_consistent(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    s = StateStore.open(db)
    record_build(s, target="prod", node_id="p:a", fingerprint={"sql": "1"}, run_id="r1")
    s.close()
    # a process that dies (SIGKILL) in the middle of record_build's transaction: after the new
    # version row is written and before the attempt is updated and the transaction commits
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        import splice.plan.evidence as ev
        from splice.state.store import StateStore

        def die(*a, **k):
            os.kill(os.getpid(), signal.SIGKILL)

        ev._set_attempt = die
        s = StateStore.open(Path({str(db)!r}))
        ev.record_build(s, target="prod", node_id="p:a", fingerprint={{"sql": "2"}}, run_id="r2")
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == -signal.SIGKILL, res.stderr
    s = StateStore.open(db)
    rec = last_builds(s, "prod")["p:a"]
    assert (rec.version, rec.run_id, rec.fingerprint) == (1, "r1", {"sql": "1"})
    assert [h["version"] for h in history(s, "prod", "p:a")] == [1]
    # and the next run picks up from there
    assert record_build(s, target="prod", node_id="p:a", fingerprint={"sql": "2"}, run_id="r3") == 2
    s.close()
    assert os.path.exists(db)


def test_same_data_refreshes_the_record_without_a_new_version(tmp_path: Path) -> None:
    s = _store(tmp_path)
    record_build(s, target="prod", node_id="p:m", fingerprint={"snapshot": "1"}, run_id="r1")
    v = record_build(
        s, target="prod", node_id="p:m", fingerprint={"snapshot": "2"}, run_id="r2", same_data=True
    )
    rec = last_builds(s, "prod")["p:m"]
    assert (v, rec.version, rec.fingerprint, rec.run_id) == (1, 1, {"snapshot": "2"}, "r2")
    # a first build always makes version 1
    assert (
        record_build(s, target="prod", node_id="p:n", fingerprint={}, run_id="r", same_data=True)
        == 1
    )
    s.close()
