"""OpenLineage events received from other tools (``POST /api/v1/lineage``, Marquez's path and
body): :func:`parse` validates one, :func:`relations` finds the graph's nodes its datasets are.

A run event (``dbt-ol``, Airflow's and Dagster's OpenLineage integrations, Spark's listener)
is what triggers anything; a static ``DatasetEvent`` or ``JobEvent`` parses too (``kind``
``"dataset"`` / ``"job"``) and is for the caller to ignore. A body that is not a valid event
raises :class:`~splice.errors.InputError` naming the field and what is wrong with it.

>>> ev = parse(b'''{"eventType": "COMPLETE", "eventTime": "2026-09-28T06:00:05Z",
...   "run": {"runId": "01922c8e-05d7-7a7e-9b2c-4f0b8f6f1a11"},
...   "job": {"namespace": "airflow", "name": "fx_rates.load"},
...   "outputs": [{"namespace": "duckdb:///data/warehouse.duckdb", "name": "warehouse.raw.fx_rates"}],
...   "producer": "https://github.com/apache/airflow/tree/providers-openlineage/2.1.0",
...   "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}''')
>>> ev.kind, ev.event_type, ev.event_time.isoformat(), ev.outputs[0].name
('run', 'COMPLETE', '2026-09-28T06:00:05+00:00', 'warehouse.raw.fx_rates')
>>> parse(b'{"eventType": "DONE"}')
Traceback (most recent call last):
  ...
splice.errors.InputError: eventType 'DONE' is not one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from splice.errors import InputError
from splice.graph.model import Graph, Relation

EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")

#: Node kinds that stand for a relation they read (a dbt source, a SQLMesh external model):
#: a dataset no node of the graph writes is found through them.
STANDS_FOR = ("source", "external")

Kind = Literal["run", "dataset", "job"]


@dataclass(frozen=True)
class Dataset:
    """One dataset an event names (``namespace``, ``name``)."""

    namespace: str
    name: str

    def as_dict(self) -> dict[str, str]:
        return {"namespace": self.namespace, "name": self.name}


@dataclass(frozen=True)
class ReceivedEvent:
    """One OpenLineage event, validated. ``event_time`` is UTC; ``run_id`` is the canonical
    UUID text; ``error_message`` is the ``errorMessage`` run facet's message (a ``FAIL``);
    ``raw`` is the body as sent. A ``DatasetEvent`` has ``dataset`` and no run or job; a
    ``JobEvent`` has a job and no run."""

    kind: Kind
    event_type: str | None
    event_time: datetime
    run_id: str | None
    job_namespace: str | None
    job_name: str | None
    producer: str
    inputs: tuple[Dataset, ...] = ()
    outputs: tuple[Dataset, ...] = ()
    parent_run_id: str | None = None
    error_message: str | None = None
    dataset: Dataset | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the time in ISO-8601).

        >>> d = parse(b'{"eventTime": "2026-09-28T06:00:00Z", "producer": "p", "schemaURL": "s",'
        ...           b' "dataset": {"namespace": "n", "name": "a.b.c"}}').as_dict()
        >>> d["kind"], d["event_time"], d["dataset"]
        ('dataset', '2026-09-28T06:00:00+00:00', {'namespace': 'n', 'name': 'a.b.c'})
        """
        return {
            "kind": self.kind,
            "event_type": self.event_type,
            "event_time": self.event_time.isoformat(),
            "run_id": self.run_id,
            "job_namespace": self.job_namespace,
            "job_name": self.job_name,
            "producer": self.producer,
            "inputs": [d.as_dict() for d in self.inputs],
            "outputs": [d.as_dict() for d in self.outputs],
            "parent_run_id": self.parent_run_id,
            "error_message": self.error_message,
            "dataset": self.dataset.as_dict() if self.dataset else None,
            "raw": dict(self.raw),
        }


# -- parsing ---------------------------------------------------------------------------------------
def _bad(message: str) -> InputError:
    return InputError(
        message,
        fix="send an OpenLineage event (https://openlineage.io/spec/2-0-2/OpenLineage.json)",
    )


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{where} must be a JSON object, not {_json_type(value)}.")
    return value


def _text(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise _bad(f"{where} is missing.")
    value = obj[key]
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{where} must be a non-empty string, not {_json_type(value)}.")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}" if value.strip() else "an empty string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def parse_time(value: Any, where: str = "eventTime") -> datetime:
    """An ISO-8601 date and time, as an aware UTC datetime (a time without an offset is UTC).

    >>> parse_time("2026-09-28T08:00:00.123456789+02:00").isoformat()
    '2026-09-28T06:00:00.123456+00:00'
    >>> parse_time("2026-09-28")
    Traceback (most recent call last):
      ...
    splice.errors.InputError: eventTime '2026-09-28' is not an ISO-8601 date and time (e.g. 2026-09-28T06:00:00Z).
    """
    if not isinstance(value, str):
        raise _bad(f"{where} must be an ISO-8601 date and time, not {_json_type(value)}.")
    text = value.strip()
    try:
        if "t" not in text.lower():
            raise ValueError("no time")
        when = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(
            f"{where} {value!r} is not an ISO-8601 date and time (e.g. 2026-09-28T06:00:00Z)."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def _uuid(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(f"{where} must be a UUID string, not {_json_type(value)}.")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise _bad(f"{where} {value!r} is not a UUID.") from None


def _datasets(body: Mapping[str, Any], key: str) -> tuple[Dataset, ...]:
    value = body.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad(f"{key} must be a list of datasets, not {_json_type(value)}.")
    out = []
    for i, item in enumerate(value):
        ds = _object(item, f"{key}[{i}]")
        out.append(
            Dataset(
                _text(ds, "namespace", f"{key}[{i}].namespace"),
                _text(ds, "name", f"{key}[{i}].name"),
            )  # fmt: skip
        )
        for facets in ("facets", "inputFacets", "outputFacets"):
            if ds.get(facets) is not None:
                _object(ds[facets], f"{key}[{i}].{facets}")
    return tuple(out)


def _kind(body: Mapping[str, Any]) -> Kind:
    if "run" in body or "eventType" in body:
        return "run"
    if "dataset" in body:
        return "dataset"
    if "job" in body:
        return "job"
    raise _bad("the body is no OpenLineage event: it has no run, job or dataset.")


def _model_check(body: dict[str, Any], kind: Kind) -> None:
    """Build the event with openlineage-python's ``event_v2`` models, whose validators check
    what the explicit checks above have not (the producer and schema URLs, the run id)."""
    from openlineage.client import event_v2

    try:
        if kind == "run":
            event_v2.RunEvent(
                eventTime=body["eventTime"],
                producer=body["producer"],
                run=event_v2.Run(runId=body["run"]["runId"]),
                job=event_v2.Job(namespace=body["job"]["namespace"], name=body["job"]["name"]),
                eventType=event_v2.RunState(body["eventType"]) if body.get("eventType") else None,
            )
        elif kind == "job":
            event_v2.JobEvent(
                eventTime=body["eventTime"],
                producer=body["producer"],
                job=event_v2.Job(namespace=body["job"]["namespace"], name=body["job"]["name"]),
            )
        else:
            event_v2.DatasetEvent(
                eventTime=body["eventTime"],
                producer=body["producer"],
                dataset=event_v2.StaticDataset(
                    namespace=body["dataset"]["namespace"], name=body["dataset"]["name"]
                ),
            )
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise _bad(f"the event is not valid OpenLineage: {e}.") from None


def parse(body: bytes | str) -> ReceivedEvent:
    """Validate one OpenLineage event (a ``RunEvent``, or a static ``DatasetEvent`` /
    ``JobEvent``) and return it; :class:`~splice.errors.InputError` names what is wrong.

    >>> parse(b"not json")
    Traceback (most recent call last):
      ...
    splice.errors.InputError: the body is not JSON: Expecting value at line 1, column 1.
    >>> parse(b'{"eventType": "START", "eventTime": "2026-09-28T06:00:00Z", "run": {},'
    ...       b' "job": {"namespace": "a", "name": "b"}, "producer": "p", "schemaURL": "s"}')
    Traceback (most recent call last):
      ...
    splice.errors.InputError: run.runId is missing.
    """
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise _bad(f"the body is not JSON: {e.msg} at line {e.lineno}, column {e.colno}.") from None
    except UnicodeDecodeError as e:
        raise _bad(f"the body is not JSON: it is not UTF-8 ({e.reason}).") from None
    except RecursionError:
        raise _bad("the body is not JSON Splice reads: it is nested too deeply.") from None
    body_obj = _object(data, "the body")
    kind = _kind(body_obj)
    event_type = body_obj.get("eventType")
    if kind == "run" and event_type is not None and event_type not in EVENT_TYPES:
        raise _bad(f"eventType {event_type!r} is not one of {', '.join(EVENT_TYPES)}.")
    event_time = parse_time(body_obj.get("eventTime"))
    producer = _text(body_obj, "producer", "producer")
    _text(body_obj, "schemaURL", "schemaURL")
    run_id = parent = error = None
    job_namespace = job_name = None
    if kind == "run":
        run = _object(body_obj.get("run"), "run")
        if "runId" not in run:
            raise _bad("run.runId is missing.")
        run_id = _uuid(run["runId"], "run.runId")
        run_facets = run.get("facets")
        if run_facets is not None:
            run_facets = _object(run_facets, "run.facets")
            parent = _parent(run_facets)
            error = _error(run_facets)
    dataset = None
    if kind in ("run", "job"):
        job = _object(body_obj.get("job"), "job")
        job_namespace = _text(job, "namespace", "job.namespace")
        job_name = _text(job, "name", "job.name")
    else:
        ds = _object(body_obj.get("dataset"), "dataset")
        dataset = Dataset(
            _text(ds, "namespace", "dataset.namespace"), _text(ds, "name", "dataset.name")
        )
    inputs = _datasets(body_obj, "inputs") if kind != "dataset" else ()
    outputs = _datasets(body_obj, "outputs") if kind != "dataset" else ()
    _model_check(body_obj, kind)
    return ReceivedEvent(
        kind=kind,
        event_type=str(event_type) if kind == "run" and event_type is not None else None,
        event_time=event_time,
        run_id=run_id,
        job_namespace=job_namespace,
        job_name=job_name,
        producer=producer,
        inputs=inputs,
        outputs=outputs,
        parent_run_id=parent,
        error_message=error,
        dataset=dataset,
        raw=body_obj,
    )


def _parent(run_facets: Mapping[str, Any]) -> str | None:
    facet = run_facets.get("parent")
    if facet is None:
        return None
    facet = _object(facet, "run.facets.parent")
    run = _object(facet.get("run"), "run.facets.parent.run")
    return _uuid(run.get("runId"), "run.facets.parent.run.runId")


def _error(run_facets: Mapping[str, Any]) -> str | None:
    facet = run_facets.get("errorMessage")
    if not isinstance(facet, dict):
        return None
    message = facet.get("message")
    return str(message) if message is not None else None


# -- mapping onto the graph ------------------------------------------------------------------------
def dataset_parts(name: str) -> tuple[str, ...] | None:
    """The last three (or two) dotted parts of a dataset name, case-folded, when it names a
    table (``database.schema.table`` or ``schema.table``); None for a path, a topic or a bare
    name.

    >>> dataset_parts("Warehouse.RAW.fx_rates"), dataset_parts("public.orders")
    (('warehouse', 'raw', 'fx_rates'), ('public', 'orders'))
    >>> dataset_parts("proj.db.sch.t"), dataset_parts("/data/x.parquet"), dataset_parts("orders")
    (('db', 'sch', 't'), None, None)
    """
    if not name or "/" in name or ":" in name:
        return None
    parts = [p.strip().strip('"`[]').casefold() for p in name.split(".")]
    if len(parts) < 2 or not all(parts):
        return None
    return tuple(parts[-3:])


def _index(graph: Graph) -> dict[tuple[str, str], list[tuple[Relation, str, bool]]]:
    """(schema, table) -> [(relation, node id, writes it)], case-folded."""
    index: dict[tuple[str, str], list[tuple[Relation, str, bool]]] = {}
    for node in graph.nodes.values():
        rels = [(r, True) for r in node.all_writes]
        if node.kind in STANDS_FOR:
            rels += [(r, False) for r in node.reads]
        for rel, writes in rels:
            key = (rel.schema.casefold(), rel.name.casefold())
            index.setdefault(key, []).append((rel, node.id, writes))
    return index


def match_dataset(dataset: Dataset, graph: Graph) -> list[str]:
    """The node ids of ``graph`` a dataset is: the nodes that write its relation, else the
    sources and external models that stand for it. A three-part name must match the catalog
    as well; when no relation has that catalog, schema and table alone decide (a tool that
    names the database differently). Sorted by id.

    >>> from splice.graph.model import Node
    >>> g = Graph()
    >>> g.add_node(Node("p:fx", "p", "fx", "model", "sqlmesh",
    ...                 writes=Relation("warehouse", "fx", "daily_rates")))
    >>> match_dataset(Dataset("duckdb:///w.duckdb", "WAREHOUSE.fx.daily_rates"), g)
    ['p:fx']
    >>> match_dataset(Dataset("postgres://db:5432", "fx.daily_rates"), g)
    ['p:fx']
    >>> match_dataset(Dataset("s3://bucket", "fx/daily_rates"), g)
    []
    """
    return _match(dataset, _index(graph))


def _match(
    dataset: Dataset, index: dict[tuple[str, str], list[tuple[Relation, str, bool]]]
) -> list[str]:
    parts = dataset_parts(dataset.name)
    if parts is None:
        return []
    hits = index.get((parts[-2], parts[-1]), [])
    if len(parts) == 3:
        same = [h for h in hits if (h[0].catalog or "").casefold() == parts[0]]
        hits = same or hits
    writers = sorted({nid for _, nid, writes in hits if writes})
    return writers or sorted({nid for _, nid, _ in hits})


def relations(event: ReceivedEvent, graph: Graph, *, inputs: bool = False) -> list[str]:
    """The graph's node ids whose relation is one of the event's output datasets (with
    ``inputs``, its input datasets), each once, in the order of the datasets
    (see :func:`match_dataset`).

    >>> from splice.graph.model import Node
    >>> g = Graph()
    >>> g.add_node(Node("ingestion:fx", "ingestion", "fx", "ingestion", "dlt",
    ...                 writes=Relation("warehouse", "raw", "fx_rates")))
    >>> g.add_node(Node("pricing:raw.fx_rates", "pricing", "raw.fx_rates", "external", "sqlmesh",
    ...                 reads=[Relation("warehouse", "raw", "fx_rates")]))
    >>> ev = parse(b'''{"eventType": "COMPLETE", "eventTime": "2026-09-28T06:00:05Z",
    ...   "run": {"runId": "01922c8e-05d7-7a7e-9b2c-4f0b8f6f1a11"},
    ...   "job": {"namespace": "dagster", "name": "fx_rates_ingest"},
    ...   "inputs": [{"namespace": "https://vendor", "name": "/rates"}],
    ...   "outputs": [{"namespace": "duckdb://w.duckdb", "name": "warehouse.raw.fx_rates"}],
    ...   "producer": "p", "schemaURL": "s"}''')
    >>> relations(ev, g), relations(ev, g, inputs=True)
    (['ingestion:fx'], [])
    """
    out: list[str] = []
    datasets = event.inputs if inputs else event.outputs
    index = _index(graph) if datasets else {}  # the graph walked once per event
    for ds in datasets:
        for nid in _match(ds, index):
            if nid not in out:
                out.append(nid)
    return out
