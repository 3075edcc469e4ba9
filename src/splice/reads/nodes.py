"""Finding a node ("where is GMV?") and everything Splice knows about one node.

:func:`search_nodes` ranks nodes by how well a few words match their names, columns,
descriptions and the metrics declared on them; :func:`node_details` gathers one node's
record, columns (with types and descriptions), neighbours, project, domain and last build.
"""

from __future__ import annotations

import difflib
import re
from datetime import UTC
from typing import TYPE_CHECKING, Any

from splice.errors import InputError, NodeNotFoundError
from splice.graph.model import Graph, Node
from splice.state.sql import statement

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

_WORDS = re.compile(r"[a-z0-9]+")
#: Kinds that repeat their model's name (a test ``not_null_fct_gmv_qtd_gmv_usd``): ranked down.
CHECK_KINDS = ("test", "audit")
_OPEN_ANOMALIES = statement(
    "SELECT COUNT(*) FROM watch_anomalies a LEFT JOIN incidents i "
    "ON i.incident_id = a.incident_id WHERE a.target = ? AND a.node_id = ? "
    "AND COALESCE(i.status, a.status) = 'open'"
)


def words(text: str | None) -> list[str]:
    """Lower-case words of a name or sentence.

    >>> words("pricing:marts.agg_gmv_daily"), words("GMV in US dollars")
    (['pricing', 'marts', 'agg', 'gmv', 'daily'], ['gmv', 'in', 'us', 'dollars'])
    """
    return _WORDS.findall((text or "").lower())


def _name_score(token: str, name_words: list[str], name: str) -> float:
    if token in name_words:
        return 50.0
    if any(w.startswith(token) for w in name_words):
        return 35.0
    if token in name:
        return 25.0
    close = difflib.get_close_matches(token, name_words, n=1, cutoff=0.8) if len(token) > 3 else []
    if close:
        return 20.0 * difflib.SequenceMatcher(None, token, close[0]).ratio()
    return 0.0


def _score(
    node: Node, tokens: list[str], query: str, metrics: list[tuple[str, str]]
) -> tuple[float, list[str]]:
    """(score, what matched) of one node; 0 when some word of the query matches nothing."""
    name = node.name.lower()
    label = str(node.meta.get("label") or "")
    name_words = words(node.name) + words(label)
    id_words = words(node.project)
    desc = set(words(node.description))
    cols = {c: words(c) for c in node.columns}
    described = node.meta.get("column_descriptions") or {}
    assert isinstance(described, dict)
    total = 0.0
    matched: dict[str, set[str]] = {}
    if query in (name, label.lower(), name.rsplit(".", 1)[-1]):
        total += 100.0
        matched.setdefault("name", set())
    for t in tokens:
        s = _name_score(t, name_words, name)
        if s:
            matched.setdefault("name", set())
        elif t in id_words:
            s = 15.0
            matched.setdefault("project", set())
        hit_cols = sorted(c for c, w in cols.items() if t in w)
        near_cols = [] if hit_cols else sorted(c for c in cols if t in c.lower())
        col_desc = sorted(c for c, d in described.items() if t in words(str(d)))
        if hit_cols or near_cols:
            s += (20.0 if hit_cols else 12.0) + min(len(hit_cols or near_cols), 5)
            matched.setdefault("columns", set()).update(hit_cols or near_cols)
        elif col_desc:
            s += 8.0
            matched.setdefault("column descriptions", set()).update(col_desc)
        if t in desc:
            s += 10.0
            matched.setdefault("description", set())
        hit_metrics = [m for m, text in metrics if t in words(text)]
        if hit_metrics:
            s += 20.0
            matched.setdefault("metrics", set()).update(hit_metrics)
        if s == 0:
            return 0.0, []
        total += s
    if node.kind in CHECK_KINDS:
        total *= 0.3
    return total, [f"{k}: {', '.join(sorted(v))}" if v else k for k, v in matched.items()]


def search_nodes(
    ws: Workspace, query: str, *, kind: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Nodes matching ``query`` (every word must match), best first.

    A word scores most in a node's name (a whole word, then a prefix, then anywhere, then a
    close spelling), then in its columns, the metrics declared on it, its description and its
    columns' descriptions; tests and audits (which repeat their model's name) rank lower; and
    among equals the node where the matching chain starts (no matching node upstream of it:
    where GMV is computed, not every model that passes it on) comes first.
    """
    tokens = words(query)
    if not tokens:
        raise InputError(
            f"search for {query!r}: give a word to look for.", fix="e.g. splice ls --search gmv"
        )
    if limit < 1:
        raise InputError(f"limit must be 1 or more, not {limit}.", fix="pass a positive limit")
    g = ws.graph()
    kinds = sorted({n.kind for n in g.nodes.values()})
    if kind is not None and kind not in kinds:
        raise InputError(f"no node kind {kind!r}.", fix=f"use one of: {', '.join(kinds)}")
    metrics: dict[str, list[tuple[str, str]]] = {}
    from splice.semantic.declared import declaring_projects, metric_node

    for m in ws.config.metrics:
        # a semantic metric is found where it is declared: the dbt project's metric node
        on = metric_node(g, m) if m.semantic is None else next(
            (f"{p}:metric:{m.semantic}" for p in declaring_projects(g, m)), None)  # fmt: skip
        metrics.setdefault(on or "", []).append((m.name, f"{m.name} {m.description or ''}"))
    scored: dict[str, tuple[float, list[str]]] = {}
    whole = query.strip().lower()
    for n in g.nodes.values():
        if kind is not None and n.kind != kind:
            continue
        s, why = _score(n, tokens, whole, metrics.get(n.id, []))
        if s > 0:
            scored[n.id] = (s, why)
    data_nodes = {i for i in scored if g.nodes[i].kind not in CHECK_KINDS}
    # a matching node above each node: one pass in dependency order (not a walk per match,
    # which takes most of a second when a word matches every model of a large workspace)
    above: dict[str, bool] = {}
    if data_nodes:
        for nid in g.topological_order():
            above[nid] = any(p in data_nodes or above.get(p, False) for p in g.parents(nid))
    out: list[dict[str, Any]] = []
    for nid, (s, why) in scored.items():
        n = g.nodes[nid]
        starts = nid in data_nodes and not above.get(nid, False)
        if starts:
            s += 8.0
        out.append(
            {
                "id": nid,
                "name": n.name,
                "kind": n.kind,
                "project": n.project,
                "tool": n.tool,
                "relation": n.writes.key if n.writes else None,
                "description": n.description,
                "score": round(s, 1),
                "matched": why,
                "starts_here": starts,
            }
        )
    out.sort(key=lambda r: (-r["score"], r["kind"] in CHECK_KINDS, r["id"]))
    return out[:limit]


# -- one node ---------------------------------------------------------------------------------
def find_node(g: Graph, ref: str) -> Node:
    """A node by id (any case), by a unique name, or by the relation it writes."""
    if ref in g.nodes:
        return g.nodes[ref]
    low = ref.strip().lower()
    for attempt in (
        [n for n in g.nodes.values() if n.id.lower() == low],
        [n for n in g.nodes.values() if n.name.lower() == low and n.kind not in CHECK_KINDS],
        [n for n in g.nodes.values() if any(r.key.lower() == low for r in n.all_writes)],
        [n for n in g.nodes.values()
         if any(r.key.lower().endswith("." + low) for r in n.all_writes)],
    ):  # fmt: skip
        if len(attempt) == 1:
            return attempt[0]
        if len(attempt) > 1:
            raise NodeNotFoundError(
                f"{ref!r} names {len(attempt)} nodes: {', '.join(sorted(n.id for n in attempt))}.",
                fix="use the full id project:node",
            )
    from splice.graph.suggest import closest

    near = closest(ref, list(g.nodes))
    raise NodeNotFoundError(
        f"no node {ref!r}." + (f" Closest: {', '.join(near)}." if near else ""),
        fix="use an id as `splice ls` prints it, or find one with `splice ls --search WORDS`",
    )


def _ms_iso(ms: int) -> str:
    """An interval bound as SQLMesh keeps it (ms since 1970, UTC) as ISO text.

    >>> _ms_iso(1782864000000)
    '2026-07-01T00:00:00+00:00'
    """
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def _warehouse_types(ws: Workspace, n: Node) -> dict[str, str]:
    """Column types the warehouse knows for a node whose tool leaves some untyped (a dbt model
    without ``data_type``); empty when every column is typed or the warehouse can't be read."""
    if not n.columns or all(n.columns.values()):
        return {}
    from splice.errors import WarehouseError
    from splice.watch.metrics import ColumnTypes

    try:
        return ColumnTypes(ws).of(n)
    except WarehouseError:
        return {}


def _neighbour(g: Graph, nid: str, up: str, down: str) -> dict[str, Any]:
    n = g.nodes[nid]
    e = g.edge(up, down)
    return {
        "id": nid,
        "kind": n.kind,
        "project": n.project,
        "evidence": e.evidence if e else None,
        "relation": e.relation.key if e and e.relation else None,
    }


def node_details(ws: Workspace, node_id: str) -> dict[str, Any]:
    """Everything Splice knows about one node: its record (as ``splice ls --json``), its
    columns with types and descriptions, parents and children (with the binding evidence of
    edges across projects), its project and tool, relation, owner and domain, the checks on
    it, the metrics declared on it, and its last build in the target (from the evidence)."""
    from splice.approvals.domains import domain_for, owners_of
    from splice.graph.listing import node_record
    from splice.reads import iso_time, state_conn

    g = ws.graph()
    n = find_node(g, node_id)
    rec = node_record(n, g)
    described = n.meta.get("column_descriptions") or {}
    assert isinstance(described, dict)
    rec["description"] = n.description
    typed = _warehouse_types(ws, n)
    rec["columns"] = [
        {
            "name": c,
            "type": t or typed.get(c.lower()),
            "type_from": "tool" if t else ("warehouse" if typed.get(c.lower()) else None),
            "description": described.get(c),
        }
        for c, t in n.columns.items()
    ]
    rec["relation"] = n.writes.key if n.writes else (n.reads[0].key if len(n.reads) == 1 else None)
    rec["language"] = n.language
    rec["parents"] = [_neighbour(g, p, p, n.id) for p in sorted(g.parents(n.id))]
    rec["children"] = [_neighbour(g, c, n.id, c) for c in sorted(g.children(n.id))]
    rec["checks"] = sorted(c["id"] for c in rec["children"] if c["kind"] in CHECK_KINDS)
    proj = next((p for p in ws.config.projects if p.name == n.project), None)
    rec["project_info"] = (
        {"name": proj.name, "format": proj.format, "path": proj.path,
         "environment": ws.environment(proj.name)}
        if proj is not None
        else {"name": n.project, "format": n.project, "path": None, "environment": None}
    )  # fmt: skip
    if n.meta.get("orchestrator"):  # the job runs in Dagster: where, and its page there
        rec["orchestrator"] = dict(n.meta["orchestrator"])  # type: ignore[call-overload]
    d = domain_for(g, ws.config, n.id)
    rec["domain"] = (
        {"name": d.name, "owners": owners_of(d), "autonomy": d.autonomy} if d is not None else None
    )
    from splice.semantic.declared import metric_node

    rec["metrics"] = sorted(m.name for m in ws.config.metrics if metric_node(g, m) == n.id)
    rec["last_build"] = None
    rec["open_anomalies"] = 0
    conn = state_conn(ws)
    if conn is not None:
        from splice.plan.evidence import last_builds

        b = last_builds(ws.state, ws.target).get(n.id)
        if b is not None:
            rec["last_build"] = {
                "version": b.version,
                "run_id": b.run_id,
                "built_at": iso_time(b.built_at),
                "reason": b.reason,
                "rows": b.rows,
                "intervals": [[_ms_iso(a), _ms_iso(z)] for a, z in (b.intervals or [])],
            }
        row = conn.execute(_OPEN_ANOMALIES, (ws.target, n.id)).fetchone()
        rec["open_anomalies"] = int(row[0])
    rec["target"] = ws.target
    return rec
