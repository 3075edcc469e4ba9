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


def test_the_first_connection_starts_it(tmp_path: Path) -> None:
    """What needs the warehouse asks for the server first (here it cannot start: the error
    says so, where the old behaviour failed at every command's start)."""
    from splice.errors import SpliceError
    from splice.warehouse.connect import connect
    from splice.workspace.core import Workspace

    (tmp_path / "splice.toml").write_text('[workspace]\nname = "lazy"\n\n' + WAREHOUSES["postgres"])
    with Workspace.open(tmp_path) as ws:
        calls: list[str] = []
        ws.config.warehouse.__dict__["local"] = None  # nothing to start: connect goes straight on
        ws.ensure_warehouse = lambda: calls.append("ensure")  # type: ignore[method-assign]
        with pytest.raises(SpliceError), connect(ws, "a test"):
            pass
        assert calls == ["ensure"]
