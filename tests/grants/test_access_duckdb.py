"""On DuckDB (a file: no users, no grants) an access request is refused with a clear message,
and nothing is recorded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_runner import run_cli


def splice(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(ws), *args])


def test_duckdb_refuses_access_requests(fresh_demo: Path) -> None:
    r = splice(fresh_demo, "access", "request", "pricing:marts.agg_gmv_daily", "--for",
               "analyst", "--why", "reconcile", "--hours", "4", "--as", "maria")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "no users or grants" in r.stderr and 'type = "postgres"' in r.stderr
    assert "Traceback" not in r.stderr
    listed = splice(fresh_demo, "access", "list", "--all", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    bad = splice(fresh_demo, "access", "approve", "AG-7", "--as", "sam")
    assert bad.returncode == 2 and "no users or grants" in bad.stderr
