"""OpenLineage in: ``splice serve`` takes run events at ``POST /api/v1/lineage`` (Marquez's path
and body) from openlineage-python's own client, with the same key as ``/mcp``: a COMPLETE event
on a relation of the graph becomes a watch of the metrics downstream of it; a FAIL is kept as
run evidence; a bad body is refused 400 naming what is wrong, nothing stored; no key is 401."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.cli_runner import run_cli
from tests.notify.notify_support import http_receiver
from tests.openlineage.ol_support import validate_run_event
from tests.operator.operator_support import Clock, activity, copy_with, serving, wait_for
from tests.serve.serve_support import free_port, make_key

pytestmark = pytest.mark.slow


def _event(state: str, outputs: list[tuple[str, str]], *, error: str | None = None) -> Any:
    from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import error_message_run

    facets = {"errorMessage": error_message_run.ErrorMessageRunFacet(
        message=error, programmingLanguage="python")} if error else {}  # fmt: skip
    return RunEvent(
        eventType=getattr(RunState, state),
        eventTime=dt.datetime.now(dt.UTC).isoformat(),
        run=Run(runId=str(uuid.uuid4()), facets=facets),
        job=Job(namespace="cron", name="fx_rates_ingest"),
        producer="https://example.com/team-cron",
        outputs=[OutputDataset(namespace=ns, name=name) for ns, name in outputs],
    )


def _state_rows(ws: Path) -> tuple[int, int]:
    import sqlite3

    con = sqlite3.connect(ws / ".splice" / "state.db")
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[return-value]
                     for t in ("operator_triggers", "operator_activity"))  # fmt: skip
    finally:
        con.close()


def test_openlineage_events_posted_by_its_client_trigger_the_right_watch(
    stale_story: Any, tmp_path: Path
) -> None:
    from openlineage.client import OpenLineageClient
    from openlineage.client.serde import Serde
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

    ws = copy_with(stale_story.build.workspace, tmp_path / "travel", "")
    port = free_port()
    with (ws / "splice.toml").open("a") as f:
        f.write(f"\n[operator]\nquiet_seconds = 0\ntick_seconds = 0.3\npoll_seconds = 0.5\n\n"
                f"[serve]\nport = {port}\nhousekeeping_seconds = 1\n")  # fmt: skip
    key = make_key(ws, "team-cron", "agent", "read")
    clock = Clock(ws, "2026-10-01T07:00")
    duckdb = f"duckdb://{(ws / 'warehouse.duckdb').resolve()}"
    with serving(ws, port, clock) as base:
        client = OpenLineageClient(transport=HttpTransport(HttpConfig(
            url=base, auth=ApiKeyTokenProvider({"apiKey": key}))))  # fmt: skip
        client.emit(_event("COMPLETE", [(duckdb, "warehouse.raw.fx_rates")]))
        watched = wait_for("the triggered watch", lambda: [
            a for a in activity(ws) if a["kind"] == "watch" and "openlineage" in a["summary"]],
            log=ws / "serve.log")  # fmt: skip
        client.emit(_event("FAIL", [(duckdb, "warehouse.raw.bookings")], error="vendor 503"))
        failed = wait_for("the failure kept", lambda: [
            a for a in activity(ws) if a["kind"] == "lineage-fail"], log=ws / "serve.log")  # fmt: skip

        before = _state_rows(ws)
        bad = httpx2.post(f"{base}/api/v1/lineage", content=b'{"eventType": "COMPLETE"}',
                          headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        assert bad.status_code == 400
        assert "eventTime" in bad.json()["message"]
        good = Serde.to_json(_event("COMPLETE", [(duckdb, "warehouse.raw.fx_rates")]))
        anon = httpx2.post(f"{base}/api/v1/lineage", content=good.encode())
        assert anon.status_code == 401 and anon.headers["www-authenticate"] == "Bearer"
        assert _state_rows(ws) == before  # refused: nothing stored

        # a run made elsewhere (a person's splice run) is seen in the journal and watched after;
        # it sends its own OpenLineage events to a second receiver (OPENLINEAGE_URL)
        with http_receiver() as second:
            done = run_cli(["-w", str(ws), "run", "--execution-time", "2026-10-01"],
                           env={**os.environ, "OPENLINEAGE_URL": second.url})  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
            sent = wait_for("the run's events", lambda: [
                b for b in second.on("/api/v1/lineage")
                if b.get("eventType") == "COMPLETE" and b["job"]["name"] == "splice.run.prod"])  # fmt: skip
        for body in second.on("/api/v1/lineage"):
            validate_run_event(body)  # the OpenLineage spec's JSON Schema
        states = [b["eventType"] for b in second.on("/api/v1/lineage")
                  if b["job"]["name"] == "splice.run.prod"]  # fmt: skip
        assert states == ["START", "COMPLETE"] and sent
        after_run = wait_for("the watch after the run", lambda: [
            a for a in activity(ws) if a["kind"] == "watch" and "(run)" in a["summary"]],
            log=ws / "serve.log")  # fmt: skip
    assert after_run[0]["only"] is None  # a run of anything: everything is watched
    assert after_run[0]["triggers"][0]["command"].startswith("splice run")

    (w,) = watched
    (trigger,) = w["triggers"]
    assert trigger["source"] == "openlineage" and trigger["job"] == "cron/fx_rates_ingest"
    assert trigger["nodes"] == ["ingestion:fx_rates_ingest"]  # the job that writes raw.fx_rates
    # the metrics downstream of the rates, and only those: gmv_usd and fx_rate, not the
    # bookings-only monitors
    only = set(w["only"])
    assert {"fx_rate", "gmv_usd"} <= only
    assert not [n for n in only if "stg_bookings" in n or n.endswith("raw.bookings")]
    assert "vendor 503" in failed[0]["summary"]
