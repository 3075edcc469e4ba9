"""Splice's Airflow runner against a real Airflow 3 (``airflow standalone`` on 127.0.0.1,
started by the test): a DAG reloaded one run per logical date, its assets as relations, and
the one-line refusals (a paused DAG, an unknown DAG, an unreachable API server)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from splice.config.orchestrators import AirflowDag
from splice.errors import OrchestratorError
from splice.orchestrators.airflow import Airflow
from splice.orchestrators.airflow_local import server
from splice.orchestrators.local_server import ensure_running, stop
from splice.warehouse.postgres.local_server import free_port

pytestmark = pytest.mark.orchestrators

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "airflow" / "dags"


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, AirflowDag]]:
    root = tmp_path_factory.mktemp("airflow")
    shutil.copytree(FIXTURE, root / "dags")
    cfg = AirflowDag(url=f"http://127.0.0.1:{free_port()}", days="logical_date", poll=0.3,
                     local="dags", home="home")  # fmt: skip
    ensure_running(server(cfg, root))
    try:
        yield root, cfg
    finally:
        stop(root / "home")


def test_a_dag_reloads_one_run_per_logical_date(airflow: tuple[Path, AirflowDag]) -> None:
    root, cfg = airflow
    dag = Airflow(cfg, "events_load", root=root, ingestion="events")
    dag.check()  # waits for the DAG file to be parsed
    assert dag.asset_relations() == ["raw.events"]
    t0 = time.time()
    runs = dag.reload(date(2026, 9, 28), date(2026, 9, 29), tags={"splice/proposal": "PR-7"})
    assert [r.status for r in runs] == ["SUCCESS", "SUCCESS"], [r.message for r in runs]
    assert [r.partition for r in runs] == ["2026-09-28", "2026-09-29"]
    assert all(r.run_id.startswith("splice__PR-7__") for r in runs)
    assert all(r.url == f"{cfg.url}/dags/events_load/runs/{r.run_id}" for r in runs)
    loaded = json.loads((root / "loads.json").read_text())
    assert sorted(loaded) == ["2026-09-28", "2026-09-29"]
    assert all(at >= t0 for at in loaded.values())
    seen = {r.run_id: r for r in dag.recent_runs(10)}
    assert {r.run_id for r in runs} <= set(seen)
    assert "splice/proposal=PR-7" in seen[runs[0].run_id].tags["note"]


def test_a_paused_or_unknown_dag_is_refused_in_one_line(airflow: tuple[Path, AirflowDag]) -> None:
    root, cfg = airflow
    Airflow(cfg, "events_load", root=root, ingestion="events").check()  # parsed by now
    with pytest.raises(OrchestratorError) as e:
        Airflow(cfg, "paused_load", root=root, ingestion="paused").check()
    assert "DAG 'paused_load' is paused" in e.value.one_line()
    assert "airflow dags unpause paused_load" in e.value.one_line()
    running = cfg.model_copy(update={"local": None})
    with pytest.raises(OrchestratorError) as e:
        Airflow(running, "events_lod", root=root, ingestion="events").check()
    assert "has no DAG 'events_lod'" in e.value.one_line()
    assert "[ingestion.airflow] dag of 'events'" in e.value.one_line()


def test_an_unreachable_api_server_is_one_line_that_a_retry_may_help() -> None:
    cfg = AirflowDag(url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(OrchestratorError) as e:
        Airflow(cfg, "events_load", root=Path("."), ingestion="events").check()
    line = e.value.one_line()
    assert line.startswith(f"cannot reach Airflow at {cfg.url}")
    assert "nothing was triggered" in line and "(a retry may help)" in line


def test_a_missing_airflow_command_says_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from splice.orchestrators.airflow_local import airflow_command

    monkeypatch.setenv("SPLICE_AIRFLOW", str(tmp_path / "nowhere" / "airflow"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.prefix", str(tmp_path / "venv"))  # no .venv-airflow beside it
    with pytest.raises(OrchestratorError) as e:
        airflow_command()
    line = e.value.one_line()
    assert f"$SPLICE_AIRFLOW={tmp_path / 'nowhere' / 'airflow'}" in line
    assert "make airflow" in line


class _LosesTriggerAnswers:
    """An HTTP proxy on 127.0.0.1 in front of the real Airflow that passes every request on
    but drops the answer to each DAG-run trigger (as a load balancer timing out would): the
    run is made in Airflow, Splice never hears so."""

    def __init__(self, upstream: str) -> None:
        import threading
        import urllib.error
        import urllib.request
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.dropped = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else None
                keep = {k: v for k, v in self.headers.items()
                        if k.lower() in ("content-type", "authorization", "accept")}  # fmt: skip
                req = urllib.request.Request(f"{upstream}{self.path}", data=body,
                                             method=self.command, headers=keep)  # fmt: skip
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310 - test
                        status, raw = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, raw = e.code, e.read()
                if self.command == "POST" and self.path.endswith("/dagRuns"):
                    proxy.dropped += 1
                    self.close_connection = True
                    return  # the run is made; its answer is lost
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PATCH = _forward  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_trigger_whose_answer_is_lost_is_found_by_its_run_id(
    airflow: tuple[Path, AirflowDag],
) -> None:
    root, cfg = airflow
    Airflow(cfg, "events_load", root=root, ingestion="events").check()  # parsed by now
    proxy = _LosesTriggerAnswers(cfg.url)
    try:
        lossy = AirflowDag(url=proxy.url, days="logical_date", poll=0.3)
        dag = Airflow(lossy, "events_load", root=root, ingestion="events")
        runs = dag.reload(date(2026, 9, 30), date(2026, 9, 30), tags={"splice/proposal": "PR-9"})
        assert proxy.dropped == 1
        # not "nothing was triggered": Splice asked Airflow for the run it had named, and
        # followed it to the end
        assert [r.status for r in runs] == ["SUCCESS"], [r.message for r in runs]
        assert runs[0].run_id.startswith("splice__PR-9__")
        assert "2026-09-30" in json.loads((root / "loads.json").read_text())
    finally:
        proxy.close()
