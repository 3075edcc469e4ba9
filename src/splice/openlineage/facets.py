"""The parts of the OpenLineage events Splice emits: namespaces, run ids, datasets and facets,
built with openlineage-python's ``event_v2`` / ``facet_v2`` models from Splice's graph and
column lineage.

Datasets are named as OpenLineage's naming conventions (and ``dbt-ol``) name warehouse tables:
namespace ``duckdb://<the warehouse file>``, ``postgres://HOST:PORT`` or ``spark://HOST:PORT``,
name ``database.schema.table`` (the graph's relation, :attr:`splice.graph.model.Relation.key`).

>>> from splice.graph.model import Relation
>>> ds = output_dataset(Relation("warehouse", "marts", "agg"), "duckdb:///w/warehouse.duckdb",
...                     columns={"day": "DATE", "n": ""}, rows=3)
>>> ds.name, [f.name for f in ds.facets["schema"].fields], ds.outputFacets["outputStatistics"].rowCount
('warehouse.marts.agg', ['day', 'n'], 3)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
    tags_run,
)
from openlineage.client.uuid import generate_static_uuid

from splice.graph.model import Node, Relation
from splice.lineage.openlineage import PRODUCER, to_openlineage_facet
from splice.lineage.types import ModelLineage
from splice.version import __version__

#: Check nodes (dbt tests, SQLMesh audits): their outcomes are not jobs of their own.
CHECK_KINDS = ("test", "audit")


def warehouse_namespace(warehouse: Any, path: Path | None = None) -> str:
    """The OpenLineage namespace of the workspace's warehouse (``[warehouse]``; ``path`` is
    the DuckDB file, resolved).

    >>> from splice.config.warehouse import WarehouseSection as W
    >>> warehouse_namespace(W(), Path("/data/warehouse.duckdb"))
    'duckdb:///data/warehouse.duckdb'
    >>> warehouse_namespace(W(type="postgres", url="postgresql://me@db.internal:5433/wh"))
    'postgres://db.internal:5433'
    >>> warehouse_namespace(W(type="spark", remote="sc://spark.internal:15002"))
    'spark://spark.internal:15002'
    """
    if warehouse.type == "postgres":
        f = warehouse.pg_fields()
        return f"postgres://{f['host']}:{f['port']}"
    if warehouse.type == "spark":
        where = str(warehouse.remote or "").split("://", 1)[-1].split("/", 1)[0]
        return f"spark://{where.split(';', 1)[0]}"
    return f"duckdb://{path if path is not None else warehouse.path}"


def _run_instant(run_id: str) -> datetime:
    """The second a Splice run id (``rYYYYmmdd-HHMMSS-xxxxxx``) was made in, else the epoch."""
    try:
        return datetime.strptime(run_id[1:16], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return datetime.fromtimestamp(0, tz=UTC)


def run_uuid(run_id: str, node_id: str | None = None) -> str:
    """The OpenLineage runId of a Splice run (or of one node in it): a UUIDv7 made from the
    run id alone (its time is the run's start), so every event of a run, and a resend,
    carries the same one.

    >>> a = run_uuid("r20261001-093000-3fa2c1")
    >>> a == run_uuid("r20261001-093000-3fa2c1") != run_uuid("r20261001-093000-3fa2c1", "p:m")
    True
    >>> import uuid; uuid.UUID(a).version
    7
    """
    data = run_id if node_id is None else f"{run_id}/{node_id}"
    return str(generate_static_uuid(_run_instant(run_id), data.encode()))


def event_time(ts: float) -> str:
    """A journal timestamp as the ISO-8601 ``eventTime`` (UTC).

    >>> event_time(0.0)
    '1970-01-01T00:00:00+00:00'
    """
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def input_dataset(rel: Relation, namespace: str) -> InputDataset:
    """An input dataset: one relation the node reads."""
    return InputDataset(namespace=namespace, name=rel.key)


def schema_facet(columns: dict[str, str]) -> schema_dataset.SchemaDatasetFacet | None:
    """The ``schema`` facet of the columns Splice knows (a type only where it is known).

    >>> schema_facet({}) is None
    True
    >>> [(f.name, f.type) for f in schema_facet({"a": "INT", "b": ""}).fields]
    [('a', 'INT'), ('b', None)]
    """
    if not columns:
        return None
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(name=c, type=t or None)
            for c, t in columns.items()
        ],
        producer=PRODUCER,
    )


def _input_field(entry: dict[str, Any]) -> column_lineage_dataset.InputField:
    return column_lineage_dataset.InputField(
        namespace=entry["namespace"],
        name=entry["name"],
        field=entry["field"],
        transformations=[
            column_lineage_dataset.Transformation(
                type=t["type"], subtype=t.get("subtype"), masking=t.get("masking")
            )
            for t in entry.get("transformations", [])
        ],
    )


def column_lineage_facet(
    lineage: ModelLineage, namespace: str
) -> column_lineage_dataset.ColumnLineageDatasetFacet | None:
    """The ``columnLineage`` facet of one model's output, from Splice's column lineage
    (:func:`splice.lineage.to_openlineage_facet`); None for a model without columns.

    >>> from splice.lineage import analyse_model
    >>> ml = analyse_model("SELECT SUM(amount) AS total FROM w.raw.orders WHERE ok",
    ...                    schema={"w": {"raw": {"orders": {"amount": "", "ok": ""}}}})
    >>> f = column_lineage_facet(ml, "duckdb:///w.duckdb")
    >>> src = f.fields["total"].inputFields[0]
    >>> src.name, src.field, src.transformations[0].subtype, f.dataset[0].field
    ('w.raw.orders', 'amount', 'AGGREGATION', 'ok')
    """
    data = to_openlineage_facet(lineage, namespace)
    if not data["fields"]:
        return None
    return column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            name: column_lineage_dataset.Fields(
                inputFields=[_input_field(e) for e in spec["inputFields"]]
            )
            for name, spec in data["fields"].items()
        },
        dataset=[_input_field(e) for e in data.get("dataset", [])],
        producer=PRODUCER,
    )


def output_dataset(
    rel: Relation,
    namespace: str,
    *,
    columns: dict[str, str] | None = None,
    lineage: ModelLineage | None = None,
    rows: int | None = None,
) -> OutputDataset:
    """An output dataset: the relation a node writes, with its ``schema`` and ``columnLineage``
    facets where they are known, and ``outputStatistics`` where the tool counted the rows."""
    facets: dict[str, Any] = {}
    cols = dict(columns or {})
    if not cols and lineage is not None:
        cols = {c: "" for c in lineage.columns}
    schema = schema_facet(cols)
    if schema is not None:
        facets["schema"] = schema
    if lineage is not None:
        cl = column_lineage_facet(lineage, namespace)
        if cl is not None:
            facets["columnLineage"] = cl
    out_facets: dict[str, Any] = {}
    if rows is not None:
        out_facets["outputStatistics"] = (
            output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=rows, producer=PRODUCER
            )
        )
    return OutputDataset(namespace=namespace, name=rel.key, facets=facets, outputFacets=out_facets)


def parent_facet(parent_run_id: str, namespace: str, job_name: str) -> parent_run.ParentRunFacet:
    """The ``parent`` run facet of a node's run: the whole Splice run (also its root)."""
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=parent_run_id),
        job=parent_run.Job(namespace=namespace, name=job_name),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=parent_run_id),
            job=parent_run.RootJob(namespace=namespace, name=job_name),
        ),
        producer=PRODUCER,
    )


def job_type(node: Node | None) -> job_type_job.JobTypeJobFacet:
    """The ``jobType`` job facet: integration ``SPLICE``; the run as a whole is a ``JOB``, a
    node its kind (``MODEL``, ``SEED``, ``SNAPSHOT``, ``INGESTION``, ...).

    >>> job_type(None).jobType
    'JOB'
    """
    kind = "JOB" if node is None else node.kind.upper()
    return job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="SPLICE", jobType=kind, producer=PRODUCER
    )


def run_facets(splice_run_id: str, target: str, *, tool: str | None = None) -> dict[str, Any]:
    """The run facets every event carries: the processing engine (Splice and, for a node, the
    tool that built it as a tag) and Splice's own run id and target as tags."""
    from openlineage.client.constants import __version__ as ol_version

    tags = [
        tags_run.TagsRunFacetFields(key="splice.run_id", value=splice_run_id, source="SPLICE"),
        tags_run.TagsRunFacetFields(key="splice.target", value=target, source="SPLICE"),
    ]
    if tool:
        tags.append(tags_run.TagsRunFacetFields(key="splice.tool", value=tool, source="SPLICE"))
    return {
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=__version__,
            name="splice",
            openlineageAdapterVersion=ol_version,
            producer=PRODUCER,
        ),
        "tags": tags_run.TagsRunFacet(tags=tags, producer=PRODUCER),
    }


def error_facet(message: str) -> error_message_run.ErrorMessageRunFacet:
    """The ``errorMessage`` run facet of a failed run or node (the language: SQL).

    >>> error_facet("boom").message
    'boom'
    """
    return error_message_run.ErrorMessageRunFacet(
        message=message, programmingLanguage="SQL", producer=PRODUCER
    )
