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


def empty_upstream_reason(node: Node, column: str | None, ml: ModelLineage | None) -> str:
    """Why a column (or a node) has no upstream lineage, for people."""
    note = tool_column_note(node, column)
    if note:
        return note
    if ml is not None and ml.opaque_reason:
        return f"{node.id} is opaque: {ml.opaque_reason}"
    if ml is not None and column:
        col = ml.columns.get(column)
        if col is not None and col.opaque_reason:
            return f"opaque: {col.opaque_reason}"
        return f"no column flows into {column!r}: it is a constant or computed without columns"
    if node.kind in ("source", "external", "ingestion", "seed"):
        return f"{node.id} is a {node.kind}: nothing upstream of it is in the workspace"
    if ml is None:
        return f"{node.id} is a {node.kind} without SQL to analyse"
    return f"no column flows into {node.id}"
