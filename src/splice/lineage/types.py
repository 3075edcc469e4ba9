"""The results of column lineage: plain dataclasses that round-trip through JSON.

A :class:`ModelLineage` is what :func:`splice.lineage.analyse_model` returns for one query: for
every output column a :class:`ColumnLineage` listing the upstream :class:`ColumnRef` s, plus the
query-level indirect set (the columns its WHERE / JOIN / GROUP BY / HAVING / QUALIFY use, which
affect every output column and so are stored once).

>>> from splice.graph.model import Relation
>>> ref = ColumnRef(Relation("warehouse", "raw", "orders"), "amount", "direct", ("AGGREGATION",))
>>> ref.text
'warehouse.raw.orders.amount:direct'
>>> ColumnRef.from_dict(ref.to_dict()) == ref
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from splice.graph.model import Relation

Kind = Literal["direct", "indirect"]

#: OpenLineage transformation subtypes, by kind.
DIRECT_SUBTYPES = ("IDENTITY", "TRANSFORMATION", "AGGREGATION")
INDIRECT_SUBTYPES = ("JOIN", "FILTER", "GROUP_BY", "SORT", "WINDOW", "CONDITIONAL")

#: Bumped whenever the engine's output for the same input may change (it is part of the cache key).
ENGINE_VERSION = "2"


def _rel_to_dict(rel: Relation) -> list[str | None]:
    return [rel.catalog, rel.schema, rel.name]


_REL_CACHE: dict[tuple[str | None, str, str], Relation] = {}


def _rel_from_dict(data: Any) -> Relation:
    if isinstance(data, dict):
        key = (data.get("catalog"), data["schema"], data["name"])
    else:
        key = tuple(data)  # type: ignore[assignment]
    rel = _REL_CACHE.get(key)
    if rel is None:
        if len(_REL_CACHE) > 100_000:
            _REL_CACHE.clear()
        rel = _REL_CACHE[key] = Relation(*key)
    return rel


class ColumnRef(NamedTuple):
    """One upstream column: ``relation.column``, how it reaches the output (``kind``) and the
    OpenLineage subtypes of that path (``subtypes``, sorted; e.g. ``("IDENTITY",)``).

    ``masking`` is true when the value only arrives hashed (md5, sha256, hash).  A named tuple:
    cheap to build, to compare and to send between processes (a workspace has 100,000s of them).
    """

    relation: Relation
    column: str
    kind: Kind = "direct"
    subtypes: tuple[str, ...] = ()
    masking: bool = False

    @property
    def text(self) -> str:
        """``catalog.schema.table.column:kind``, the form the golden fixtures use."""
        return f"{self.relation.key}.{self.column}:{self.kind}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "relation": _rel_to_dict(self.relation),
            "column": self.column,
            "kind": self.kind,
            "subtypes": list(self.subtypes),
        }
        if self.masking:
            out["masking"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnRef:
        return cls(
            _rel_from_dict(data["relation"]),
            data["column"],
            data.get("kind", "direct"),
            tuple(data.get("subtypes") or ()),
            bool(data.get("masking", False)),
        )


class JoinKey(NamedTuple):
    """One equality of a join's ON clause between columns of two relations the query reads:
    ``left`` is the side whose rows look for a partner (the FROM side; the preserved side of an
    outer join), ``right`` the side they look in; ``how`` is the join's type (``inner``,
    ``left``, ``full``).  Found only where each side is a column read as it is (IDENTITY) from
    one relation: ``upper(a.code) = b.code`` is not a key of ``a.code``'s values.

    >>> from splice.graph.model import Relation
    >>> k = JoinKey(ColumnRef(Relation("w", "raw", "b"), "ccy", "indirect", ("JOIN",)),
    ...             ColumnRef(Relation("w", "fx", "r"), "ccy", "indirect", ("JOIN",)), "left")
    >>> JoinKey.from_dict(k.to_dict()) == k, k.text
    (True, 'w.raw.b.ccy = w.fx.r.ccy (left)')
    """

    left: ColumnRef
    right: ColumnRef
    how: str = "inner"

    @property
    def text(self) -> str:
        return (
            f"{self.left.relation.key}.{self.left.column} = "
            f"{self.right.relation.key}.{self.right.column} ({self.how})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"left": self.left.to_dict(), "right": self.right.to_dict(), "how": self.how}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JoinKey:
        return cls(
            ColumnRef.from_dict(data["left"]),
            ColumnRef.from_dict(data["right"]),
            str(data.get("how") or "inner"),
        )


@dataclass
class ColumnLineage:
    """The lineage of one output column.

    ``sources`` holds the column's own edges (what flows into it, plus indirect edges specific to
    it: window PARTITION BY / ORDER BY, CASE conditions); the query-level indirect edges live once
    on :attr:`ModelLineage.query_indirect`.  ``opaque_reason`` is set when some part of the column
    could not be resolved (``sources`` then holds what could be).
    """

    name: str
    sources: list[ColumnRef] = field(default_factory=list)
    opaque_reason: str | None = None

    @property
    def direct(self) -> list[ColumnRef]:
        return [r for r in self.sources if r.kind == "direct"]

    @property
    def indirect(self) -> list[ColumnRef]:
        return [r for r in self.sources if r.kind == "indirect"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "sources": [r.to_dict() for r in self.sources]}
        if self.opaque_reason:
            out["opaque_reason"] = self.opaque_reason
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnLineage:
        return cls(
            data["name"],
            [ColumnRef.from_dict(r) for r in data.get("sources") or ()],
            data.get("opaque_reason"),
        )


@dataclass
class ModelLineage:
    """Column lineage of one model (one query).

    ``columns`` maps each output column (normalised by the dialect) to its lineage, in the
    query's output order.  ``opaque_reason`` is set when the model as a whole could not be
    analysed (no SQL, unparsable, ``SELECT *`` over unknown columns); ``columns`` then holds
    whatever could still be resolved, often nothing.  ``reads`` lists every relation the query
    reads, ``output`` the relation the model writes when the caller said so.

    >>> ml = ModelLineage(columns={"a": ColumnLineage("a")}, dialect="duckdb")
    >>> ModelLineage.from_dict(ml.to_dict()) == ml
    True
    >>> ModelLineage.opaque("could not parse: x").is_opaque
    True
    """

    columns: dict[str, ColumnLineage] = field(default_factory=dict)
    query_indirect: list[ColumnRef] = field(default_factory=list)
    opaque_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    reads: list[Relation] = field(default_factory=list)
    output: Relation | None = None
    dialect: str | None = None
    #: the equi-join keys of the query and of every CTE or derived table it reads
    joins: list[JoinKey] = field(default_factory=list)

    @classmethod
    def opaque(cls, reason: str, **kwargs: Any) -> ModelLineage:
        return cls(opaque_reason=reason, **kwargs)

    @property
    def is_opaque(self) -> bool:
        return self.opaque_reason is not None

    @property
    def opaque_columns(self) -> dict[str, str]:
        """Output columns that could not be fully resolved, with the reason."""
        return {n: c.opaque_reason for n, c in self.columns.items() if c.opaque_reason}

    def sources_of(self, column: str, *, query_level: bool = True) -> list[ColumnRef]:
        """Every upstream ref of ``column``: its own, plus the query-level indirect ones."""
        col = self.columns.get(column)
        own = list(col.sources) if col else []
        if not query_level:
            return own
        return merge_refs(own, self.query_indirect)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": [c.to_dict() for c in self.columns.values()],
            "query_indirect": [r.to_dict() for r in self.query_indirect],
            "reads": [_rel_to_dict(r) for r in self.reads],
        }
        if self.opaque_reason:
            out["opaque_reason"] = self.opaque_reason
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.output is not None:
            out["output"] = _rel_to_dict(self.output)
        if self.dialect:
            out["dialect"] = self.dialect
        if self.joins:
            out["joins"] = [j.to_dict() for j in self.joins]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelLineage:
        cols = [ColumnLineage.from_dict(c) for c in data.get("columns") or ()]
        return cls(
            columns={c.name: c for c in cols},
            query_indirect=[ColumnRef.from_dict(r) for r in data.get("query_indirect") or ()],
            opaque_reason=data.get("opaque_reason"),
            warnings=list(data.get("warnings") or ()),
            reads=[_rel_from_dict(r) for r in data.get("reads") or ()],
            output=_rel_from_dict(data["output"]) if data.get("output") else None,
            dialect=data.get("dialect"),
            joins=[JoinKey.from_dict(j) for j in data.get("joins") or ()],
        )


def merge_refs(*groups: Iterable[ColumnRef]) -> list[ColumnRef]:
    """Union of refs, one per (relation, column, kind) with their subtypes merged, sorted.

    >>> from splice.graph.model import Relation
    >>> r = Relation("w", "s", "t")
    >>> [x.subtypes for x in merge_refs([ColumnRef(r, "a", "indirect", ("JOIN",))],
    ...                                  [ColumnRef(r, "a", "indirect", ("FILTER",))])]
    [('FILTER', 'JOIN')]
    """
    acc: dict[tuple[Relation, str, str], tuple[set[str], bool]] = {}
    for group in groups:
        for ref in group:
            key = (ref.relation, ref.column, ref.kind)
            subs, masking = acc.get(key, (set(), False))
            subs.update(ref.subtypes)
            acc[key] = (subs, masking or ref.masking)
    return [
        ColumnRef(rel, col, kind, tuple(sorted(subs)), masking)  # type: ignore[arg-type]
        for (rel, col, kind), (subs, masking) in sorted(
            acc.items(), key=lambda kv: (kv[0][0].key, kv[0][1], kv[0][2])
        )
    ]
