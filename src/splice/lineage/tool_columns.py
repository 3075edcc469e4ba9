"""Columns a tool adds to a model's table beyond its query (an SCD type 2 model's valid_from /
valid_to in SQLMesh), in column lineage, and why a lineage direction is empty."""

from __future__ import annotations

from splice.graph.model import Node
from splice.lineage.types import ColumnLineage, ColumnRef, ModelLineage


def add_tool_columns(ml: ModelLineage, node: Node) -> None:
    """Add the columns the tool adds to the model's table beyond its query (an SCD type 2
    model's valid_from / valid_to: ``meta["tool_columns"]``, see the SQLMesh provider) to its
    lineage, fed by the query columns the tool derives them from (none: no upstream)."""
    added = dict(node.meta.get("tool_columns") or {})  # type: ignore[call-overload]
    for col, info in added.items():
        name = str(col).lower()
        if name in ml.columns:
            continue
        sources: list[ColumnRef] = []
        for src in info.get("from") or []:
            own = ml.columns.get(str(src).lower())
            if own is not None:
                sources += list(own.sources)
        ml.columns[name] = ColumnLineage(name, sources)


def tool_column_note(node: Node, column: str | None) -> str | None:
    """Why ``column`` of ``node`` is a column the tool adds (None when it is not one)."""
    added = dict(node.meta.get("tool_columns") or {})  # type: ignore[call-overload]
    info = {str(k).lower(): v for k, v in added.items()}.get((column or "").lower())
    return str(info["why"]) if info else None
