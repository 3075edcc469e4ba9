"""Export column lineage as the OpenLineage ``columnLineage`` dataset facet (spec 1-2-0).

Each output field lists its ``inputFields`` (``namespace``, ``name``, ``field``) with
``transformations`` ``[{type: DIRECT|INDIRECT, subtype: ..., masking: bool}]``.  The query-level
indirect edges (filters, joins, grouping) go into the facet's ``dataset`` list, which 1-2-0 defines
for edges that affect the whole dataset; pass ``dataset_level=False`` to repeat them in every field
instead (for consumers that only read ``fields``).

>>> from splice.lineage import analyse_model
>>> ml = analyse_model("SELECT SUM(amount) AS total FROM w.raw.orders WHERE ok",
...                    schema={"w": {"raw": {"orders": {"amount": "", "ok": ""}}}})
>>> facet = to_openlineage_facet(ml, "duckdb://warehouse")
>>> facet["fields"]["total"]["inputFields"][0]["transformations"]
[{'type': 'DIRECT', 'subtype': 'AGGREGATION', 'masking': False}]
>>> facet["dataset"][0]["field"], facet["dataset"][0]["transformations"][0]["subtype"]
('ok', 'FILTER')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from splice.graph.model import Relation
from splice.lineage.types import ColumnRef, ModelLineage

SCHEMA_URL = (
    "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json"
    "#/$defs/ColumnLineageDatasetFacet"
)


def _producer() -> str:
    try:
        from splice.version import __version__
    except ImportError:  # pragma: no cover - always importable inside the package
        __version__ = "0"
    return f"https://pypi.org/project/splice/{__version__}/"


PRODUCER = _producer()

Namespace = str | Callable[[Relation], str]


def _input_fields(refs: Iterable[ColumnRef], namespace: Namespace) -> list[dict[str, Any]]:
    """One input field per (dataset, field), with one transformation per (type, subtype)."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for ref in refs:
        ns = namespace(ref.relation) if callable(namespace) else namespace
        key = (ns, ref.relation.key, ref.column)
        entry = merged.get(key)
        if entry is None:
            entry = {
                "namespace": ns,
                "name": ref.relation.key,
                "field": ref.column,
                "transformations": [],
            }
            merged[key] = entry
        kind = ref.kind.upper()
        subtypes = ref.subtypes or (("TRANSFORMATION",) if ref.kind == "direct" else ("FILTER",))
        for sub in subtypes:
            t = {"type": kind, "subtype": sub, "masking": bool(ref.masking)}
            if t not in entry["transformations"]:
                entry["transformations"].append(t)
    out = [merged[k] for k in sorted(merged)]
    for entry in out:
        entry["transformations"].sort(key=lambda t: (t["type"] != "DIRECT", t["subtype"]))
    return out


def to_openlineage_facet(
    model_lineage: ModelLineage,
    namespace: Namespace,
    *,
    producer: str = PRODUCER,
    dataset_level: bool = True,
) -> dict[str, Any]:
    """The ``ColumnLineageDatasetFacet`` JSON (a dict) of one model's output dataset.

    ``namespace`` is the OpenLineage namespace of the input datasets (for DuckDB, for example
    ``duckdb://warehouse``), or a function of the input relation when they differ.  Dataset
    names are ``catalog.schema.table``.  An opaque model yields a facet with no fields.
    """
    facet: dict[str, Any] = {"_producer": producer, "_schemaURL": SCHEMA_URL, "fields": {}}
    query_level = list(model_lineage.query_indirect)
    for name, col in model_lineage.columns.items():
        refs = list(col.sources) if dataset_level else list(col.sources) + query_level
        facet["fields"][name] = {"inputFields": _input_fields(refs, namespace)}
    if dataset_level and query_level:
        facet["dataset"] = _input_fields(query_level, namespace)
    return facet
