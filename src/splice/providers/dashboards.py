"""Dashboards declared in splice.toml (BI assets that are not dbt exposures)."""

from __future__ import annotations

from splice.config.workspace import DashboardSection
from splice.graph.model import Node

PROJECT = "dashboards"


def dashboard_nodes(dashboards: list[DashboardSection]) -> list[Node]:
    return [
        Node(
            id=f"{PROJECT}:{d.name}",
            project=PROJECT,
            name=d.name,
            kind="dashboard",
            tool=d.tool,
            language="none",
            owner=d.owner,
            meta={"label": d.label or d.name, "url": d.url, "declared_reads": list(d.reads)},
        )
        for d in dashboards
    ]
