"""OpenLineage events out of `splice run`, on copies of the demo with the real tools (dbt,
SQLMesh, DuckDB), through openlineage-python's own transports: every event valid by the spec's
JSON Schemas (``spec/``), START and COMPLETE / FAIL for the run and each node, datasets named as
the graph's relations, column lineage on the models' outputs. Without configuration nothing is
sent and nothing of OpenLineage is imported; a dead endpoint never fails a run."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ol_support import file_transport, read_events, validate_run_event
from tests.run.run_support import NEXT_DAY, break_sql, run_in

from splice.graph.model import Graph, Node, Relation
from splice.openlineage import emit, settings
from splice.openlineage.receive import parse, relations
from splice.workspace.core import Workspace

RUN_JOB = "splice.run.prod"
AGG = "pricing:marts.agg_gmv_daily"
AGG_READERS = {"finance:stg_gmv_daily", "finance:fct_gmv_by_currency", "finance:fct_gmv_qtd"}


@pytest.fixture(autouse=True)
def _no_openlineage_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test configures OpenLineage itself (and no ~/.openlineage of the machine counts)."""
    for k in list(os.environ):
        if k.startswith("OPENLINEAGE"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _by_job(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault(e["job"]["name"], []).append(e)
    return out


def _inputs_of(facet: dict[str, Any], column: str) -> set[tuple[str, str, str, str]]:
    return {
        (f["name"], f["field"], t["type"], t.get("subtype", ""))
        for f in facet["fields"][column]["inputFields"]
        for t in f["transformations"]
    }


def test_a_run_sends_start_and_complete_for_itself_and_each_node(
    fresh_demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = tmp_path / "events.jsonl"
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(file_transport(tmp_path / "ol.yml", sent)))
    # a new day is due: SQLMesh's three models, then the dbt models downstream of them
    report = run_in(fresh_demo, execution_time=NEXT_DAY)
    assert report.ok, report.to_dict()
    events = read_events(sent)
    for e in events:
        validate_run_event(e)
    jobs = _by_job(events)

    # the run as a whole: START first, COMPLETE last, Splice's run id among its tags
    assert [e["eventType"] for e in jobs[RUN_JOB]] == ["START", "COMPLETE"]
    assert events[0] == jobs[RUN_JOB][0] and events[-1] == jobs[RUN_JOB][1]
    run_uuid = events[0]["run"]["runId"]
    assert {e["run"]["runId"] for e in jobs[RUN_JOB]} == {run_uuid}
    tags = {t["key"]: t["value"] for t in events[0]["run"]["facets"]["tags"]["tags"]}
    assert tags["splice.run_id"] == report.run_id and tags["splice.target"] == "prod"
    assert events[0]["job"]["namespace"] == "splice"

    # each node the run built: its own run, START then COMPLETE, the run as its parent
    built = {n for n, r in report.nodes.items() if r.status in ("success", "noop")}
    assert {"pricing:fx.daily_rates", AGG, "finance:fct_gmv_qtd"} <= built
    assert set(jobs) - {RUN_JOB} == built  # no test or audit is a job of its own
    namespace = f"duckdb://{(fresh_demo / 'warehouse.duckdb').resolve()}"
    with Workspace.open(fresh_demo) as ws:
        graph = ws.graph()
    completes: dict[str, dict[str, Any]] = {}
    for nid in built:
        node = graph.nodes[nid]
        start, done = jobs[nid]
        assert (start["eventType"], done["eventType"]) == ("START", "COMPLETE"), nid
        assert start["run"]["runId"] == done["run"]["runId"] != run_uuid
        parent = done["run"]["facets"]["parent"]
        assert parent["run"]["runId"] == run_uuid and parent["job"]["name"] == RUN_JOB
        assert [o["name"] for o in done["outputs"]] == [r.key for r in node.all_writes]
        assert {o["namespace"] for o in done["outputs"] + done["inputs"]} == {namespace}
        assert {i["name"] for i in done["inputs"]} == {r.key for r in node.reads}
        assert done["job"]["facets"]["jobType"]["jobType"] == node.kind.upper()
        if node.kind == "model":
            facets = done["outputs"][0]["facets"]
            assert "columnLineage" in facets and "schema" in facets, nid
        completes[nid] = done
        # and the event, received back, is that node of the graph
        assert relations(parse(json.dumps(done).encode()), graph) == [nid]

    # known columns: SQLMesh's rate computed from the raw table's, dbt's running total from
    # the staging model's gmv_usd (across the dbt/SQLMesh boundary two hops up)
    rates = completes["pricing:fx.daily_rates"]["outputs"][0]["facets"]["columnLineage"]
    assert ("warehouse.raw.fx_rates", "rate_to_usd", "DIRECT", "TRANSFORMATION") in _inputs_of(
        rates, "rate_to_usd"
    )
    qtd = completes["finance:fct_gmv_qtd"]["outputs"][0]["facets"]["columnLineage"]
    assert ("warehouse.finance.stg_gmv_daily", "gmv_usd", "DIRECT", "AGGREGATION") in _inputs_of(
        qtd, "gmv_usd_qtd"
    )
    stg = completes["finance:stg_gmv_daily"]["outputs"][0]["facets"]["columnLineage"]
    assert ("warehouse.marts.agg_gmv_daily", "gmv_usd", "DIRECT", "IDENTITY") in _inputs_of(
        stg, "gmv_usd"
    )
    # no OpenLineage variable the client set is left behind in the process
    assert not [k for k in os.environ if k.startswith("OPENLINEAGE__")]


def test_a_failed_model_sends_fail_and_its_readers_send_nothing(
    fresh_demo: Path, tmp_path: Path
) -> None:
    # configured by an openlineage.yml beside splice.toml (the client itself does not look there)
    sent = tmp_path / "events.jsonl"
    file_transport(fresh_demo / "openlineage.yml", sent)
    break_sql(fresh_demo)  # agg_gmv_daily selects a column that does not exist
    report = run_in(fresh_demo, execution_time=NEXT_DAY)
    assert report.status == "failed" and report.nodes[AGG].status == "failed"
    events = read_events(sent)
    for e in events:
        validate_run_event(e)
    jobs = _by_job(events)
    assert [e["eventType"] for e in jobs[AGG]] == ["START", "FAIL"]
    error = jobs[AGG][1]["run"]["facets"]["errorMessage"]
    assert "no_such_column" in error["message"] and error["programmingLanguage"] == "SQL"
    assert "columnLineage" not in jobs[AGG][1]["outputs"][0]["facets"]
    # skipped before they started: nothing ran, nothing is said
    assert not AGG_READERS & set(jobs)
    assert [e["eventType"] for e in jobs["pricing:fx.daily_rates"]] == ["START", "COMPLETE"]
    assert [e["eventType"] for e in jobs[RUN_JOB]] == ["START", "FAIL"]
    assert AGG in jobs[RUN_JOB][1]["run"]["facets"]["errorMessage"]["message"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_endpoint_never_fails_the_run(
    fresh_demo: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setattr(emit, "FLUSH_SECONDS", 1.0)
    before = Counter(emit.STATS)
    caplog.set_level(logging.WARNING, logger="splice.openlineage")
    report = run_in(fresh_demo, "finance:stg_gmv_daily", full=True)
    assert report.ok and report.built == ["finance:stg_gmv_daily"]
    # the first event is still being retried by the client (urllib3's backoff): wait for it
    deadline = time.monotonic() + 60
    while emit.STATS["failed"] == before["failed"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert emit.STATS["failed"] > before["failed"]
    assert emit.STATS["sent"] == before["sent"]
    assert any("was not sent" in r.getMessage() for r in caplog.records)
    assert not [k for k in os.environ if k.startswith("OPENLINEAGE__")]


def test_without_configuration_nothing_is_sent_nor_imported(fresh_demo: Path, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENLINEAGE")}
    env["HOME"] = str(tmp_path)
    script = (
        "import sys\n"
        "from splice.api import run\n"
        "from splice.workspace.core import Workspace\n"
        "with Workspace.open(sys.argv[1]) as ws:\n"
        "    r = run(ws, 'finance:stg_gmv_daily', full=True)\n"
        "print('RESULT', r.status, r.built, sorted(m for m in sys.modules\n"
        "      if m.split('.')[0] == 'openlineage' or m.startswith('splice.openlineage.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(fresh_demo)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    # only the cheap check ran (splice.openlineage.settings: the standard library only)
    assert line == "RESULT success ['finance:stg_gmv_daily'] ['splice.openlineage.settings']"
    assert "eventType" not in out.stdout + out.stderr  # no console fallback either


# -- the configuration, without a run -------------------------------------------------------------
def test_where_the_configuration_comes_from(tmp_path: Path) -> None:
    cwd, home, root = tmp_path / "cwd", tmp_path / "home", tmp_path / "ws"
    for d in (cwd, home / ".openlineage", root):
        d.mkdir(parents=True)

    def where(env: dict[str, str]) -> str | None:
        return settings.configured(root, env=env, cwd=cwd, home=home)

    assert where({}) is None
    assert where({"OPENLINEAGE_CONFIG": str(tmp_path / "missing.yml")}) is None
    (root / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert where({}) == str(root / "openlineage.yml")
    (home / ".openlineage" / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert where({}) == str(home / ".openlineage" / "openlineage.yml")
    assert where({"OPENLINEAGE_DISABLED": "True"}) is None
    assert where({"OPENLINEAGE_URL": "http://x"}) == str(home / ".openlineage" / "openlineage.yml")
    assert settings.configured(None, env={"OPENLINEAGE_URL": "http://x"}, cwd=cwd, home=cwd) == (
        "OPENLINEAGE_URL"
    )


def test_the_clients_console_fallback_is_not_a_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file that chooses no transport: the client would print to the console; Splice sends nothing
    facets_only = tmp_path / "facets.yml"
    facets_only.write_text("facets:\n  environment_variables: [USER]\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(facets_only))
    assert emit.make_client() is None
    chosen = tmp_path / "console.yml"
    chosen.write_text("transport:\n  type: console\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(chosen))
    client = emit.make_client()
    assert client is not None and client.transport.kind == "console"
    monkeypatch.delenv("OPENLINEAGE_CONFIG")
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9/")
    client = emit.make_client()
    assert client is not None and client.transport.kind == "http"
    assert not [k for k in os.environ if k.startswith("OPENLINEAGE__")]  # the client's aliases
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert emit.make_client() is None


# -- the emitter on journal events, without the tools ------------------------------------------
class _Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def close(self, timeout: float = -1) -> bool:
        return True


def _event(kind: str, ts: float, node_id: str | None = None, **kw: Any) -> Any:
    return SimpleNamespace(
        run_id="r20261001-093000-abcdef", ts=ts, kind=kind, node_id=node_id,
        status=kw.get("status"), duration=kw.get("duration"), rows=kw.get("rows"),
        data=kw.get("data", {}),
    )  # fmt: skip


def test_the_emitter_on_journal_events(tmp_path: Path) -> None:
    from openlineage.client.serde import Serde

    from splice.config.warehouse import WarehouseSection

    g = Graph()
    g.add_node(Node("p:a", "p", "a", "model", "dbt", writes=Relation("w", "s", "a"),
                    reads=[Relation("w", "raw", "x")], columns={"id": "INTEGER"}))  # fmt: skip
    g.add_node(Node("p:b", "p", "b", "model", "dbt", writes=Relation("w", "s", "b")))
    g.add_node(Node("p:t", "p", "t", "test", "dbt", reads=[Relation("w", "s", "a")]))
    ws = SimpleNamespace(
        target="dev",
        config=SimpleNamespace(warehouse=WarehouseSection()),
        warehouse_path=tmp_path / "w.duckdb",
        graph=lambda: g,
    )
    client = _Recorder()
    emitter = emit.RunEmitter(ws, "r20261001-093000-abcdef", client)  # type: ignore[arg-type]
    for ev in [
        _event("run_started", 1.0),
        _event("node_started", 2.0, "p:a", data={"kind": "model"}),
        _event("node_started", 2.0, "p:t", data={"kind": "test"}),
        _event("node_finished", 3.0, "p:a", status="success", rows=7),
        _event("node_finished", 3.5, "p:b", status="skipped"),  # never started: nothing
        _event(
            "node_finished", 4.0, "p:c", status="failed", duration=1.0, data={"message": "boom"}
        ),  # fmt: skip
        _event("check_finished", 4.5, "p:t", status="pass"),
        SimpleNamespace(**{**vars(_event("node_started", 5.0, "p:a")), "run_id": "other"}),
        _event("run_finished", 6.0, status="failed", data={"failed_nodes": ["p:c"]}),
    ]:
        emitter(ev)
    sent = [Serde.to_dict(e) for e in client.events]
    for e in sent:
        validate_run_event(json.loads(json.dumps(e)))
    assert [(e["job"]["name"], e["eventType"]) for e in sent] == [
        ("splice.run.dev", "START"),
        ("p:a", "START"),
        ("p:a", "COMPLETE"),
        ("p:c", "START"),  # it finished without a START of its own: one is sent first
        ("p:c", "FAIL"),
        ("splice.run.dev", "FAIL"),
    ]
    a_done = sent[2]["outputs"][0]
    assert a_done["outputFacets"]["outputStatistics"]["rowCount"] == 7
    assert [(f["name"], f["type"]) for f in a_done["facets"]["schema"]["fields"]] == [
        ("id", "INTEGER")
    ]
    assert sent[3]["eventTime"] == "1970-01-01T00:00:03+00:00"  # its finish less its duration
    assert sent[4]["run"]["facets"]["errorMessage"]["message"] == "boom"
    assert sent[5]["run"]["facets"]["errorMessage"]["message"] == "failed nodes: p:c"
    assert emitter.counts["sent"] == 6
    emitter(_event("node_started", 7.0, "p:a"))  # closed with the run: nothing more
    assert len(client.events) == 6


def test_a_run_that_fails_while_it_plans_still_starts_and_fails(tmp_path: Path) -> None:
    from openlineage.client.serde import Serde

    from splice.config.warehouse import WarehouseSection

    ws = SimpleNamespace(
        target="prod",
        config=SimpleNamespace(warehouse=WarehouseSection()),
        warehouse_path=tmp_path / "w.duckdb",
        graph=Graph,
    )
    client = _Recorder()
    emitter = emit.RunEmitter(ws, "r20261001-093000-abcdef", client)  # type: ignore[arg-type]
    error = {"error": "ProjectError: dbt cannot parse finance", "counts": {}}
    emitter(_event("run_finished", 9.0, status="failed", data=error))
    sent = [Serde.to_dict(e) for e in client.events]
    assert [e["eventType"] for e in sent] == ["START", "FAIL"]
    assert (
        sent[0]["run"]["runId"]
        == sent[1]["run"]["runId"]
        == emit.facets.run_uuid("r20261001-093000-abcdef")
    )
    assert sent[1]["run"]["facets"]["errorMessage"]["message"] == error["error"]


def test_the_spec_schemas_catch_a_bad_event() -> None:
    good = {
        "eventType": "START",
        "eventTime": "2026-09-28T06:00:00+00:00",
        "run": {"runId": "01922c8e-05d7-7a7e-9b2c-4f0b8f6f1a11"},
        "job": {"namespace": "splice", "name": "j"},
        "producer": "https://pypi.org/project/splice/0.1.0/",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }
    validate_run_event(good)
    with pytest.raises(AssertionError, match="runId"):
        validate_run_event({**good, "run": {}})
    facet = {"_producer": "p", "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/"
             "ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet", "message": "m"}  # fmt: skip
    with pytest.raises(AssertionError, match="programmingLanguage"):
        validate_run_event({**good, "run": {**good["run"], "facets": {"errorMessage": facet}}})
