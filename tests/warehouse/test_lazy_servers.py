"""A workspace's own warehouse server (``[warehouse] local``: PostgreSQL or Spark Connect) starts
on the first warehouse connection, tool load or run, never when the workspace opens: a command
that reads only Splice's state answers without starting it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli_runner import run_cli

WAREHOUSES = {
    "spark": '[warehouse]\ntype = "spark"\nremote = "sc://127.0.0.1:1"\nlocal = ".splice/spark"\n',
    "postgres": '[warehouse]\ntype = "postgres"\nlocal = ".splice/pg"\nport = 1\n',
}


@pytest.mark.parametrize("kind", sorted(WAREHOUSES))
def test_reading_the_state_starts_no_local_server(kind: str, tmp_path: Path) -> None:
    (tmp_path / "splice.toml").write_text('[workspace]\nname = "lazy"\n\n' + WAREHOUSES[kind])
    for args in (["incidents", "--json"], ["proposals", "--json"], ["operator", "status"]):
        done = run_cli(["-w", str(tmp_path), *args])
        assert done.returncode == 0, (args, done.stderr)
    assert json.loads(run_cli(["-w", str(tmp_path), "incidents", "--json"]).stdout) == []
    local = tmp_path / ".splice" / ("spark" if kind == "spark" else "pg")
    assert not local.exists()  # nothing initialised, nothing started
    status = run_cli(["-w", str(tmp_path), "local", "status"])
    assert "not running" in status.stdout


def test_every_connection_asks_the_workspace_for_its_server_first(tmp_path: Path) -> None:
    """``warehouse.connect`` (every query Splice sends goes through it) calls the workspace's
    ``ensure_warehouse`` before it connects: with the graph cached, no tool loads, and this is
    what starts a local server for a watch (the start itself: tests/demo/test_local_server.py)."""
    import duckdb

    from splice.warehouse.connect import connect
    from splice.workspace.core import Workspace

    (tmp_path / "splice.toml").write_text('[workspace]\nname = "lazy"\n')  # DuckDB
    duckdb.connect(str(tmp_path / "warehouse.duckdb")).close()
    with Workspace.open(tmp_path) as ws:
        calls: list[str] = []
        ensure = ws.ensure_warehouse

        def asked() -> None:
            calls.append("ensure")
            ensure()

        ws.ensure_warehouse = asked  # type: ignore[method-assign]
        with connect(ws, "a test") as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
        assert calls == ["ensure"]
