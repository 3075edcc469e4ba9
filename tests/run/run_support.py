"""Helpers for the run tests: runs on copies of the demo, fault injection, warehouse reads.

(Not in conftest.py: test modules import these by name.)
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
from tests.cli_runner import run_cli

from splice.run.report import RunReport
from splice.workspace.core import Workspace

#: A day after the demo's quarter: one new daily interval (2026-10-01) is due in SQLMesh.
NEXT_DAY = "2026-10-02"

AGG_SQL = "pricing/models/marts/agg_gmv_daily.sql"


def run_in(workspace: Path, selector: str | None = None, **kw: Any) -> RunReport:
    """One `splice run` in this process (the API the CLI calls)."""
    from splice.api import run

    with Workspace.open(workspace) as ws:
        return run(ws, selector, **kw)


def break_sql(workspace: Path, rel: str = AGG_SQL) -> str:
    """Give a model a column that does not exist; returns the original text."""
    path = workspace / rel
    text = path.read_text()
    path.write_text(
        text.replace("COUNT(*) AS bookings,", "COUNT(*) AS bookings, no_such_column AS x,")
    )
    return text


def add_bad_rates(workspace: Path, day: str = "2026-10-01", rate: float = 50.0) -> None:
    """Rates for ``day`` that fx.daily_rates' accepted_range audit (0 < rate < 10) rejects."""
    con = duckdb.connect(str(workspace / "warehouse.duckdb"))
    try:
        con.execute(
            f"INSERT INTO raw.fx_rates SELECT DATE '{day}', currency, {rate}, DATE '{day}', "
            "_dlt_load_id, _dlt_id || '-bad' FROM raw.fx_rates WHERE rate_date = DATE '2026-09-30'"
        )
    finally:
        con.close()


def query(workspace: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(workspace / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def state(workspace: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(str(workspace / ".splice" / "state.db"), timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def attempts(workspace: Path, target: str = "prod") -> dict[str, str]:
    return dict(
        state(workspace, "SELECT node_id, status FROM evidence_attempts WHERE target=?", (target,))
    )


def versions(workspace: Path, target: str = "prod") -> dict[str, int]:
    return {
        n: int(v)
        for n, v in state(
            workspace, "SELECT node_id, version FROM evidence_builds WHERE target=?", (target,)
        )
    }


def prod_snapshot(workspace: Path, model: str = "marts.agg_gmv_daily") -> str:
    """The snapshot (name and fingerprint) SQLMesh's prod environment points at for a model."""
    schema, name = model.split(".")
    with Workspace.open(workspace) as ws:
        env = ws.provider("pricing").context.state_reader.get_environment("prod")
        for s in env.snapshots:
            if s.name.endswith(f'"{schema}"."{name}"'):
                return f"{s.name}@{s.fingerprint.to_identifier()}"
    raise AssertionError(f"{model} not in prod")


def cli_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "SPLICE_WORKSPACE", "SPLICE_TARGET")
    }
    env.update(
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
        SQLMESH__DISABLE_ANONYMIZED_ANALYTICS="true",
        COLUMNS="200",
    )
    env.update(extra)
    return env


def splice_cli(
    *args: str, cwd: Path, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`splice ARGS` in ``cwd``, run in this process (:mod:`tests.cli_runner`; ``timeout`` is
    a child process's only: :func:`splice_bg` starts one)."""
    return run_cli(args, cwd=cwd, env=cli_env(**(env or {})))


def splice_bg(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "splice.cli.main", *args],
        cwd=cwd,
        env=cli_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_event(
    workspace: Path, kind: str, node_id: str, *, timeout: float = 90, proc: Any = None
) -> None:
    """Wait until a running run's journal has ``kind`` for ``node_id``."""
    db = workspace / ".splice" / "state.db"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run ended early ({proc.returncode}): {out}\n{err}")
        if db.exists():
            try:
                rows = state(
                    workspace,
                    "SELECT 1 FROM run_events e JOIN runs r USING(run_id) WHERE r.status='running'"
                    " AND e.kind=? AND e.node_id=?",
                    (kind, node_id),
                )
            except sqlite3.OperationalError:  # tables not created yet
                rows = []
            if rows:
                return
        time.sleep(0.2)
    raise AssertionError(f"no {kind} event for {node_id} within {timeout} s")


SLOW_MODEL = """\
import os
import time


def model(dbt, session):
    dbt.config(materialized="table")
    rows = dbt.ref("fct_gmv_qtd")
    time.sleep(float(os.environ.get("SPLICE_TEST_SLOW_SECONDS", "0")))
    return rows
"""


def add_slow_model(workspace: Path) -> str:
    """A dbt Python model downstream of fct_gmv_qtd that sleeps $SPLICE_TEST_SLOW_SECONDS."""
    (workspace / "finance" / "models" / "marts" / "slow_close.py").write_text(SLOW_MODEL)
    return "finance:slow_close"


def runs_json(workspace: Path) -> list[dict[str, Any]]:
    res = splice_cli("runs", "--json", cwd=workspace)
    assert res.returncode == 0, res.stderr
    return list(json.loads(res.stdout))
