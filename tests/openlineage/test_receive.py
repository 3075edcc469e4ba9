"""OpenLineage events received from other tools: parsed and validated, and their datasets mapped
onto the demo's graph (dbt, SQLMesh and ingestion relations). The events in ``events/`` are
written as ``dbt-ol`` (DuckDB and PostgreSQL), Airflow's OpenLineage provider, Dagster's
integration and Spark's listener send them; one more is made by openlineage-python's own client
(file transport)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ol_support import read_events

from splice.errors import InputError
from splice.graph.model import Graph
from splice.openlineage.receive import Dataset, ReceivedEvent, match_dataset, parse, relations
from splice.workspace.core import Workspace

EVENTS = Path(__file__).parent / "events"


@pytest.fixture(scope="module")
def graph(demo_workspace: Path) -> Graph:
    with Workspace.open(demo_workspace) as ws:
        return ws.graph()


def _event(name: str) -> bytes:
    return (EVENTS / f"{name}.json").read_bytes()


def test_dbt_ol_on_duckdb(graph: Graph) -> None:
    ev = parse(_event("dbt_ol_duckdb_model_complete"))
    assert (ev.kind, ev.event_type, ev.job_namespace, ev.job_name) == (
        "run", "COMPLETE", "dbt", "warehouse.finance.finance.fct_gmv_qtd"
    )  # fmt: skip
    assert ev.event_time == datetime(2026, 9, 29, 6, 12, 41, 803562, tzinfo=UTC)
    assert ev.run_id == "0199908a-4c1e-7d2b-8f4e-6a1c2b3d4e5f"
    assert ev.parent_run_id == "01999089-f7a0-7c3d-9e11-0a2b3c4d5e6f"
    assert ev.outputs == (
        Dataset("duckdb:///srv/travel/warehouse.duckdb", "warehouse.finance.fct_gmv_qtd"),
    )
    assert ev.error_message is None
    assert relations(ev, graph) == ["finance:fct_gmv_qtd"]
    assert relations(ev, graph, inputs=True) == ["finance:stg_gmv_daily"]


def test_dbt_ol_failure_on_postgres(graph: Graph) -> None:
    ev = parse(_event("dbt_ol_postgres_model_fail"))
    assert ev.event_type == "FAIL"
    assert ev.error_message == (
        'Database Error in model stg_gmv_daily: column "gmv_usd" does not exist'
    )
    assert relations(ev, graph) == ["finance:stg_gmv_daily"]
    # what it read is SQLMesh's mart: the model that writes it, not the dbt source for it
    assert relations(ev, graph, inputs=True) == ["pricing:marts.agg_gmv_daily"]


def test_airflow_task_loading_the_raw_table(graph: Graph) -> None:
    ev = parse(_event("airflow_task_complete"))
    assert (ev.job_namespace, ev.job_name) == ("airflow-prod", "fx_rates_daily.load_fx_rates")
    assert ev.event_time.tzinfo is UTC and ev.event_time.microsecond == 482913
    assert ev.parent_run_id == "01999051-0f00-7a11-b222-c333d444e555"
    # upper case from the operator's SQL; the ingestion job writes it (SQLMesh's external
    # model only stands for it)
    assert relations(ev, graph) == ["ingestion:fx_rates_ingest"]
    assert relations(ev, graph, inputs=True) == []  # an HTTP API is no relation


def test_dagster_step_with_a_two_part_name(graph: Graph) -> None:
    ev = parse(_event("dagster_step_complete"))
    assert ev.job_name == "fx_rates_ingest.load_rates" and ev.inputs == ()
    assert relations(ev, graph) == ["ingestion:fx_rates_ingest"]


def test_a_spark_job_on_object_storage_is_nothing_of_the_graph(graph: Graph) -> None:
    ev = parse(_event("spark_s3_complete"))
    assert relations(ev, graph) == [] and relations(ev, graph, inputs=True) == []


def test_an_event_from_openlineage_pythons_own_client(graph: Graph, tmp_path: Path) -> None:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import (
        InputDataset,
        Job,
        OutputDataset,
        Run,
        RunEvent,
        RunState,
    )
    from openlineage.client.facet_v2 import error_message_run, parent_run
    from openlineage.client.uuid import generate_new_uuid

    sent = tmp_path / "events.jsonl"
    client = OpenLineageClient(
        config={"transport": {"type": "file", "log_file_path": str(sent), "append": True}}
    )
    parent = str(generate_new_uuid())
    client.emit(
        RunEvent(
            eventType=RunState.FAIL,
            eventTime=datetime(2026, 9, 29, 7, 0, tzinfo=UTC).isoformat(),
            run=Run(
                runId=str(generate_new_uuid()),
                facets={
                    "parent": parent_run.ParentRunFacet(
                        run=parent_run.Run(runId=parent),
                        job=parent_run.Job(namespace="sqlmesh", name="plan"),
                    ),
                    "errorMessage": error_message_run.ErrorMessageRunFacet(
                        message="audit accepted_range failed", programmingLanguage="SQL"
                    ),
                },
            ),
            job=Job(namespace="sqlmesh", name="fx.daily_rates"),
            inputs=[InputDataset(namespace="duckdb://warehouse.duckdb", name="raw.fx_rates")],
            outputs=[OutputDataset(namespace="duckdb://warehouse.duckdb", name="fx.daily_rates")],
        )
    )
    client.close()
    (raw,) = read_events(sent)
    ev = parse(json.dumps(raw))
    assert ev.event_type == "FAIL" and ev.parent_run_id == parent
    assert ev.error_message == "audit accepted_range failed"
    assert relations(ev, graph) == ["pricing:fx.daily_rates"]
    # the raw table: its writer, the ingestion job
    assert relations(ev, graph, inputs=True) == ["ingestion:fx_rates_ingest"]


def test_static_events_parse_and_name_their_kind() -> None:
    dataset = parse(
        b'{"eventTime": "2026-09-29T07:00:00Z", "producer": "https://example.com/catalog",'
        b' "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",'
        b' "dataset": {"namespace": "postgres://db:5432", "name": "warehouse.raw.fx_rates"}}'
    )
    assert dataset.kind == "dataset" and dataset.run_id is None and dataset.event_type is None
    assert dataset.dataset == Dataset("postgres://db:5432", "warehouse.raw.fx_rates")
    job = parse(
        b'{"eventTime": "2026-09-29T07:00:00Z", "producer": "https://example.com/catalog",'
        b' "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent",'
        b' "job": {"namespace": "airflow", "name": "fx_rates_daily"},'
        b' "outputs": [{"namespace": "postgres://db:5432", "name": "warehouse.raw.fx_rates"}]}'
    )
    assert (job.kind, job.job_name, job.run_id) == ("job", "fx_rates_daily", None)
    as_dict = job.as_dict()
    assert as_dict["outputs"] == [
        {"namespace": "postgres://db:5432", "name": "warehouse.raw.fx_rates"}
    ]
    assert json.loads(json.dumps(as_dict))["raw"]["job"]["name"] == "fx_rates_daily"


def test_a_received_event_is_frozen_and_json_ready() -> None:
    ev = parse(_event("airflow_task_complete"))
    assert isinstance(ev, ReceivedEvent)
    with pytest.raises(AttributeError):
        ev.job_name = "other"  # type: ignore[misc]
    d = json.loads(json.dumps(ev.as_dict()))
    assert d["event_time"] == "2026-09-29T05:01:17.482913+00:00"
    assert d["outputs"][0]["name"] == "WAREHOUSE.RAW.FX_RATES"


def test_matching_by_the_last_parts_of_the_name(graph: Graph) -> None:
    def match(name: str) -> list[str]:
        return match_dataset(Dataset("postgres://db:5432", name), graph)

    assert match("warehouse.marts.agg_gmv_daily") == ["pricing:marts.agg_gmv_daily"]
    assert match('"warehouse"."marts"."agg_gmv_daily"') == ["pricing:marts.agg_gmv_daily"]
    # another database name for the same schema and table (a tool that names it otherwise)
    assert match("analytics.marts.agg_gmv_daily") == ["pricing:marts.agg_gmv_daily"]
    assert match("project.warehouse.marts.agg_gmv_daily") == ["pricing:marts.agg_gmv_daily"]
    assert match("warehouse.marts.no_such_table") == []
    assert match("agg_gmv_daily") == []  # a bare name is too ambiguous
    assert match("warehouse.raw.bookings") == ["ingestion:bookings_load"]


def _valid() -> dict[str, Any]:
    return json.loads(_event("dbt_ol_postgres_model_fail"))


def _without(path: str) -> dict[str, Any]:
    body = _valid()
    *parents, last = path.split(".")
    obj = body
    for p in parents:
        obj = obj[p]
    del obj[last]
    return body


def _with(path: str, value: Any) -> dict[str, Any]:
    body = _valid()
    *parents, last = path.split(".")
    obj = body
    for p in parents:
        obj = obj[p]
    obj[last] = value
    return body


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not JSON: Expecting property name"),
        (b'{"a": "\xff"}', "the body is not JSON: it is not UTF-8"),
        (b"[1, 2]", "the body must be a JSON object, not a list"),
        (b'{"hello": "world"}', "no OpenLineage event: it has no run, job or dataset"),
        (_without("run.runId"), "run.runId is missing"),
        (_with("run.runId", "r20260929-061241-3fa2c1"), "run.runId 'r20260929-061241-3fa2c1' is not a UUID"),
        (_with("run.runId", 42), "run.runId must be a UUID string, not the number 42"),
        (_with("run", "abc"), "run must be a JSON object"),
        (_with("eventType", "DONE"), "eventType 'DONE' is not one of START, RUNNING"),
        (_with("eventTime", "yesterday"), "eventTime 'yesterday' is not an ISO-8601 date and time"),
        (_with("eventTime", "2026-09-29"), "eventTime '2026-09-29' is not an ISO-8601 date and time"),
        (_without("eventTime"), "eventTime must be an ISO-8601 date and time, not null"),
        (_with("outputs", {"name": "x"}), "outputs must be a list of datasets, not an object"),
        (_with("inputs", [{"namespace": "n"}]), "inputs[0].name is missing"),
        (_with("outputs", ["x"]), "outputs[0] must be a JSON object"),
        (_without("job.name"), "job.name is missing"),
        (_with("job.namespace", ""), "job.namespace must be a non-empty string"),
        (_without("producer"), "producer is missing"),
        (_without("schemaURL"), "schemaURL is missing"),
        (_with("run.facets.parent.run.runId", "nope"), "run.facets.parent.run.runId 'nope' is not a UUID"),
    ],
)  # fmt: skip
def test_a_bad_body_says_which_field_and_what_is_wrong(body: Any, message: str) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(InputError) as caught:
        parse(raw)
    assert message in caught.value.message, caught.value.message
