"""Shared by the orchestrator tests: the demo story with its rates feed in an orchestrator,
private copies with an orchestrator of their own, the CLI, and the frozen days' raw rows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import duckdb

from splice import api
from splice.demo import relocate
from splice.warehouse.postgres.local_server import free_port

FX = "ingestion:fx_rates_ingest"


def copy_workspace(src: Path, dest: Path) -> Path:
    """A private copy with an orchestrator of its own (a new port and instance: the
    original's server would run the original's code)."""

    def skip(d: str, names: list[str]) -> list[str]:
        return [n for n in ("dagster", "airflow") if n in names] if d.endswith(".splice") else []

    shutil.copytree(src, dest, symlinks=True, ignore=skip)
    relocate(dest)
    toml = dest / "splice.toml"
    toml.write_text(re.sub(r'url = "http://127\.0\.0\.1:\d+"',
                           f'url = "http://127.0.0.1:{free_port()}"', toml.read_text()))  # fmt: skip
    return dest


def stop(ws: Path) -> None:
    api.stop_local_orchestrators(ws)


def cli(ws: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from splice.cli.main import cli as main
    from splice.cli.main import register_commands

    register_commands()
    return CliRunner().invoke(main, ["-w", str(ws), *args])


def fx_rows(ws: Path) -> list[tuple[Any, ...]]:
    """raw.fx_rates for the frozen days, every column that matters, in order."""
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT rate_date, currency, rate_to_usd, as_of FROM warehouse.raw.fx_rates "
            "WHERE rate_date BETWEEN '2026-09-28' AND '2026-09-29' ORDER BY 1, 2"
        ).fetchall()
    finally:
        con.close()


def orchestrator_run(ws: Path, run_id: str) -> Any:
    """The run as the workspace's orchestrator records it now."""
    from splice.config.workspace import load_config
    from splice.orchestrators import for_job

    job = next(j for j in load_config(ws).ingestion if j.name == "fx_rates_ingest")
    orch = for_job(job, ws)
    assert orch is not None
    return orch.status(run_id)


def one_watch_per_orchestrator_run(ws: Path) -> None:
    """The operator sees a finished run of the ingestion job in the orchestrator at its next
    poll and watches what the job feeds, once: a restarted operator (a new one on the same
    state) does not watch the same run again."""
    import time
    from datetime import date

    from splice import api
    from splice.operator.clock import SystemClock

    with (ws / "splice.toml").open("a") as f:
        f.write("\n[operator]\nquiet_seconds = 0\npoll_seconds = 0.2\n")

    def watches() -> list[dict[str, Any]]:
        with api.open_workspace(ws) as w:
            return [a for a in api.operator_activity(w, limit=500)
                    if a["kind"] == "watch" and "orchestrator" in a["summary"]]  # fmt: skip

    first = api.operator_for_root(ws, clock=SystemClock())
    first.tick()  # the first look: the orchestrator is not running yet; what ends now is news
    with api.open_workspace(ws) as w:
        (run,) = api.queue_ingestion(w, "fx_rates_ingest", date(2026, 9, 28), date(2026, 9, 28),
                                     tags={"splice/reason": "the team's morning load"})  # fmt: skip
    assert run.ok, run.message
    time.sleep(0.3)  # one poll interval
    first.tick()
    (seen,) = watches()
    (trigger,) = seen["triggers"]
    assert (trigger["source"], trigger["job"], trigger["run_id"]) == (
        "orchestrator", "fx_rates_ingest", run.run_id)  # fmt: skip
    assert {"fx_rate", "gmv_usd"} <= set(seen["only"])
    restarted = api.operator_for_root(ws, clock=SystemClock())
    time.sleep(0.3)
    restarted.tick()
    assert len(watches()) == 1  # the cursor in the state: the same run is not watched twice
