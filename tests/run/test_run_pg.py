"""`splice run` on PostgreSQL when things go wrong: an SQL error mid-graph, a failed audit, a
run killed half-way; and what a server allows that a DuckDB file does not: `splice watch` while
a run writes, and a run's lock held in the server (an advisory lock), so a run from another
machine is refused too and a killed run's lock is freed by the server."""

from __future__ import annotations

import json
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run"))
from run_support import (  # noqa: E402
    NEXT_DAY,
    attempts,
    break_sql,
    run_in,
    runs_json,
    splice_bg,
    splice_cli,
    wait_for_event,
)

from splice.demo import build_demo
from splice.warehouse.postgres.local_server import LocalPostgres

AGG = "pricing:marts.agg_gmv_daily"
AGG_READERS = {"finance:stg_gmv_daily", "finance:fct_gmv_by_currency", "finance:fct_gmv_qtd"}
SLOW = "finance:slow_close"
SLOW_SQL = """\
select q.*
from {{ ref('fct_gmv_qtd') }} as q
cross join (select pg_sleep({{ env_var('SPLICE_TEST_SLOW_SECONDS', '0') }})) as s
"""


@pytest.fixture
def pg_demo(pg_server: LocalPostgres, tmp_path: Path) -> tuple[Path, str]:
    url = pg_server.create_database(f"run_{uuid.uuid4().hex[:8]}")
    built = build_demo(tmp_path / "travel", warehouse="postgres", warehouse_url=url)
    return built.workspace, url


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return con.execute(sql.encode()).fetchall()


def test_sql_error_mid_graph_skips_downstream_and_keeps_what_ran(pg_demo: tuple[Path, str]) -> None:
    ws, url = pg_demo
    good = break_sql(ws)
    report = run_in(ws, execution_time=NEXT_DAY)
    assert not report.ok and report.status == "failed"
    agg = report.nodes[AGG]
    assert agg.status == "failed" and "no_such_column" in (agg.message or "")
    for up in ("pricing:fx.daily_rates", "pricing:marts.fct_bookings_usd"):
        assert report.nodes[up].status == "success"
        assert attempts(ws)[up] == "succeeded"
    assert set(report.skipped_nodes) == AGG_READERS
    assert report.nodes["finance:fct_gmv_by_channel"].status == "success"
    assert _query(url, "SELECT COUNT(*) FROM finance.fct_gmv_qtd") == [(92,)]
    (ws / "pricing/models/marts/agg_gmv_daily.sql").write_text(good)
    again = run_in(ws, execution_time=NEXT_DAY)
    assert again.ok and set(again.built) == {AGG} | AGG_READERS


def test_a_failed_audit_blocks_everything_downstream(pg_demo: tuple[Path, str]) -> None:
    ws, url = pg_demo
    _query_exec(url, "INSERT INTO raw.fx_rates SELECT DATE '2026-10-01', currency, 50.0, "
                     "DATE '2026-10-01', _dlt_load_id, _dlt_id || '-bad' FROM raw.fx_rates "
                     "WHERE rate_date = DATE '2026-09-30'")  # fmt: skip
    report = run_in(ws, execution_time=NEXT_DAY)
    assert report.status == "failed"
    rates = report.nodes["pricing:fx.daily_rates"]
    assert rates.status == "failed" and "accepted_range" in (rates.message or "")
    audit = report.checks["pricing:audit:fx.daily_rates.accepted_range"]
    assert audit.status == "fail" and audit.failures == 30
    for n in ("pricing:marts.fct_bookings_usd", AGG):
        assert report.nodes[n].status == "skipped"
    assert {"finance:fct_gmv_by_channel"} | AGG_READERS <= set(report.skipped_nodes)
    assert attempts(ws)["pricing:fx.daily_rates"] == "failed"


def _query_exec(url: str, sql: str) -> None:
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(sql.encode())


def _server_lock_free(ws: Path, timeout: float = 20) -> bool:
    from splice.warehouse.postgres.locks import try_lock
    from splice.workspace.core import Workspace

    deadline = time.monotonic() + timeout
    with Workspace.open(ws) as w:
        while time.monotonic() < deadline:
            con = try_lock(w, "target:prod")
            if con is not None:
                con.close()
                return True
            time.sleep(0.3)
    return False


def test_a_killed_run_its_lock_and_a_watch_meanwhile(pg_demo: tuple[Path, str]) -> None:
    ws, url = pg_demo
    (ws / "finance/models/marts/slow_close.sql").write_text(SLOW_SQL)
    a = splice_bg("run", "--execution-time", NEXT_DAY, cwd=ws,
                  env={"SPLICE_TEST_SLOW_SECONDS": "60"})  # fmt: skip
    try:
        wait_for_event(ws, "node_started", SLOW, proc=a)
        b = splice_cli("run", "--execution-time", NEXT_DAY, cwd=ws, timeout=60)
        # the server holds the target's lock too: a run from another machine is refused
        assert not _server_lock_free(ws, timeout=1)
        # a server has no single writer: the watch measures while the run writes
        watched = splice_cli("watch", "--json", cwd=ws, timeout=120)
    finally:
        a.send_signal(signal.SIGKILL)
        a.communicate(timeout=30)
    assert b.returncode == 2 and f"pid {a.pid}" in " ".join(b.stderr.split())
    assert watched.returncode == 0, watched.stderr[-2000:]
    assert json.loads(watched.stdout)["points"] > 0
    assert _server_lock_free(ws)  # the server freed it when the killed run's session died
    (dead,) = [r for r in runs_json(ws) if r["pid"] == a.pid]
    assert dead["status"] == "interrupted"
    c = splice_cli("run", "--execution-time", NEXT_DAY, "--json", cwd=ws, timeout=300)
    assert c.returncode == 0, c.stderr[-2000:]
    rep = json.loads(c.stdout)
    built = {n for n, r in rep["nodes"].items() if r["status"] == "success"}
    assert SLOW in built and not any(n.startswith("pricing:") for n in built)
    assert f"pid {a.pid}" in " ".join(rep["notes"])
    qtd = _query(url, "SELECT COUNT(*) FROM finance.fct_gmv_qtd")
    assert _query(url, "SELECT COUNT(*) FROM finance.slow_close") == qtd == [(92,)]
