"""Splice's own state in PostgreSQL: moved there from SQLite with nothing lost, shared by
processes that decide at the same time, and refused when it is not one this Splice can use."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

from tests.cli_runner import run_cli

from splice.state.store import StateStore
from splice.warehouse.postgres.local_server import LocalPostgres, free_port


def _splice(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(ws), *args])


def _psycopg_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def test_migrate_moves_every_row_and_the_audit_chain(story_copy: Path, pg_url: str) -> None:
    db = story_copy / ".splice" / "state.db"
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]  # fmt: skip
    counts = {t: con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    con.close()
    assert counts["watch_points"] > 1000 and counts["incidents"] == 1

    r = _splice(story_copy, "state", "migrate", "--to", _psycopg_url(pg_url), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    moved = json.loads(r.stdout)
    assert moved["tables"] == counts and moved["audit_intact"]
    assert "splice-test-pw" not in r.stdout  # the password is never printed
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest  # the SQLite file: only read

    # the workspace now uses it: same incident, same audit chain, the witness agrees
    toml = story_copy / "splice.toml"
    toml.write_text(toml.read_text() + f'\n[state]\nurl = "{_psycopg_url(pg_url)}"\n')
    db.rename(db.with_suffix(".moved"))
    shown = _splice(story_copy, "incident", "show", "INC-1", "--json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert json.loads(shown.stdout)["origin"] == "pricing:fx.daily_rates"
    verified = _splice(story_copy, "audit-log", "verify", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["intact"]

    again = _splice(story_copy, "--new-state", "state", "migrate", "--to", _psycopg_url(pg_url))
    assert again.returncode == 2 and "already in PostgreSQL" in again.stderr


def test_migrate_refuses_a_database_that_holds_a_state(story_copy: Path, pg_url: str) -> None:
    StateStore.open(_psycopg_url(pg_url)).close()  # someone's state is there already
    r = _splice(story_copy, "state", "migrate", "--to", _psycopg_url(pg_url))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "already holds a Splice state" in r.stderr and "nothing was copied" in r.stderr


WRITER = """
import sys, time
from splice.support.principals import Principal
from splice.approvals import auditlog
from splice.state.store import StateStore
url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = StateStore.open(url)
who = Principal.of(name, kind="person", auth="cli-as")
for i in range(n):
    with store.transaction() as conn:
        auditlog.append(conn, kind="decision", principal=who, proposal_id=None,
                        payload={"i": i, "by": name})
store.close()
"""


def test_two_processes_deciding_at_once_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    from splice.approvals import auditlog

    url = _psycopg_url(pg_url)
    StateStore.open(url).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), url, who, "60"], stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        for who in ("maria", "sam")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = StateStore.open(url)
    try:
        report = auditlog.verify(store)
        entries = auditlog.entries(store)
    finally:
        store.close()
    assert report.intact and report.entries == 120
    assert [e.seq for e in entries] == list(range(1, 121))
    by = {n: sorted(json.loads(e.payload)["i"] if isinstance(e.payload, str) else e.payload["i"]
                    for e in entries if e.actor == n) for n in ("maria", "sam")}  # fmt: skip
    assert by == {"maria": list(range(60)), "sam": list(range(60))}


def test_bad_state_urls_are_one_line_errors(pg_server: LocalPostgres, tmp_path: Path) -> None:
    good = pg_server.url("postgres")
    cases = {
        f"postgresql+psycopg://splice@127.0.0.1:{free_port()}/x": "cannot be reached",
        good.replace(":splice-test-pw@", ":wrong@"): "refused the password",
        good.rsplit("/", 1)[0] + f"/missing_{uuid.uuid4().hex[:6]}": "does not exist",
    }
    for url, words in cases.items():
        ws = tmp_path / words.replace(" ", "_")
        ws.mkdir()
        (ws / "splice.toml").write_text(f'[workspace]\nname = "w"\n[state]\nurl = "{url}"\n')
        r = _splice(ws, "incidents")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert words in r.stderr and "[state] url" in r.stderr
        assert "wrong" not in r.stderr  # the password is not echoed
