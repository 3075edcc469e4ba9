"""Splice's Dagster runner against a real Dagster (``dagster-webserver`` on 127.0.0.1, started by the
test): a daily-partitioned job reloaded one run per day, its asset keys as relations, and the
one-line refusals (unknown job, rejected run config, unreachable webserver)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import duckdb
import pytest

from splice.config.orchestrators import DagsterJob
from splice.errors import OrchestratorError
from splice.orchestrators.dagster import Dagster
from splice.orchestrators.dagster_local import server
from splice.orchestrators.local_server import ensure_running, stop
from splice.warehouse.postgres.local_server import free_port

pytestmark = pytest.mark.orchestrators

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dagster" / "partitioned.py"


@pytest.fixture(scope="module")
def location(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, DagsterJob]]:
    root = tmp_path_factory.mktemp("dagster")
    shutil.copy(FIXTURE, root / "definitions.py")
    cfg = DagsterJob(url=f"http://127.0.0.1:{free_port()}", days="partitions", poll=0.3,
                     local="definitions.py", home="home")  # fmt: skip
    ensure_running(server(cfg, root))
    try:
        yield root, cfg
    finally:
        stop(root / "home")


def test_a_partitioned_job_reloads_one_run_per_day(location: tuple[Path, DagsterJob]) -> None:
    root, cfg = location
    job = Dagster(cfg, "events_load", root=root, ingestion="events")
    assert job.check()["location"]  # found, with its code location
    assert job.asset_relations() == ["raw.events"]
    t0 = time.time()
    runs = job.reload(date(2026, 9, 28), date(2026, 9, 30), tags={"splice/proposal": "PR-9"})
    assert [r.status for r in runs] == ["SUCCESS"] * 3
    assert [r.partition for r in runs] == ["2026-09-28", "2026-09-29", "2026-09-30"]
    assert all(r.url == f"{cfg.url}/runs/{r.run_id}" for r in runs)
    con = duckdb.connect(str(root / "loads.duckdb"), read_only=True)
    try:
        loaded = dict(con.execute("SELECT day, loaded_at FROM events").fetchall())
    finally:
        con.close()
    assert sorted(loaded) == [date(2026, 9, 28), date(2026, 9, 29), date(2026, 9, 30)]
    assert all(at >= t0 for at in loaded.values())
    # Dagster's own record: the runs, newest first, tagged with the proposal
    seen = {r.run_id: r for r in job.recent_runs(10)}
    assert {r.run_id for r in runs} <= set(seen)
    assert all(seen[r.run_id].tags.get("splice/proposal") == "PR-9" for r in runs)


def test_an_unknown_job_is_refused_naming_the_jobs_there(
    location: tuple[Path, DagsterJob],
) -> None:
    root, cfg = location
    with pytest.raises(OrchestratorError) as e:
        Dagster(cfg, "events_lod", root=root, ingestion="events").check()
    assert "has no job 'events_lod' (its jobs: events_load, slow_load)" in e.value.one_line()
    assert "[ingestion.dagster] job of 'events'" in e.value.one_line()


def test_a_run_config_dagster_rejects_is_refused_naming_the_setting(
    location: tuple[Path, DagsterJob],
) -> None:
    root, cfg = location
    bad = cfg.model_copy(update={"days": "run_config", "run_config": {"ops": {"nope": {}}}})
    with pytest.raises(OrchestratorError) as e:
        Dagster(bad, "events_load", root=root, ingestion="events").reload(
            date(2026, 9, 28), date(2026, 9, 28), tags={}
        )
    assert "Dagster refused a run of 'events_load'" in e.value.one_line()
    assert "run_config of 'events'" in e.value.one_line()


def test_an_unreachable_webserver_is_one_line_that_a_retry_may_help() -> None:
    cfg = DagsterJob(url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(OrchestratorError) as e:
        Dagster(cfg, "events_load", root=Path("."), ingestion="events").check()
    line = e.value.one_line()
    assert line.startswith(f"cannot reach Dagster at {cfg.url}")
    assert "nothing was submitted" in line and "(a retry may help)" in line
    assert "\n" not in line


def test_a_run_whose_splice_run_died_is_stopped_in_dagster_by_the_next_holder(
    location: tuple[Path, DagsterJob],
) -> None:
    """A killed apply leaves its queued Dagster run behind; whoever takes over the lock stops
    it there before the undo is restored (kill_orphans), so it cannot write afterwards."""
    import subprocess
    import sys

    from splice.run.children import kill_orphans, remote_run

    root, cfg = location
    (root / "splice.toml").write_text(
        f'[[ingestion]]\nname = "slow"\nrunner = "dagster"\n\n[ingestion.dagster]\n'
        f'url = "{cfg.url}"\njob = "slow_load"\n'
    )
    job = Dagster(cfg.model_copy(update={"local": None}), "slow_load", root=root, ingestion="slow")
    run_id = job.submit({}, {"splice/proposal": "PR-3"})
    deadline = time.monotonic() + 60
    while job.status(run_id).status != "STARTED" and time.monotonic() < deadline:
        time.sleep(0.3)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs: the Splice run that queued it
    mark = remote_run(root / ".splice", job.status(run_id), url=cfg.url, ingestion="slow")
    mark.write_text(mark.read_text().replace(f'"parent": {__import__("os").getpid()}',
                                             f'"parent": {dead.pid}'))  # fmt: skip
    stopped = kill_orphans(root / ".splice")
    assert [s["run_id"] for s in stopped] == [run_id]
    assert job.status(run_id).status == "CANCELED"
    assert not mark.exists()


WORKSPACE_TOML = """\
[workspace]
name = "events"

[[ingestion]]
name = "events"
runner = "dagster"
writes = ["raw.events"]

[ingestion.dagster]
url = "http://127.0.0.1:{port}"
job = "events_load"
days = "partitions"
local = "definitions.py"
home = "home"
"""


def test_a_local_dagster_started_is_said_once_and_splice_local_stop_stops_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The first call that needs the job starts ``dagster-webserver`` and says so on stderr, naming
    how to stop it; ``splice local status`` shows it and ``splice local stop`` stops it."""
    import json
    import subprocess
    import sys

    from splice.config.workspace import load_config
    from splice.orchestrators import for_job
    from splice.orchestrators.local_server import answers

    shutil.copy(FIXTURE, tmp_path / "definitions.py")
    port = free_port()
    (tmp_path / "splice.toml").write_text(WORKSPACE_TOML.format(port=port))

    def splice(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "splice", "-w", str(tmp_path), *args],
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    try:
        for _ in range(2):  # the second finds it running: nothing more to say
            job = for_job(load_config(tmp_path).ingestion[0], tmp_path)
            assert job is not None and job.check()["location"]
        said = [line for line in capfd.readouterr().err.splitlines() if "Splice started" in line]
        assert said == [
            f"Splice started a local Dagster at http://127.0.0.1:{port}; it keeps running after "
            f"this command (`splice --workspace {tmp_path} local stop` stops it)."
        ]
        (rec,) = json.loads(splice("local", "status", "--json").stdout)
        assert (rec["kind"], rec["running"], rec["job"]) == ("dagster", True, "events")
        stopped = splice("local", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert "Dagster" in stopped.stdout and "stopped" in stopped.stdout
        assert not answers(f"http://127.0.0.1:{port}", "/server_info")
        (rec,) = json.loads(splice("local", "status", "--json").stdout)
        assert rec["running"] is False
    finally:
        stop(tmp_path / "home")
