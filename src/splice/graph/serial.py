"""The joined graph as plain JSON data, and back (for the graph cache, :mod:`splice.workspace.graph_cache`).

Generic over dataclass fields: a field added to :class:`~splice.graph.model.Node` (or to
``Relation``, ``Edge``, ``Ambiguity``) is carried without a change here.  Values are encoded as
JSON with three tags for what JSON cannot say: a known dataclass (``{"__dc": "Relation", ...}``),
a tuple (``{"__tuple": [...]}``) and a set (``{"__set": [...]}``); a dict with a key that is not a
string becomes ``{"__items": [[k, v], ...]}``.  A value of any other type raises
:class:`NotSerialisable` (the caller then does not cache: a cached graph must equal a loaded one).

>>> from splice.graph.model import Relation
>>> from_data(to_data(Relation("w", "s", "t"))) == Relation("w", "s", "t")
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

from splice.graph.model import Ambiguity, Edge, Graph, Node, Relation

CLASSES: dict[str, type] = {c.__name__: c for c in (Node, Relation, Edge, Ambiguity)}
_PLAIN = (str, int, float, bool, type(None))


class NotSerialisable(TypeError):
    """A graph value that plain JSON cannot carry faithfully."""


def _fields(cls: type) -> tuple[str, ...]:
    hit = _FIELD_CACHE.get(cls)
    if hit is None:
        hit = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _FIELD_CACHE[cls] = hit
    return hit


_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def to_data(value: Any) -> Any:
    """``value`` as JSON-ready data (see the module docstring)."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, list):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: to_data(v) for k, v in value.items()}
        return {"__items": [[to_data(k), to_data(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple": [to_data(v) for v in value]}
    if isinstance(value, set | frozenset):
        items = sorted((to_data(v) for v in value), key=repr)
        return {"__set": items, "frozen": isinstance(value, frozenset)}
    cls = type(value)
    if dataclasses.is_dataclass(value) and CLASSES.get(cls.__name__) is cls:
        out: dict[str, Any] = {"__dc": cls.__name__}
        for name in _fields(cls):
            out[name] = to_data(getattr(value, name))
        return out
    raise NotSerialisable(f"a {cls.__name__} value ({value!r:.80}) has no plain JSON form")


def from_data(data: Any) -> Any:
    """The inverse of :func:`to_data`."""
    if isinstance(data, _PLAIN):
        return data
    if isinstance(data, list):
        return [from_data(v) for v in data]
    if "__dc" in data:
        cls = CLASSES[data["__dc"]]
        return cls(**{k: from_data(v) for k, v in data.items() if k != "__dc"})
    if "__tuple" in data:
        return tuple(from_data(v) for v in data["__tuple"])
    if "__set" in data:
        items = [from_data(v) for v in data["__set"]]
        return frozenset(items) if data.get("frozen") else set(items)
    if "__items" in data:
        return {from_data(k): from_data(v) for k, v in data["__items"]}
    return {k: from_data(v) for k, v in data.items()}


def graph_to_dict(graph: Graph) -> dict[str, Any]:
    """The joined graph as plain data: its nodes, its edges (bindings included, in order) and
    the ambiguous reads."""
    return {
        "nodes": [to_data(n) for n in graph.nodes.values()],
        "edges": [to_data(e) for e in graph.edges],
        "ambiguities": [to_data(a) for a in graph.ambiguities],
    }


def graph_from_dict(data: dict[str, Any]) -> Graph:
    """The inverse of :func:`graph_to_dict` (indexes rebuilt as :func:`splice.workspace.bindings.join`
    builds them: nodes first, then edges in their order)."""
    g = Graph()
    for n in data["nodes"]:
        g.add_node(from_data(n))
    for e in data["edges"]:
        g.add_edge(from_data(e))
    g.ambiguities = [from_data(a) for a in data["ambiguities"]]
    return g
