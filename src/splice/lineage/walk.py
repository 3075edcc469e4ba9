"""Walk column lineage across models, and across projects.

A column of relation R read by model B is the column of the node that writes R, whatever tool
wrote it: the walker only needs each node's :class:`~splice.lineage.ModelLineage` and who writes
which relation (``{relation_key: node_id}``, from the joined graph's writes and bindings).
A relation that no node writes (a raw table nobody declared) ends a walk as an external hop with
``node_id=None``.

A model that reads its own table (a dbt incremental reading ``{{ this }}``, a SQLMesh model reading
``@this_model``) reads its own earlier state: that edge is a hop to the same node with
``self_ref`` true (the previous state of that column).  Walks go on from it like from any hop and
terminate: every (node, column) is visited once.

A hop is ``direct`` only when every step from the start is direct; otherwise ``indirect``.  A model
that is opaque (for example ``SELECT *`` over unknown columns) cannot say which column a hop goes
to: it shows as one hop with column ``"*"`` (kind indirect), and the walk stops there.

>>> from splice.graph.model import Relation
>>> from splice.lineage import analyse_model
>>> S = {"w": {"raw": {"orders": {"id": "", "amount": "", "ok": ""}}, "stg": {"orders": {"id": "", "amount": ""}}}}
>>> stg = analyse_model("SELECT id, amount FROM w.raw.orders WHERE ok", schema=S,
...                     output=Relation("w", "stg", "orders"))
>>> mart = analyse_model("SELECT SUM(amount) AS total FROM w.stg.orders", schema=S,
...                      output=Relation("w", "marts", "revenue"))
>>> idx = LineageIndex({"p:stg_orders": stg, "q:revenue": mart})
>>> [(h.node_id, h.column, h.kind, h.depth) for h in idx.upstream("q:revenue", "total")]
[('p:stg_orders', 'amount', 'direct', 1), (None, 'amount', 'direct', 2), (None, 'ok', 'indirect', 2)]
>>> [(h.node_id, h.column, h.kind) for h in idx.downstream("p:stg_orders", "amount")]
[('q:revenue', 'total', 'direct')]
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from splice.errors import NodeNotFoundError
from splice.graph.model import Relation
from splice.lineage.types import Kind, ModelLineage

OPAQUE_COLUMN = "*"

_Step = tuple[str | None, Relation | None, str, str]  # node, relation, column, kind


@dataclass(frozen=True)
class Hop:
    """One column reached by a walk.

    ``node_id`` writes ``relation`` (None for an external relation no node writes); ``depth`` is
    the number of model boundaries from the start (1 = an immediate parent / child column);
    ``via`` is the ``(node_id, column)`` one step closer to the start.  ``self_ref`` is true for
    a model's own earlier state: the node read (upstream) or feeds (downstream) its own table.
    """

    node_id: str | None
    relation: Relation | None
    column: str
    kind: Kind
    depth: int
    via: tuple[str | None, str] | None = None
    self_ref: bool = False

    @property
    def label(self) -> str:
        """``node_id.column``, or ``relation.column`` for an external relation."""
        owner = self.node_id or (self.relation.key if self.relation else "?")
        return f"{owner}.{self.column}" + (" (previous state)" if self.self_ref else "")

    def to_dict(self) -> dict[str, object]:
        return {
            "node_id": self.node_id,
            "relation": self.relation.key if self.relation else None,
            "column": self.column,
            "kind": self.kind,
            "depth": self.depth,
            "via": list(self.via) if self.via else None,
            "self_ref": self.self_ref,
        }


class LineageIndex:
    """Column lineage of many models, indexed for walks in both directions.

    ``models`` maps node id to its :class:`ModelLineage`, or to ``(ModelLineage, Relation it
    writes)``.  ``writers`` maps relation keys (``Relation.key``) to the node that writes them;
    by default it is derived from each lineage's output relation.  Building is linear in the
    number of refs; the reverse (reader) index is built on the first downstream walk.
    """

    def __init__(
        self,
        models: Mapping[str, ModelLineage | tuple[ModelLineage, Relation | None]],
        writers: Mapping[str, str] | None = None,
    ) -> None:
        self.lineages: dict[str, ModelLineage] = {}
        self.outputs: dict[str, Relation] = {}
        for node_id, value in models.items():
            ml, out = value if isinstance(value, tuple) else (value, value.output)
            self.lineages[node_id] = ml
            if out is not None:
                self.outputs[node_id] = out
        if writers is None:
            writers = {rel.key: nid for nid, rel in self.outputs.items()}
        self.writers: dict[str, str] = dict(writers)
        for key, nid in self.writers.items():  # a writer known only from the graph
            parts = key.split(".")
            if nid not in self.outputs and len(parts) in (2, 3):
                cat = parts[0] if len(parts) == 3 else None
                self.outputs[nid] = Relation(cat, parts[-2], parts[-1])
        self._readers: dict[tuple[str, str], list[tuple[str, str, str]]] | None = None
        self._query_readers: dict[tuple[str, str], list[str]] = {}
        self._opaque_readers: dict[str, list[str]] = {}

    # -- building ------------------------------------------------------------------------------
    def _build_readers(self) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
        readers: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
        qreaders: dict[tuple[str, str], list[str]] = defaultdict(list)
        opaque: dict[str, list[str]] = defaultdict(list)
        for nid, ml in self.lineages.items():
            if ml.opaque_reason:
                for rel in ml.reads:
                    opaque[rel.key].append(nid)
                continue
            for col in ml.columns.values():
                seen: set[tuple[str, str, str]] = set()
                for ref in col.sources:
                    item = (ref.relation.key, ref.column, ref.kind)
                    if item not in seen:
                        seen.add(item)
                        readers[(item[0], item[1])].append((nid, col.name, ref.kind))
            for ref in ml.query_indirect:
                qreaders[(ref.relation.key, ref.column)].append(nid)
        self._readers = dict(readers)
        self._query_readers = {k: sorted(set(v)) for k, v in qreaders.items()}
        self._opaque_readers = dict(opaque)
        return self._readers

    def columns_read(self, rel: Relation) -> set[str]:
        """The columns of ``rel`` that some model reads (for its output or its rows)."""
        readers = self._readers if self._readers is not None else self._build_readers()
        keys = list(readers) + list(self._query_readers)
        return {col for key, col in keys if key == rel.key}

    # -- steps ---------------------------------------------------------------------------------
    def _up(
        self, node: str | None, rel: Relation | None, column: str, indirect: bool
    ) -> Iterator[_Step]:
        ml = self.lineages.get(node) if node is not None else None
        if ml is None:
            return
        if ml.opaque_reason:
            for r in ml.reads:
                writer = self.writers.get(r.key)
                if writer != node:
                    yield writer, r, OPAQUE_COLUMN, "indirect"
            return
        if column == OPAQUE_COLUMN:
            return
        col = ml.columns.get(column)
        refs = list(col.sources) if col else []
        if indirect:
            refs += ml.query_indirect
        for ref in refs:
            # an incremental model reading its own table yields itself: a self hop
            yield self.writers.get(ref.relation.key), ref.relation, ref.column, ref.kind

    def _down(
        self, node: str | None, rel: Relation | None, column: str, indirect: bool
    ) -> Iterator[_Step]:
        readers = self._readers if self._readers is not None else self._build_readers()
        if node is not None:
            rel = self.outputs.get(node, rel)
        if rel is None or column == OPAQUE_COLUMN:
            return
        key = (rel.key, column)
        for reader, out_col, kind in readers.get(key, ()):  # the node itself: a self hop
            yield reader, self.outputs.get(reader), out_col, kind
        if indirect:
            for reader in self._query_readers.get(key, ()):
                for out_col in self.lineages[reader].columns:
                    yield reader, self.outputs.get(reader), out_col, "indirect"
            for reader in self._opaque_readers.get(rel.key, ()):
                if reader != node:
                    yield reader, self.outputs.get(reader), OPAQUE_COLUMN, "indirect"

    # -- walks ---------------------------------------------------------------------------------
    def _check_start(self, node_id: str, column: str) -> None:
        ml = self.lineages.get(node_id)
        if ml is None:
            if node_id in self.outputs:
                return
            close = difflib.get_close_matches(node_id, list(self.lineages), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise NodeNotFoundError(
                f"no column lineage for node {node_id!r}{hint}",
                fix="name a model node as project:name",
            )
        if not ml.opaque_reason and column not in ml.columns and column != OPAQUE_COLUMN:
            close = difflib.get_close_matches(column, list(ml.columns), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise NodeNotFoundError(
                f"{node_id} has no column {column!r}{hint}",
                fix=f"name one of its columns: {', '.join(list(ml.columns)[:8])}",
            )

    def upstream(
        self, node_id: str, column: str, *, depth: int | None = None, include_indirect: bool = True
    ) -> list[Hop]:
        """Every column ``node_id.column`` comes from, nearest first, up to ``depth`` models away."""
        self._check_start(node_id, column)
        return _bfs((node_id, self.outputs.get(node_id), column), self._up, depth, include_indirect)

    def downstream(
        self,
        node_id: str | None,
        column: str,
        *,
        depth: int | None = None,
        include_indirect: bool = True,
        relation: Relation | None = None,
    ) -> list[Hop]:
        """Every column that ``node_id.column`` flows into or affects.  Pass ``node_id=None`` and
        ``relation=`` to start from an external relation (a raw table)."""
        if node_id is not None:
            self._check_start(node_id, column)
        rel = self.outputs.get(node_id, relation) if node_id is not None else relation
        return _bfs((node_id, rel, column), self._down, depth, include_indirect)


def _bfs(
    start: tuple[str | None, Relation | None, str],
    step: Callable[[str | None, Relation | None, str, bool], Iterable[_Step]],
    depth: int | None,
    include_indirect: bool,
) -> list[Hop]:
    s_node, s_rel, s_col = start
    start_key = (s_node, s_rel.key if s_rel else None, s_col, False)
    # a hop is (node, relation, column, self_ref): a model's earlier state of a column is
    # reported apart from the column itself, and walked on once like any other hop
    best: dict[tuple[str | None, str | None, str, bool], Hop] = {}
    visited: set[tuple[tuple[str | None, str | None, str, bool], str]] = {(start_key, "direct")}
    frontier: list[tuple[str | None, Relation | None, str, str]] = [
        (s_node, s_rel, s_col, "direct")
    ]
    level = 0
    while frontier and (depth is None or level < depth):
        level += 1
        nxt: list[tuple[str | None, Relation | None, str, str]] = []
        for node, rel, col, kind in frontier:
            for n2, rel2, col2, k2 in step(node, rel, col, include_indirect):
                k = "direct" if kind == "direct" and k2 == "direct" else "indirect"
                if k == "indirect" and not include_indirect:
                    continue
                own = n2 is not None and n2 == node
                key = (n2, rel2.key if rel2 else None, col2, own)
                if key == start_key or (key, k) in visited or (key, "direct") in visited:
                    continue
                visited.add((key, k))
                prev = best.get(key)
                if prev is None or (prev.kind == "indirect" and k == "direct"):
                    best[key] = Hop(n2, rel2, col2, k, level, (node, col), own)  # type: ignore[arg-type]
                if n2 is not None and not (own and (n2, key[1], col2, False) == start_key):
                    nxt.append((n2, rel2, col2, k))
        frontier = nxt
    return sorted(
        best.values(),
        key=lambda h: (
            h.depth,
            h.node_id or "~",
            h.relation.key if h.relation else "",
            h.column,
            h.self_ref,
        ),
    )


def upstream(
    lineages: Mapping[str, ModelLineage | tuple[ModelLineage, Relation | None]],
    writers: Mapping[str, str] | None,
    node_id: str,
    column: str,
    *,
    depth: int | None = None,
    include_indirect: bool = True,
) -> list[Hop]:
    """One-off :meth:`LineageIndex.upstream` (build a :class:`LineageIndex` to walk often)."""
    return LineageIndex(lineages, writers).upstream(
        node_id, column, depth=depth, include_indirect=include_indirect
    )


def downstream(
    lineages: Mapping[str, ModelLineage | tuple[ModelLineage, Relation | None]],
    writers: Mapping[str, str] | None,
    node_id: str | None,
    column: str,
    *,
    depth: int | None = None,
    include_indirect: bool = True,
    relation: Relation | None = None,
) -> list[Hop]:
    """One-off :meth:`LineageIndex.downstream`."""
    return LineageIndex(lineages, writers).downstream(
        node_id, column, depth=depth, include_indirect=include_indirect, relation=relation
    )
