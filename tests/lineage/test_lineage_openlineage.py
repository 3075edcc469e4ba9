"""The OpenLineage columnLineage facet (ColumnLineageDatasetFacet 1-2-0)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from splice.graph.model import Relation
from splice.lineage import analyse_model, to_openlineage_facet
from splice.lineage.openlineage import SCHEMA_URL

SCHEMA = {
    "warehouse": {
        "raw": {
            "orders": {"order_id": "", "customer_id": "", "amount": "", "status": "", "email": ""},
            "customers": {"customer_id": "", "country": ""},
        }
    }
}

_INPUT_FIELD = {
    "type": "object",
    "required": ["namespace", "name", "field"],
    "properties": {
        "namespace": {"type": "string"},
        "name": {"type": "string"},
        "field": {"type": "string"},
        "transformations": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": {"enum": ["DIRECT", "INDIRECT"]},
                    "subtype": {
                        "enum": [
                            "IDENTITY",
                            "TRANSFORMATION",
                            "AGGREGATION",
                            "JOIN",
                            "FILTER",
                            "GROUP_BY",
                            "SORT",
                            "WINDOW",
                            "CONDITIONAL",
                        ]
                    },
                    "description": {"type": "string"},
                    "masking": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}
# The shape the 1-2-0 spec gives the facet (BaseFacet's _producer / _schemaURL included).
FACET_SCHEMA = {
    "type": "object",
    "required": ["_producer", "_schemaURL", "fields"],
    "properties": {
        "_producer": {"type": "string", "format": "uri"},
        "_schemaURL": {"type": "string", "format": "uri"},
        "fields": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["inputFields"],
                "properties": {"inputFields": {"type": "array", "items": _INPUT_FIELD}},
            },
        },
        "dataset": {"type": "array", "items": _INPUT_FIELD},
    },
}


@pytest.fixture(scope="module")
def lineage():  # type: ignore[no-untyped-def]
    return analyse_model(
        "SELECT o.order_id, SUM(o.amount) AS total, MD5(o.email) AS email_hash, "
        "CASE WHEN c.country = 'DE' THEN o.amount END AS de_amount "
        "FROM raw.orders o JOIN raw.customers c ON c.customer_id = o.customer_id "
        "WHERE o.status = 'paid' GROUP BY o.order_id, o.email, c.country, o.amount",
        schema=SCHEMA,
        default_catalog="warehouse",
        output=Relation("warehouse", "marts", "x"),
    )


def test_facet_matches_the_spec_shape(lineage) -> None:  # type: ignore[no-untyped-def]
    facet = to_openlineage_facet(lineage, "duckdb://warehouse")
    jsonschema.validate(facet, FACET_SCHEMA)
    json.dumps(facet)
    assert facet["_schemaURL"] == SCHEMA_URL
    assert SCHEMA_URL.startswith(
        "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json"
    )
    assert facet["_producer"].startswith("https://")


def test_fields_and_transformations(lineage) -> None:  # type: ignore[no-untyped-def]
    fields = to_openlineage_facet(lineage, "duckdb://warehouse")["fields"]
    assert list(fields) == ["order_id", "total", "email_hash", "de_amount"]
    (total,) = fields["total"]["inputFields"]
    assert total == {
        "namespace": "duckdb://warehouse",
        "name": "warehouse.raw.orders",
        "field": "amount",
        "transformations": [{"type": "DIRECT", "subtype": "AGGREGATION", "masking": False}],
    }
    assert fields["email_hash"]["inputFields"][0]["transformations"] == [
        {"type": "DIRECT", "subtype": "TRANSFORMATION", "masking": True}
    ]
    de = {f["field"]: f["transformations"] for f in fields["de_amount"]["inputFields"]}
    assert de["country"] == [{"type": "INDIRECT", "subtype": "CONDITIONAL", "masking": False}]
    assert de["amount"][0]["type"] == "DIRECT"


def test_dataset_level_edges(lineage) -> None:  # type: ignore[no-untyped-def]
    facet = to_openlineage_facet(lineage, "duckdb://warehouse")
    dataset = {
        (f["name"], f["field"]): [t["subtype"] for t in f["transformations"]]
        for f in facet["dataset"]
    }
    assert dataset[("warehouse.raw.orders", "status")] == ["FILTER"]
    assert dataset[("warehouse.raw.customers", "customer_id")] == ["JOIN"]
    assert dataset[("warehouse.raw.orders", "customer_id")] == ["JOIN"]
    assert "GROUP_BY" in dataset[("warehouse.raw.orders", "order_id")]


def test_per_field_mode_repeats_query_level_edges_and_merges_fields(lineage) -> None:  # type: ignore[no-untyped-def]
    facet = to_openlineage_facet(lineage, "duckdb://warehouse", dataset_level=False)
    jsonschema.validate(facet, FACET_SCHEMA)
    assert "dataset" not in facet
    total = {f["field"]: f["transformations"] for f in facet["fields"]["total"]["inputFields"]}
    # amount is both aggregated (direct) and grouped by (indirect): one input field, two transformations
    assert [t["type"] for t in total["amount"]] == ["DIRECT", "INDIRECT"]
    assert total["status"] == [{"type": "INDIRECT", "subtype": "FILTER", "masking": False}]


def test_namespace_per_relation_and_opaque_models() -> None:
    ml = analyse_model("SELECT a FROM w.s.t", schema={"w": {"s": {"t": {"a": ""}}}})
    facet = to_openlineage_facet(ml, lambda rel: f"duckdb://{rel.catalog}")
    assert facet["fields"]["a"]["inputFields"][0]["namespace"] == "duckdb://w"
    opaque = to_openlineage_facet(analyse_model("SELECT * FROM w.s.unknown"), "ns")
    assert opaque["fields"] == {}
    jsonschema.validate(opaque, FACET_SCHEMA)
