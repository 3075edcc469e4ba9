"""The stale-rates incident end to end, and the ingestion command splice.toml declares."""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import duckdb

from splice.config.workspace import load_config
from splice.demo import build_demo, set_incident


def gmv_by_day(warehouse: Path) -> dict[date, float]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return dict(
            con.execute(
                "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily GROUP BY 1"
            ).fetchall()
        )
    finally:
        con.close()


def test_stale_rates_build_is_green_but_gmv_is_wrong(
    fresh_demo: Path, capfd, demo_workspace: Path
) -> None:
    said: list[str] = []
    # rebuild a copy of the clean demo in place (force), with the vendor serving stale rates
    res = build_demo(fresh_demo, incident="stale-rates", force=True, progress=said.append)

    out, err = capfd.readouterr()
    assert out == "" and err == ""  # the tools' chatter went to the log, not the terminal
    # the steps in demo.log; the tools' own output in .splice/logs/ beside it
    assert "step build" in res.log_path.read_text()
    tools = (res.workspace / ".splice/logs/tools.log").read_text()
    assert "audits ✔" in tools and "dbt build (finance" in tools
    dbt_log = (res.workspace / ".splice/logs/dbt/finance/dbt.log").read_text()
    assert "Running with dbt=" in dbt_log and "Completed successfully" in dbt_log
    assert any("stale-rates" in line for line in said)

    con = duckdb.connect(str(res.warehouse), read_only=True)
    try:
        as_of = dict(
            con.execute(
                "SELECT rate_date, MIN(as_of) FROM warehouse.fx.daily_rates "
                "WHERE rate_date BETWEEN '2026-09-24' AND '2026-09-30' GROUP BY 1"
            ).fetchall()
        )
        monday = con.execute(
            "SELECT COUNT(*) FROM warehouse.fx.daily_rates m JOIN warehouse.fx.daily_rates f "
            "ON f.currency = m.currency AND f.rate_date = '2026-09-25' "
            "WHERE m.rate_date = '2026-09-28' AND m.rate_to_usd = f.rate_to_usd"
        ).fetchone()
    finally:
        con.close()
    assert as_of == {
        date(2026, 9, 24): date(2026, 9, 24),
        date(2026, 9, 25): date(2026, 9, 25),
        date(2026, 9, 28): date(2026, 9, 25),
        date(2026, 9, 29): date(2026, 9, 25),
        date(2026, 9, 30): date(2026, 9, 30),
    }
    assert monday == (30,)

    stale, clean = gmv_by_day(res.warehouse), gmv_by_day(demo_workspace / "warehouse.duckdb")
    wrong = {d for d in clean if stale[d] != clean[d]}  # exact: the build is deterministic
    assert wrong == {date(2026, 9, 28), date(2026, 9, 29)}


def test_the_declared_ingestion_command_reloads_days(fresh_demo: Path) -> None:
    cfg = load_config(fresh_demo)
    job = next(i for i in cfg.ingestion if i.name == "fx_rates_ingest")
    set_incident(fresh_demo, "stale-rates")
    argv = [a.format(start="2026-09-28", end="2026-09-28") for a in job.command]
    argv[0] = sys.executable if argv[0] == "python" else argv[0]
    proc = subprocess.run(argv, cwd=fresh_demo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "vendor served stale rates for 2026-09-28 (as of 2026-09-25)" in proc.stdout

    con = duckdb.connect(str(fresh_demo / "warehouse.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT as_of, COUNT(*) FROM warehouse.raw.fx_rates WHERE rate_date = '2026-09-28' GROUP BY 1"
        ).fetchall()
        loads = con.execute("SELECT COUNT(*) FROM warehouse.raw._dlt_loads").fetchone()
    finally:
        con.close()
    assert rows == [(date(2026, 9, 25), 30)]  # replaced, not duplicated
    assert loads == (2,)
