"""Helpers for the OpenLineage tests: the spec's JSON Schemas (``spec/``), a file transport's
events, a run on a copy of the demo.

(Not in conftest.py: test modules import these by name.)
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SPEC = Path(__file__).parent / "spec"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


@cache
def _registry() -> Any:
    from referencing import Registry, Resource

    resources = []
    for path in sorted(SPEC.glob("*.json")):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def _validate(instance: Any, url: str) -> None:
    from jsonschema import Draft202012Validator

    base = url.split("#", 1)[0]
    stored = {str(uri) for uri in _registry()}
    assert base in stored, f"no schema stored for {url} in {SPEC} (see its README)"
    validator = Draft202012Validator(
        {"$ref": url}, registry=_registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    assert not errors, f"{url}: " + "; ".join(
        f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors
    )


def _facets(value: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every facet in an event (a dict with a ``_schemaURL``), with where it is."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(value, dict):
        if "_schemaURL" in value:
            found.append((path, value))
        for k, v in value.items():
            found += _facets(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _facets(v, f"{path}/{i}")
    return found


def validate_run_event(event: dict[str, Any]) -> None:
    """``event`` is a valid OpenLineage RunEvent, and each of its facets valid by the schema
    its ``_schemaURL`` names (all of them stored in ``spec/``)."""
    _validate(event, RUN_EVENT)
    assert event["schemaURL"] == RUN_EVENT
    for where, facet in _facets(event):
        _validate(facet, facet["_schemaURL"])
        assert facet["_producer"], where


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events a ``file`` transport with ``append: true`` wrote (one JSON a line)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def file_transport(config: Path, events: Path) -> Path:
    """An ``openlineage.yml`` at ``config`` sending every event to the file ``events``."""
    config.write_text(f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n")
    return config
