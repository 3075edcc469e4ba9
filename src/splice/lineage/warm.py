"""The warm path of column lineage: the whole workspace's result, kept while the graph key
(:mod:`splice.workspace.graph_cache`) and the warehouse's columns are the same, so that `splice lineage`
and `splice doctor` on an unchanged workspace need no provider (neither dbt nor SQLMesh).

One entry per target (kind ``workspace_lineage`` of the content cache), packed compactly: every
relation and every column reference is written once and referred to by its index (a workspace
of 2,000 models has about 100,000 references to 50,000 distinct columns), and each lineage
object is a list of its fields.  The packing is derived from the dataclass fields and their
types, so a field added to :class:`~splice.lineage.types.ModelLineage` or ``ColumnLineage`` is
carried; the field names are kept with the entry and an entry written with other fields is not
read.  A field of a type the packing does not know turns the warm path off (nothing is kept),
never into a wrong answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from splice.graph.model import Relation
from splice.lineage.types import ColumnLineage, ColumnRef, JoinKey, ModelLineage

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

KIND = "workspace_lineage"
VERSION = "1"
_PLAIN = (str, int, float, bool, type(None))


class _Unpackable(TypeError):
    pass


def _fields(cls: type) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(cls._fields)  # type: ignore[attr-defined]


def header() -> dict[str, list[str]]:
    return {c.__name__: _fields(c) for c in (ModelLineage, ColumnLineage, ColumnRef, JoinKey)}


class _Packer:
    """Packs and unpacks with one table of relations and one of column references."""

    def __init__(self, rels: list[Any] | None = None, refs: list[Any] | None = None) -> None:
        self.rel_index: dict[Relation, int] = {}
        self.ref_index: dict[ColumnRef, int] = {}
        self.rels_out: list[list[Any]] = []
        self.refs_out: list[list[Any]] = []
        self.rels: list[Relation] = [Relation(*r) for r in rels or []]
        self._codecs: dict[type, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}
        self.refs: list[ColumnRef] = []
        if refs:
            ref_dec = self._record_codec(ColumnRef)[1]
            self.refs = [ref_dec(r) for r in refs]

    # -- relations and references -------------------------------------------------------------
    def _rel_enc(self, r: Relation) -> int:
        i = self.rel_index.get(r)
        if i is None:
            i = self.rel_index[r] = len(self.rels_out)
            self.rels_out.append([r.catalog, r.schema, r.name])
        return i

    def _ref_enc(self, r: ColumnRef) -> int:
        i = self.ref_index.get(r)
        if i is None:
            i = self.ref_index[r] = len(self.refs_out)
            self.refs_out.append(self._record_codec(ColumnRef)[0](r))
        return i

    # -- codecs from type hints ---------------------------------------------------------------
    def _codec(self, tp: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Relation:
            return self._rel_enc, self.rels.__getitem__
        if tp is ColumnRef:
            return self._ref_enc, self.refs.__getitem__
        if tp in (ModelLineage, ColumnLineage, JoinKey):
            return self._record_codec(tp)
        if tp in _PLAIN or origin is typing.Literal:
            return _same, _same
        if origin in (typing.Union, types.UnionType):
            inner = [a for a in args if a is not type(None)]
            if all(a in _PLAIN or typing.get_origin(a) is typing.Literal for a in inner):
                return _same, _same
            if len(inner) == 1:
                enc, dec = self._codec(inner[0])
                return (
                    lambda v: None if v is None else enc(v),
                    lambda v: None if v is None else dec(v),
                )
        if origin is list and len(args) == 1:
            enc, dec = self._codec(args[0])
            return (lambda v: [enc(x) for x in v]), (lambda v: [dec(x) for x in v])
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            enc, dec = self._codec(args[0])
            return (lambda v: [enc(x) for x in v]), (lambda v: tuple(dec(x) for x in v))
        if origin is dict and args and args[0] is str:
            enc, dec = self._codec(args[1])
            return (
                lambda v: [[k, enc(x)] for k, x in v.items()],
                lambda v: {k: dec(x) for k, x in v},
            )
        raise _Unpackable(f"no packing for {tp!r}")

    def _record_codec(self, cls: type) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
        hit = self._codecs.get(cls)
        if hit is not None:
            return hit
        self._codecs[cls] = (_pending, _pending)  # a recursive type resolves to this entry
        hints = typing.get_type_hints(cls)
        names = _fields(cls)
        parts = [self._codec(hints[n]) for n in names]
        encs = [p[0] for p in parts]
        decs = [p[1] for p in parts]

        def enc(obj: Any) -> list[Any]:
            return [e(getattr(obj, n)) for e, n in zip(encs, names, strict=True)]

        def dec(data: list[Any]) -> Any:
            return cls(*[d(v) for d, v in zip(decs, data, strict=True)])

        self._codecs[cls] = (enc, dec)
        return enc, dec


def _same(v: Any) -> Any:
    return v


def _pending(v: Any) -> Any:  # pragma: no cover - only a self-referencing type reaches it
    raise _Unpackable("recursive lineage type")


def pack(models: dict[str, ModelLineage]) -> dict[str, Any] | None:
    """``models`` as compact plain data, or None when a field has no packing."""
    try:
        p = _Packer()
        enc = p._record_codec(ModelLineage)[0]
        packed = [[nid, enc(ml)] for nid, ml in models.items()]
    except _Unpackable:
        return None
    return {"header": header(), "rels": p.rels_out, "refs": p.refs_out, "models": packed}


def unpack(data: dict[str, Any]) -> dict[str, ModelLineage] | None:
    """The inverse of :func:`pack` (None when the entry was packed with other fields)."""
    if data.get("header") != header():
        return None
    import gc

    enabled = gc.isenabled()
    gc.disable()  # tens of thousands of small objects, none of them garbage
    try:
        p = _Packer(data["rels"], data["refs"])
        dec = p._record_codec(ModelLineage)[1]
        return {nid: dec(m) for nid, m in data["models"]}
    except (_Unpackable, KeyError, IndexError, TypeError, ValueError):
        return None
    finally:
        if enabled:
            gc.enable()


# -- the entry ------------------------------------------------------------------------------------
def whole_key(ws: Workspace, render_version: str, wh: dict[Relation, dict[str, str]]) -> str:
    """What the whole result rests on: the graph key (every input of the graph, Splice's and
    the tools' versions, the target) and the warehouse's columns."""
    h = hashlib.sha256(
        f"{VERSION}|{render_version}|{ws.inputs_key()}|{ws.default_catalog}".encode()
    )
    for rel in sorted(wh):
        h.update(f"\0{rel.key}:{sorted(wh[rel].items())}".encode())
    return h.hexdigest()


def slot(ws: Workspace) -> dict[str, Any]:
    """The target's entry as stored, whatever its key (empty when there is none)."""
    hit = ws.state.cache_get_many(KIND, [ws.target]).get(ws.target)
    return hit if isinstance(hit, dict) else {}


def lookup(entry: dict[str, Any], key: str) -> dict[str, ModelLineage] | None:
    """The whole result in ``entry`` (:func:`slot`) if it was kept under ``key``."""
    if entry.get("key") != key:
        return None
    return unpack(entry.get("packed") or {})


def previous(entry: dict[str, Any]) -> tuple[dict[str, str], dict[str, ModelLineage]]:
    """The last whole result in ``entry`` (:func:`slot`) whatever its key: each model's
    lineage key (what its analysis rested on: its SQL, the schemas it read, the versions) and
    its lineage. After an edit, a model whose lineage key is the same takes its lineage from
    here, in one read, rather than from its own entry. Empty when there is none (or it was
    packed otherwise)."""
    keys = entry.get("keys")
    if not isinstance(keys, dict) or not keys:
        return {}, {}
    models = unpack(entry.get("packed") or {})
    return (keys, models) if models is not None else ({}, {})


def remember(
    ws: Workspace, key: str, models: dict[str, ModelLineage], keys: dict[str, str] | None = None
) -> bool:
    """Keep the whole result under ``key``, with each model's lineage key (``keys``:
    :func:`previous` reads them)."""
    packed = pack(models)
    if packed is None:
        return False
    entry = {"key": key, "made_at": time.time(), "packed": packed, "keys": keys or {}}
    ws.state.cache_put_many(KIND, {ws.target: entry})
    return True
