"""The Provider protocol: one module per format, each declaring its capabilities as data."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from splice.graph.model import Node


@dataclass(frozen=True)
class Capabilities:
    """What a provider can do, as data (planners and doctor read these, never the class).

    exact_selection: can build exactly a named set of nodes (dbt --select, SQLMesh select_models).
    owns_state: the tool keeps its own state of what is built (SQLMesh snapshots and intervals).
    renders_sql: the tool can render each node's SQL (input to column lineage).
    """

    exact_selection: bool
    owns_state: bool
    renders_sql: bool


@dataclass
class LoadContext:
    """What a provider needs to load its project for one Splice target."""

    root: Path  # the workspace directory
    project_name: str
    project_path: Path
    target: str  # Splice target name
    environment: str  # the tool's environment for that target (dbt target / SQLMesh env)
    dialect: str = "duckdb"
    default_catalog: str | None = None
    log_path: Path | None = None  # where the tool's own chatter goes
    work_dir: Path | None = None  # a directory Splice owns for this project's artefacts
    options: dict[str, object] = field(default_factory=dict)


@dataclass
class RenderedSQL:
    """One node's SQL as the tool renders it, with the schemas of what it reads."""

    node_id: str
    sql: str | None
    dialect: str
    opaque_reason: str | None = None


class Provider(Protocol):
    format: str
    capabilities: Capabilities

    def load(self) -> list[Node]:
        """The project's nodes (no SQL rendering: that is :meth:`render`)."""
        ...

    def render(self, nodes: list[Node]) -> dict[str, RenderedSQL]:
        """Rendered SQL for the given nodes of this project."""
        ...

    def prewarm(self) -> Any:
        """Start the tool's own parse in a child process while the workspace's other projects
        load (a handle with ``wait()`` and ``kill()``), or None when there is nothing to gain."""
        ...

    def close(self) -> None: ...
