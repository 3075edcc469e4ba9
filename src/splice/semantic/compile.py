"""A semantic-layer metric's per-interval query, from the tool that declares it: MetricFlow
for a dbt project (:mod:`splice.semantic.metricflow`), SQLMesh's metric rewriter for a SQLMesh
project (:mod:`splice.semantic.sqlmesh_metrics`). ``ws`` is the workspace (its projects, their
providers, its dialect).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from splice.errors import ConfigError
from splice.graph.model import Node
from splice.semantic.metricflow import Compiled


class SemanticHost(Protocol):
    """What compiling needs of the workspace (:class:`splice.workspace.core.Workspace` is one):
    its projects, the provider of each, its dialect."""

    config: Any
    dialect: str

    def provider(self, project: str) -> Any: ...


def manifest_path(ws: SemanticHost, project: str) -> Path:
    """The ``semantic_manifest.json`` dbt wrote for ``project`` in the workspace's target
    (parsing the project when it is not there)."""
    provider = ws.provider(project)
    return Path(provider.semantic_manifest())


def compile_semantic(ws: SemanticHost, project: str, metric: str, group_by: list[str], grain: str,
                     node: Node) -> Compiled:  # fmt: skip
    """The metric's per-interval query from its own tool: MetricFlow for a dbt project, SQLMesh's
    metric rewriter for a SQLMesh project (which loads the project's Context)."""
    fmt = next((p.format for p in ws.config.projects if p.name == project), "dbt")
    if fmt == "sqlmesh":
        from splice.semantic.sqlmesh_metrics import compile_sqlmesh_metric

        if not node.time_column:
            raise ConfigError(
                f"the SQLMesh metric {metric!r} is measured on {node.id}, which has no "
                "time_column to cut it into intervals.",
                fix=f"give {node.id} a time_column (an INCREMENTAL_BY_TIME_RANGE kind)",
            )
        return compile_sqlmesh_metric(ws.provider(project).context, metric, group_by, grain,
                                      node.time_column, ws.dialect)  # fmt: skip
    from splice.semantic.metricflow import compile_metric

    return compile_metric(manifest_path(ws, project), metric, group_by, grain, ws.dialect)
