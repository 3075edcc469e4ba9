"""Column lineage for a whole workspace: render each model once, analyse it once, cache it.

The engine (:mod:`splice.lineage`) analyses one query; this module feeds it:

1. the SQL each tool renders (dbt compiled SQL, SQLMesh rendered SQL), itself cached by the
   inputs that determine it, so an unchanged project is not recompiled;
2. the schemas of what each model reads: tool metadata (SQLMesh column types, dbt YAML, a dlt
   pipeline's schema), the warehouse's information_schema when it exists, and the output
   columns of upstream models analysed earlier in the same pass (models go in waves, in
   dependency order, each wave in parallel);
3. a content-hash cache in Splice's state, so an unchanged model is never re-analysed.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from splice.graph.model import Graph, Node, Relation
from splice.lineage.tool_columns import add_tool_columns
from splice.lineage.types import ModelLineage
from splice.workspace.core import Workspace

RENDER_KIND = "rendered_sql"
RENDER_VERSION = "4"  # bump when the way Splice asks a tool to render changes
LINEAGE_KIND = "lineage"


def tool_versions(node: Node, provider: Any) -> dict[str, str]:
    """The versions of what renders and analyses ``node``'s SQL (part of both cache keys)."""
    from splice.lineage.cache import tool_versions as versions

    adapter = node.meta.get("adapter_type") or getattr(provider, "adapter_type", None)
    return versions(node.tool, str(adapter) if adapter else None)


@dataclass
class WorkspaceLineage:
    models: dict[str, ModelLineage] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


# -- rendering (cached) --------------------------------------------------------------------------
def _render_key(ws: Workspace, node: Node, provider: Any, graph: Graph) -> str | None:
    """What determines a node's rendered SQL, or None when it cannot be told without rendering."""
    h = hashlib.sha256()
    h.update(
        f"{RENDER_VERSION}|{node.id}|{ws.target}|{provider.ctx.environment}|{node.tool}".encode()
    )
    # the dialect the SQL is rendered in (the node's, else the workspace's) and the tools' versions
    h.update(
        f"|{node.dialect}|{ws.dialect}|{sorted(tool_versions(node, provider).items())}".encode()
    )
    own = node.meta.get("render_hash")  # what the tool said when it loaded the node
    if node.tool == "dbt":
        if not own:
            return None
        h.update(str(own).encode())
        # what the compiled SQL names: each parent's relation; an ephemeral parent is inlined,
        # so its own code and parents count too
        stack, seen = sorted(node.depends_on), set()
        while stack:
            p = stack.pop()
            pn = graph.nodes.get(p)
            if p in seen or pn is None:
                continue
            seen.add(p)
            h.update(f"|{p}:{pn.writes.key if pn.writes else ''}".encode())
            if pn.materialization == "ephemeral":
                h.update(f":{pn.meta.get('checksum')}".encode())
                stack.extend(sorted(pn.depends_on))
        return h.hexdigest()
    if node.tool == "sqlmesh" and own:
        h.update(str(own).encode())
        return h.hexdigest()
    return None


def rendered_sql(
    ws: Workspace, graph: Graph, node_ids: list[str], stats: dict[str, Any] | None = None
) -> dict[str, tuple[str | None, str, str | None]]:
    """node id -> (sql, dialect, opaque_reason) for the given models (``stats["rendered"]``
    counts those the tools rendered, the others came from the cache)."""
    out: dict[str, tuple[str | None, str, str | None]] = {}
    by_project: dict[str, list[Node]] = {}
    for nid in node_ids:
        n = graph.nodes[nid]
        by_project.setdefault(n.project, []).append(n)
    for project, nodes in by_project.items():
        if all(n.kind == "chart" for n in nodes):  # a BI tool's charts carry their own query
            for n in nodes:
                out[n.id] = (n.sql, n.dialect or ws.dialect,
                             None if n.sql else str(n.meta.get("opaque_reason") or "no query"))  # fmt: skip
            continue
        prov = ws.provider(project)
        keys = {n.id: _render_key(ws, n, prov, graph) for n in nodes}
        cached = ws.state.cache_get_many(RENDER_KIND, [k for k in keys.values() if k])
        todo = []
        for n in nodes:
            k = keys[n.id]
            if k and k in cached:
                c = cached[k]
                assert isinstance(c, dict)
                out[n.id] = (c.get("sql"), str(c.get("dialect")), c.get("opaque_reason"))
            else:
                todo.append(n)
        if todo:
            fresh = prov.render(todo)
            if stats is not None:
                stats["rendered"] = stats.get("rendered", 0) + len(todo)
            store: dict[str, object] = {}
            for n in todo:
                r = fresh.get(n.id)
                if r is None:
                    out[n.id] = (None, n.dialect or ws.dialect, "the tool did not render it")
                    continue
                out[n.id] = (r.sql, r.dialect, r.opaque_reason)
                k = keys[n.id]
                if k and r.sql is not None:
                    store[k] = {
                        "sql": r.sql,
                        "dialect": r.dialect,
                        "opaque_reason": r.opaque_reason,
                    }
            ws.state.cache_put_many(RENDER_KIND, store)
    return out


# -- schemas ---------------------------------------------------------------------------------------
WAREHOUSE_KIND = "warehouse_columns"
#: The columns read last, per (warehouse file, its stamp, dialect), in this process.
_WAREHOUSE_MEMO: dict[tuple[str, str, str], dict[Relation, dict[str, str]]] = {}
_WAREHOUSE_LOCK = threading.Lock()
#: Whole-workspace lineage per (graph key, warehouse stamp, render version, target), in this
#: process: a long-lived server analyses or unpacks it once per change.
_LINEAGE_MEMO: dict[Any, Any] = {}


def _warehouse_stamp(path: Any) -> str:
    """What changes when the warehouse's tables change: the file's and its WAL's size and
    modification time (DuckDB writes the WAL first and checkpoints into the file later)."""
    parts = []
    for p in (path, path.with_name(path.name + ".wal")):
        try:
            st = p.stat()
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
        except FileNotFoundError:
            parts.append("-")
    return "|".join(parts)


class _Provisional(dict):  # type: ignore[type-arg]
    """Columns read before a run that is still writing the warehouse: used, never remembered
    under the file's current stamp."""


def warehouse_columns(
    ws: Workspace, *, stamp_key: tuple[str, str, str] | None = None
) -> dict[Relation, dict[str, str]]:
    """Columns of every table and view in the warehouse (empty if it does not exist yet).

    The last read is kept in Splice's state with the warehouse file's stamp: while the file is
    unchanged the warehouse is not opened at all, and while another process holds its lock (a
    run writing it) the last columns read are used instead of failing; while a run of Splice's
    holds the warehouse the file is not opened either (the run's next segment would find it
    locked), and what it has read is not remembered as the file's. ``stamp_key``: the
    :func:`_warehouse_memo_key` the caller took already."""
    if ws.config.warehouse.type != "duckdb":  # a server: no file stamp to remember it by
        return _relations_of(ws, _server_columns(ws))
    path = ws.warehouse_path
    if not path.exists():
        return {}
    import duckdb

    from splice.warehouse.locks import held_elsewhere

    memo_key = stamp_key or _warehouse_memo_key(ws)
    stamp = memo_key[1]
    with _WAREHOUSE_LOCK:
        if memo_key in _WAREHOUSE_MEMO:
            return _WAREHOUSE_MEMO[memo_key]
    snap: Any = None
    if ws.caching:
        snap = ws.state.cache_get_many(WAREHOUSE_KIND, [str(path)]).get(str(path))
        if not isinstance(snap, dict) or not isinstance(snap.get("rows"), list):
            snap = None
    if snap is not None and snap.get("stamp") == stamp:
        rows = [tuple(r) for r in snap["rows"]]
    elif snap is not None and held_elsewhere(ws.splice_dir / "locks") is not None:
        # a run is writing the warehouse: opening it between two of its segments would make
        # the next one fail on DuckDB's lock, so the columns read last time serve until it ends
        return _Provisional(_relations_of(ws, [tuple(r) for r in snap["rows"]]))
    else:
        from splice.warehouse.duckdb.columns import all_columns_query

        query = all_columns_query()
        try:
            con = duckdb.connect(str(path))
        except duckdb.Error as e:
            from splice.support.faults_env import locked_error

            err = locked_error(e, f"warehouse {path}")
            if err and snap is not None:  # a writer holds it: the columns it had last time
                rows = [tuple(r) for r in snap["rows"]]
            elif err:
                raise err from None
            else:
                return {}
        else:
            try:
                rows = con.execute(query).fetchall()
            finally:
                con.close()
            if ws.caching:
                ws.state.cache_put_many(
                    WAREHOUSE_KIND,
                    {str(path): {"stamp": stamp, "rows": [list(map(str, r)) for r in rows]}},
                )
    out = _relations_of(ws, rows)
    with _WAREHOUSE_LOCK:  # a long-lived process (splice serve) reads it once per change
        if len(_WAREHOUSE_MEMO) >= 8:
            _WAREHOUSE_MEMO.pop(next(iter(_WAREHOUSE_MEMO)))
        _WAREHOUSE_MEMO[memo_key] = out
    return out


def _relations_of(ws: Workspace, rows: list[Any]) -> dict[Relation, dict[str, str]]:
    from splice.graph.relations import relation_from_parts

    out: dict[Relation, dict[str, str]] = {}
    for cat, sch, tbl, col, typ in rows:
        rel = relation_from_parts(cat, sch, tbl, dialect=ws.dialect)
        out.setdefault(rel, {})[col.lower()] = str(typ)
    return out


def _server_columns(ws: Workspace) -> list[Any]:
    """The columns of a server's warehouse (PostgreSQL, Spark), through its engine's
    ``columns.all_columns`` (Spark describes the relations the graph writes and reads, ``wanted``;
    PostgreSQL lists them all): read afresh each time, a server has no file stamp to remember
    it by."""
    from splice.warehouse.connect import connect
    from splice.warehouse.engines import engine_module

    def wanted() -> list[Relation]:
        graph = ws.graph()
        return list(dict.fromkeys(r for n in graph.nodes.values()
                                  for r in [*n.all_writes, *n.reads]))  # fmt: skip

    columns = engine_module(ws.config.warehouse.type, "columns")
    with connect(ws, "reading the warehouse's columns") as con:
        return list(columns.all_columns(con, wanted))


def _nest(schema: dict[Relation, dict[str, str]]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for rel, cols in schema.items():
        nested.setdefault(rel.catalog or "", {}).setdefault(rel.schema, {})[rel.name] = dict(cols)
    return nested


# -- the pass ------------------------------------------------------------------------------------
def _waits_on(graph: Graph, ids: list[str], dialect: str) -> dict[str, set[str]]:
    """What each model waits on before it is analysed: its nearest analysed ancestors, and any
    analysed model writing a relation it reads (a binding the graph did not draw), so what it
    is given as schema never depends on timing."""
    from splice.graph.relations import parse_relation

    wanted = set(ids)
    writers: dict[Relation, str] = {}
    for nid in ids:
        node = graph.nodes[nid]
        for r in node.all_writes:
            writers.setdefault(r, nid)
        if node.meta.get("fqn"):
            writers.setdefault(parse_relation(str(node.meta["fqn"]), dialect=dialect), nid)
    out: dict[str, set[str]] = {}
    for nid in ids:
        deps = _model_ancestors(graph, nid, wanted)
        deps.update(w for r in graph.nodes[nid].reads if (w := writers.get(r)) is not None)
        deps.discard(nid)
        out[nid] = deps
    return out


def _model_ancestors(graph: Graph, nid: str, wanted: set[str]) -> set[str]:
    """Nearest analysed ancestors, looking through sources, externals and bindings."""
    found: set[str] = set()
    stack = list(graph.parents(nid))
    seen: set[str] = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        if p in wanted:
            found.add(p)
        elif (
            graph.nodes[p].kind in ("source", "external")
            or graph.nodes[p].materialization == "ephemeral"
        ):
            stack.extend(graph.parents(p))
    return found


def _warehouse_memo_key(ws: Workspace) -> tuple[str, str, str]:
    path = ws.warehouse_path
    return (str(path), _warehouse_stamp(path) if path.exists() else "-", ws.dialect)


def _remember_lineage(key: Any, result: WorkspaceLineage) -> None:
    with _WAREHOUSE_LOCK:
        if len(_LINEAGE_MEMO) >= 4:
            _LINEAGE_MEMO.pop(next(iter(_LINEAGE_MEMO)))
        _LINEAGE_MEMO[key] = result


def workspace_lineage(
    ws: Workspace, *, workers: int | None = None, only: set[str] | None = None
) -> WorkspaceLineage:
    """Column lineage of every SQL model in the workspace (cached by content hash).

    ``only``: just these models (a review's changed models and what is downstream of them);
    what they read that is not among them takes its columns from the tools' metadata and the
    warehouse.  The whole workspace's lineage, when this process has it already, serves too."""
    from splice.lineage import lineage_key

    memo = getattr(ws, "_lineage_memo", None)
    if memo is not None:
        return memo
    t0 = time.perf_counter()
    graph = ws.graph()
    ws.open_state_for_caches()
    wh: dict[Relation, dict[str, str]] | None = None
    whole_key = None
    kept_entry: dict[str, Any] = {}
    fast_key: Any = None
    if ws.caching and only is None:  # the whole result, if nothing it rests on changed
        from splice.lineage import warm as lineage_warm

        wkey = _warehouse_memo_key(ws)
        fast_key = (ws.inputs_key(), wkey, RENDER_VERSION, ws.target)
        with _WAREHOUSE_LOCK:
            kept = _LINEAGE_MEMO.get(fast_key)
        if kept is not None:  # this process analysed the same inputs already (splice serve)
            again = WorkspaceLineage(kept.models)
            again.stats = {
                "models": len(kept.models),
                "rendered": 0,
                "analysed": 0,
                "cached": len(kept.models),
                "render_seconds": 0.0,
                "seconds": round(time.perf_counter() - t0, 3),
                "warm": True,
            }
            ws._lineage_memo = again  # type: ignore[attr-defined]
            return again
        wh = warehouse_columns(ws, stamp_key=wkey)
        whole_key = lineage_warm.whole_key(ws, RENDER_VERSION, wh)
        kept_entry = lineage_warm.slot(ws)
        hit = lineage_warm.lookup(kept_entry, whole_key)
        if hit is not None:
            warm = WorkspaceLineage(hit)
            warm.stats = {
                "models": len(hit),
                "rendered": 0,
                "analysed": 0,
                "cached": len(hit),
                "render_seconds": 0.0,
                "seconds": round(time.perf_counter() - t0, 3),
                "warm": True,
            }
            ws._lineage_memo = warm  # type: ignore[attr-defined]
            if not isinstance(wh, _Provisional):
                _remember_lineage(fast_key, warm)
            return warm
    models = [
        n.id
        for n in graph.nodes.values()
        if ((n.kind in ("model", "snapshot") and n.tool in ("dbt", "sqlmesh"))
            or (n.kind == "chart" and n.sql))  # a BI tool's chart: its query over its dataset
        and (only is None or n.id in only)
    ]  # fmt: skip
    render_stats: dict[str, Any] = {"rendered": 0}
    ws.report(f"rendering {len(models):,} models")
    rendered = rendered_sql(ws, graph, models, render_stats)
    t_render = time.perf_counter() - t0
    schema: dict[Relation, dict[str, str]] = {}
    if wh is None:
        wh = warehouse_columns(ws)
    for n in graph.nodes.values():
        if n.columns:
            for r in n.all_writes + (n.reads if n.kind in ("source", "external") else []):
                schema[r] = {c.lower(): t for c, t in n.columns.items()}
    for rel, cols in wh.items():
        if rel not in schema or not any(schema[rel].values()):
            schema[rel] = cols
    result = WorkspaceLineage()
    found: dict[str, ModelLineage] = {}
    keys: dict[str, str] = {}
    asked: dict[str, tuple[str, str, dict[str, Any], Relation | None]] = {}
    store: dict[str, object] = {}
    hits = 0
    # the last whole result: what an edit left alone is taken from it in one read
    before_keys: dict[str, str] = {}
    before: dict[str, ModelLineage] = {}
    if whole_key is not None:
        before_keys, before = lineage_warm.previous(kept_entry)
        del kept_entry

    def prepare(ids: list[str]) -> dict[str, Any]:
        """Each ready model's request (its schema from what is known now), or its lineage
        when it needs no analysis (no SQL, or cached)."""
        nonlocal hits
        out: dict[str, Any] = {}
        items: dict[str, tuple[str, str, dict[str, Any], Relation | None]] = {}
        for nid in ids:
            sql, dialect, reason = rendered[nid]
            node = graph.nodes[nid]
            if sql is None:
                out[nid] = ModelLineage.opaque(
                    reason or "no SQL", output=node.writes, dialect=dialect, reads=list(node.reads)
                )
                continue
            subset = {r: schema[r] for r in _reads_for_schema(graph, node, schema, ws.dialect)}
            nested = _nest(subset)
            items[nid] = asked[nid] = (sql, dialect, nested, node.writes)
            keys[nid] = lineage_key(
                sql,
                dialect,
                nested,
                default_catalog=ws.default_catalog,
                output=node.writes,
                identity_dialect=ws.dialect,
                extra=tool_versions(
                    node, None if node.kind == "chart" else ws.provider(node.project)
                ),
            )
        for nid in list(items):
            node = graph.nodes[nid]
            if (
                before_keys.get(nid) == keys[nid]
                and nid in before
                and not node.meta.get("tool_columns")
            ):
                out[nid] = before.pop(nid)
                del items[nid]
                hits += 1
        cached = ws.state.cache_get_many(LINEAGE_KIND, [keys[n] for n in items])
        for nid, (sql, d, sch, o) in items.items():
            if keys[nid] in cached:
                out[nid] = ModelLineage.from_dict(cached[keys[nid]])  # type: ignore[arg-type]
                hits += 1
            else:
                out[nid] = LineageRequest(sql, dialect=d, schema=sch, output=o,
                                          default_catalog=ws.default_catalog,
                                          # each model parses in its own dialect; names
                                          # follow the workspace's
                                          identity_dialect=ws.dialect)  # fmt: skip
        return out

    def finish(nid: str, ml: ModelLineage, fresh: bool) -> None:
        node = graph.nodes[nid]
        if fresh:
            ml = _with_own_columns(ml, asked[nid], node, ws)
            store[keys[nid]] = ml.to_dict()
            if len(store) >= 200:  # kept as it goes: an interrupted first pass is not lost
                ws.state.cache_put_many(LINEAGE_KIND, dict(store))
                store.clear()
        found[nid] = ml
        if len(found) % 100 == 0 or len(found) == len(models):
            ws.report(f"column lineage: {len(found):,}/{len(models):,} models")
        if node.meta.get("tool_columns"):
            add_tool_columns(ml, node)
        # what this model produced becomes schema for the models that read it
        if ml.columns and node.writes is not None:
            known = schema.get(node.writes) or {}
            schema[node.writes] = {c: known.get(c, "") for c in ml.columns}
            fqn = node.meta.get("fqn")
            if fqn:
                from splice.graph.relations import parse_relation

                schema[parse_relation(str(fqn), dialect=ws.dialect)] = schema[node.writes]

    from splice.lineage.parallel import LineageRequest
    from splice.lineage.schedule import analyse_in_order

    analysed = analyse_in_order(
        graph.topological_order(models), _waits_on(graph, models, ws.dialect), prepare, finish,
        workers=workers,
    )  # fmt: skip
    if store:
        ws.state.cache_put_many(LINEAGE_KIND, store)
    result.models = {nid: found[nid] for nid in models if nid in found}
    result.stats = {
        "models": len(models),
        "rendered": render_stats["rendered"],
        "analysed": analysed,
        "cached": hits,
        "render_seconds": round(t_render, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if only is not None:
        return result  # a part: never kept as the workspace's lineage
    ws._lineage_memo = result  # type: ignore[attr-defined]
    if whole_key is not None:
        from splice.lineage import warm as lineage_warm

        lineage_warm.remember(ws, whole_key, result.models, keys)
        if not isinstance(wh, _Provisional):
            _remember_lineage(fast_key, result)
    return result


def _with_own_columns(
    ml: ModelLineage,
    item: tuple[str, str, dict[str, Any], Relation | None],
    node: Node,
    ws: Workspace,
) -> ModelLineage:
    """A model that reads its own table (``{{ this }}``, ``@this_model``) before that table's
    columns are known: its table has the columns the model outputs, so analyse it again with
    them (else ``select max(ts) from {{ this }}`` could not tell which ``ts`` it reads)."""
    from splice.graph.relations import parse_relation
    from splice.lineage import analyse_model

    sql, dialect, nested, out = item
    own_rels = list(node.all_writes)
    if node.meta.get("fqn"):  # SQLMesh renders @this_model as the model's name
        own_rels.append(parse_relation(str(node.meta["fqn"]), dialect=ws.dialect))
    unknown = [
        r
        for r in own_rels
        if r in ml.reads and not (nested.get(r.catalog or "") or {}).get(r.schema, {}).get(r.name)
    ]
    if not unknown or not ml.columns:
        return ml
    schema = _nest({r: {c: "" for c in ml.columns} for r in unknown})
    for cat, dbs in nested.items():
        for db, tables in dbs.items():
            for t, cols in tables.items():
                schema.setdefault(cat, {}).setdefault(db, {})[t] = cols
    return analyse_model(
        sql,
        dialect=dialect,
        schema=schema,
        output=out,
        default_catalog=ws.default_catalog,
        identity_dialect=ws.dialect,
    )


def _reads_for_schema(
    graph: Graph, node: Node, schema: dict[Relation, dict[str, str]], dialect: str = "duckdb"
) -> list[Relation]:
    # a model may read its own table (an incremental's {{ this }} / @this_model)
    rels: set[Relation] = set(node.reads) | set(node.all_writes)
    # dbt ephemeral parents are inlined: what they read is read here
    stack = [p for p in node.depends_on]
    while stack:
        p = graph.nodes.get(stack.pop())
        if p is None:
            continue
        rels.update(p.reads)
        if p.materialization == "ephemeral":
            stack.extend(p.depends_on)
    fqn = node.meta.get("fqn")
    if fqn:
        from splice.graph.relations import parse_relation

        rels.add(parse_relation(str(fqn), dialect=dialect))
        for d in node.depends_on:
            dn = graph.nodes.get(d)
            if dn is not None and dn.meta.get("fqn"):
                rels.add(parse_relation(str(dn.meta["fqn"]), dialect=dialect))
    return sorted(r for r in rels if r in schema)


def writers_map(graph: Graph, dialect: str = "duckdb") -> dict[str, str]:
    """relation key -> the node a walk continues into when a model reads that relation.

    ``dialect`` is the workspace's: relations are named by its case rules, whatever dialect a
    project's SQL is written in.

    Writers (models, seeds, ingestion jobs) own their relations.  A source or external model
    that is bound to exactly one writer in another project hands its relation to that writer,
    so a walk crosses the binding; an unbound or ambiguous one keeps it and the walk stops there.
    """
    from splice.graph.relations import parse_relation

    out: dict[str, str] = {}
    for n in graph.nodes.values():
        if n.kind in ("model", "seed", "snapshot", "ingestion"):
            for r in n.all_writes:
                out[r.key] = n.id
            if n.tool == "sqlmesh" and n.meta.get("fqn"):
                out.setdefault(parse_relation(str(n.meta["fqn"]), dialect=dialect).key, n.id)
    for n in graph.nodes.values():
        if n.kind not in ("source", "external"):
            continue
        bound = [p for p in graph.parents(n.id) if (e := graph.edge(p, n.id)) and e.binding]
        for r in n.reads:
            if len(bound) == 1:
                out.setdefault(r.key, bound[0])
            else:
                out.setdefault(r.key, n.id)
    return out
