"""``splice demo DIR --warehouse postgres`` with no URL: a throwaway PostgreSQL in the workspace,
stopped when the demo is done and started again by the next command that needs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psycopg
from tests.cli_runner import run_cli
from tests.pg_support import PG_PASSWORD, ensure_postgres

from splice.warehouse.postgres.local_server import LocalPostgres


def _splice(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env={**os.environ, **(env or {})})


def test_the_throwaway_server_is_stopped_after_the_demo_and_started_on_demand(
    tmp_path: Path, pg_url: str
) -> None:
    """The warehouse on a throwaway server in the workspace; Splice's state on another
    server's database (--state-url)."""
    ensure_postgres()
    ws = tmp_path / "travel"
    data = ws / ".splice" / "postgres"
    state_url = pg_url.replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        r = _splice("demo", str(ws), "--warehouse", "postgres", "--state-url", state_url, "--json")
        assert r.returncode == 0, r.stderr[-3000:]
        built = json.loads(r.stdout)
        assert built["warehouse"].startswith("postgresql://splice@127.0.0.1:")
        assert built["counts"]["qtd_days"] == 92
        assert not (data / "postmaster.pid").exists()  # stopped when the demo was done
        toml = (ws / "splice.toml").read_text()
        assert 'type = "postgres"' in toml and 'local = ".splice/postgres"' in toml
        assert (
            "password: \"{{ env_var('SPLICE_DEMO_PG_PASSWORD'"
            in (ws / "finance" / "profiles.yml").read_text()
        )
        # the state's password is not in any file: a later command is given it as the demo said
        r = _splice("-w", str(ws), "watch", "--backfill", "--json",
                    env={"SPLICE_DEMO_PG_PASSWORD": PG_PASSWORD})  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        assert json.loads(r.stdout)["points"] > 8000
        assert (data / "postmaster.pid").exists()  # the command started it
        assert not (ws / ".splice" / "state.db").exists()
        with psycopg.connect(pg_url) as con:  # the run and the watch are in the state database
            assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 1
            assert con.execute("SELECT COUNT(*) FROM watch_points").fetchone()[0] > 8000
    finally:
        LocalPostgres(data).stop()


def test_a_url_for_a_duckdb_demo_is_refused_in_one_line(tmp_path: Path) -> None:
    r = _splice("demo", str(tmp_path / "x"), "--warehouse-url", "postgresql://u@h/db")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--warehouse postgres" in r.stderr
    assert not (tmp_path / "x").exists()


def test_an_unreachable_server_is_named_before_anything_is_loaded(tmp_path: Path) -> None:
    from splice.warehouse.postgres.local_server import free_port

    url = f"postgresql://splice@127.0.0.1:{free_port()}/travel"
    r = _splice("demo", str(tmp_path / "x"), "--warehouse", "postgres", "--warehouse-url", url)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "failed at step 'postgres'" in r.stderr and "correct --warehouse-url" in r.stderr


def test_a_server_in_a_deep_workspace_starts(tmp_path: Path) -> None:
    """Its Unix socket path would pass the kernel's 107 bytes: the server listens on TCP only
    (it failed to start before, for any workspace deep enough)."""
    ensure_postgres()
    data = tmp_path / ("deep-" * 16) / "travel" / ".splice" / "postgres"
    assert len(f"{data}/.s.PGSQL.54321") > 107
    server = LocalPostgres(data).start()
    try:
        url = server.create_database("deep")
        with psycopg.connect(url) as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


def test_the_first_command_needing_the_warehouse_starts_it_and_splice_local_stop_stops_it(
    tmp_path: Path,
) -> None:
    """A workspace whose warehouse is a local PostgreSQL (stopped): a command that reads only
    Splice's state leaves it stopped; the first command that needs the warehouse starts the
    server and says so once, naming how to stop it; ``splice local stop`` stops it (as root
    too, where a bare ``pg_ctl stop`` is refused)."""
    from splice.demo import write_workspace
    from splice.demo.pg import start_local, stop_local, write_configs

    ensure_postgres()
    ws = tmp_path / "travel"
    write_workspace(ws)
    target = start_local(ws)
    write_configs(ws, target)
    stop_local(ws)
    data = ws / ".splice" / "postgres"
    assert not (data / "postmaster.pid").exists()
    try:
        status = _splice("-w", str(ws), "local", "status", "--json")
        assert status.returncode == 0, status.stderr
        (rec,) = json.loads(status.stdout)
        assert rec["kind"] == "postgres" and rec["running"] is False
        assert rec["address"] == f"127.0.0.1:{target.port}" and rec["home"] == ".splice/postgres"
        assert not (data / "postmaster.pid").exists()  # status never starts it

        state_only = _splice("-w", str(ws), "runs", "--json")  # Splice's state: no server
        assert state_only.returncode == 0, state_only.stderr
        assert "Splice started" not in state_only.stderr
        assert not (data / "postmaster.pid").exists()

        first = _splice("-w", str(ws), "ls", "--json")  # the tools load: the server starts
        assert first.returncode == 0, first.stderr
        said = [line for line in first.stderr.splitlines() if "Splice started" in line]
        assert said == [
            f"Splice started a local PostgreSQL on 127.0.0.1:{target.port} (data in "
            f".splice/postgres); it keeps running after this command (`splice --workspace "
            f"{ws} local stop` stops it)."
        ]
        again = _splice("-w", str(ws), "ls", "--json")  # already running: nothing to say
        assert again.returncode == 0 and "Splice started" not in again.stderr

        status = _splice("-w", str(ws), "local", "status")
        assert status.returncode == 0, status.stderr
        assert "PostgreSQL" in status.stdout and "running (pid " in status.stdout
        assert "local stop stops them" in status.stdout
        with psycopg.connect(target_url := f"postgresql://splice@127.0.0.1:{target.port}/travel"):
            pass

        stopped = _splice("-w", str(ws), "local", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert "stopped" in stopped.stdout and "Traceback" not in stopped.stderr
        assert not (data / "postmaster.pid").exists()
        try:
            psycopg.connect(target_url, connect_timeout=3).close()
            raise AssertionError("the server still answers after splice local stop")
        except psycopg.OperationalError:
            pass
        after = _splice("-w", str(ws), "local", "stop", "--json")
        assert after.returncode == 0
        assert [(r["running"], r["stopped"]) for r in json.loads(after.stdout)] == [(False, False)]
    finally:
        LocalPostgres(data).stop()
