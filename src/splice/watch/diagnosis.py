"""The diagnosis of an incident: where it starts, why, the evidence, the blast radius, the scope.

- **origin**: among the incident's anomalous nodes, the one with no anomalous node upstream of
  it (walking the graph across projects).  Its anomalous columns are followed upstream through
  column lineage to the relation and the ingestion job that feed them;
- **path**: the column lineage from the number people watch (a declared metric downstream of
  the origin, else the most downstream anomalous measure) back to the origin and its source;
- **fault** (:mod:`splice.watch.cause`): the fault classified (stopped moving, late by N,
  inverted, unit change, duplicated load, late rows, missing rows, failed audit...) with its
  numbers; the intervals it covers join the scope;
- **cause**: the fault in words, then the source's own records
  (:mod:`splice.watch.source_evidence`): the load that wrote the bad rows and its status, and
  the payload's as-of dates;
- **evidence**: per metric and detector, how many series, which intervals, the values against
  their baseline and the detector's reason;
- **blast radius** (:mod:`splice.watch.blast`): every node downstream of the origin in every
  project, the dashboards that read them, the declared metrics on them, and the environments
  that reprocess if the intervals are restated;
- **scope**: the origin's anomalous intervals, checked against the source's stale days (the
  narrowest range the evidence supports), from where the detectors say the fault started; then
  the damage per node downstream and the intervals blocking audits kept from being built
  (:mod:`splice.watch.scope`); for a changed join key, the rows of the models joining it that
  no longer find their partner (:mod:`splice.watch.scope_joins`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph
from splice.watch.blast import blast_radius
from splice.watch.damage import SOURCE_KINDS, consecutive_ranges, origin_time_column

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

DETECTOR_WORDS = {
    "stopped_moving": "stopped moving",
    "spike": "spiked",
    "level_shift": "shifted level",
    "jump": "jumped",
    "volume_drop": "lost rows",
    "volume_jump": "gained rows",
    "missing": "is missing intervals",
    "null_rate_rise": "has more nulls",
    "duplicates": "has duplicates",
    "distinct_change": "changed its distinct values",
    "late_rows": "missed rows that arrived late",
    "restated": "changed values it had published",
    "failing_check": "failed a check in every run",
    "slice_drop": "lost a slice of its rows",
    "domain_change": "changed the values of a key",
    "coverage_drop": "lost join partners",
}
#: Which detectors say most about a cause, when an origin has several.
DETECTOR_WEIGHT = {"stopped_moving": 3, "level_shift": 2, "missing": 2, "volume_drop": 2,
                   "domain_change": 3, "slice_drop": 2, "coverage_drop": 2}  # fmt: skip


def origin_nodes(graph: Graph, nodes: set[str]) -> list[str]:
    """The anomalous nodes with no anomalous node upstream of them.

    >>> from splice.graph.model import Graph, Node, Edge
    >>> g = Graph()
    >>> for n in ("p:a", "p:b", "p:c"):
    ...     g.add_node(Node(n, "p", n[2:], "model", "sqlmesh"))
    >>> g.add_edge(Edge("p:a", "p:b")); g.add_edge(Edge("p:b", "p:c"))
    >>> origin_nodes(g, {"p:b", "p:c"})
    ['p:b']
    """
    return sorted(n for n in nodes if not (graph.ancestors(n) & (nodes - {n})))


def measure_columns(ws: Workspace, graph: Graph) -> dict[str, list[str]]:
    """metric (measure) name -> the columns it reads."""
    from sqlglot import exp

    from splice.watch.metrics import watch_specs

    out: dict[str, list[str]] = {}
    for spec in watch_specs(ws, graph):
        for m in spec.measures:
            cols = [m.column] if m.column else []
            if not cols:
                cols = sorted({c.name.lower() for c in m.expr.find_all(exp.Column)})
            out[m.name] = cols
    return out


def _evidence(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for a in anomalies:
        groups[(a["node_id"], a["metric"], a["detector"])].append(a)
    out: list[dict[str, Any]] = []
    for (node, metric, detector), items in groups.items():
        items.sort(key=lambda a: (a["interval"], -(a["score"] or 0)))
        worst = max(items, key=lambda a: a["score"] or 0)
        out.append(
            {
                "node": node,
                "metric": metric,
                "detector": detector,
                "series": len({str(a["dims"]) for a in items}),
                "intervals": sorted({a["interval"].isoformat() for a in items}),
                "example": {
                    "series": ", ".join(f"{k}={v}" for k, v in worst["dims"].items()) or "(all)",
                    "interval": worst["interval"].isoformat(),
                    "value": worst["value"],
                    "expected": worst["expected"],
                    "reason": worst["reason"],
                },
            }
        )
    out.sort(key=lambda e: (str(e["intervals"][0]), str(e["node"]), str(e["metric"]),
                            str(e["detector"])))  # fmt: skip
    return out


def _path(
    ws: Workspace, graph: Graph, start: str, origin: str, origin_cols: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Direct column lineage from ``start`` (node.column) to the origin, then to its sources.

    Returns (path, sources): path steps nearest first; sources are the ingestion / source hops
    feeding the origin's columns.
    """
    from splice.lineage.query import column_lineage

    res = column_lineage(ws, start, direction="upstream")
    # a model's own previous state (self_ref) is no step towards the origin
    direct = [
        h for h in res["upstream"] if h["kind"] == "direct" and h["node"] and not h.get("self_ref")
    ]
    by_via: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for h in direct:
        by_via[h["via"]].append(h)
    start_node = res["node"]
    start_key = f"{start_node}.{res['column']}"
    steps = [{"node": start_node, "column": res["column"], "across_binding": False}]
    wanted = graph.ancestors(start_node) & (graph.descendants(origin) | {origin})
    sources_kinds = ("ingestion", "source", "external")
    current = start_key
    if start_node != origin:
        seen = {current}
        while True:
            nxt = [h for h in by_via.get(current, []) if h["node"] in wanted]
            if not nxt:
                break
            nxt.sort(key=lambda h: (h["node"] != origin, h["column"] not in origin_cols,
                                    h["node"], h["column"]))  # fmt: skip
            h = nxt[0]
            current = f"{h['node']}.{h['column']}"
            if current in seen:
                break
            seen.add(current)
            steps.append({"node": h["node"], "column": h["column"],
                          "across_binding": h["across_binding"]})  # fmt: skip
            if h["node"] == origin:
                break
    sources: list[dict[str, Any]] = []
    if steps[-1]["node"] == origin:
        origin_keys = [current] + [
            f"{origin}.{c}" for c in origin_cols if f"{origin}.{c}" != current
        ]
        # the start's walk reaches the origin's columns through their hops
        feed = [h for k in origin_keys for h in by_via.get(k, [])] if start_node != origin else []
        if not feed:
            for k in origin_keys:
                sub = column_lineage(ws, k, direction="upstream", depth=1)
                feed += [
                    h
                    for h in sub["upstream"]
                    if h["kind"] == "direct" and h["node"] and not h.get("self_ref")
                ]
        for h in feed:
            n = graph.nodes.get(h["node"])
            if n is not None and n.kind in sources_kinds:
                rec = {"node": h["node"], "column": h["column"], "relation": h["relation"],
                       "across_binding": h["across_binding"]}  # fmt: skip
                if rec not in sources:
                    sources.append(rec)
        if sources:
            s = sources[0]
            steps.append({"node": s["node"], "column": s["column"],
                          "across_binding": s["across_binding"], "relation": s["relation"]})  # fmt: skip
    return steps, sources


def loaded_by(graph: Graph, origin: str, columns: list[str]) -> list[dict[str, Any]]:
    """When the incident starts at a relation an ingestion job loads (a source watched as it
    lands, before any model reads it): that job, as the diagnosis' source hop.

    >>> from splice.graph.model import Graph, Node, Edge, Relation
    >>> g = Graph()
    >>> rel = Relation("w", "raw", "fx")
    >>> g.add_node(Node("ingestion:feed", "ingestion", "feed", "ingestion", "dlt", writes=rel))
    >>> g.add_node(Node("p:raw.fx", "p", "raw.fx", "external", "sqlmesh", reads=[rel]))
    >>> g.add_edge(Edge("ingestion:feed", "p:raw.fx"))
    >>> [s["node"] for s in loaded_by(g, "p:raw.fx", ["rate"])]
    ['ingestion:feed']
    """
    node = graph.nodes.get(origin)
    if node is None or node.kind not in SOURCE_KINDS:
        return []
    mine = {r.key for r in [*node.reads, *node.all_writes]}
    out = []
    for pid in sorted(graph.ancestors(origin)):
        p = graph.nodes[pid]
        if p.kind != "ingestion":
            continue
        for r in p.all_writes:
            if r.key in mine:
                out.append({"node": pid, "column": columns[0] if columns else None,
                            "relation": r.key, "across_binding": False})  # fmt: skip
    return out


def time_column_of(ws: Workspace, graph: Graph, origin: str, source: str) -> str | None:
    """The source relation's column that the origin's time column comes from (a source's own
    time column is the one its declared metrics are measured by)."""
    from splice.lineage.query import column_lineage

    node = graph.nodes[origin]
    if node.kind in SOURCE_KINDS:
        return origin_time_column(ws, node)
    tc = node.time_column
    if not tc:
        return None
    try:
        res = column_lineage(ws, f"{origin}.{tc}", direction="upstream", depth=1)
    except Exception:  # noqa: BLE001 - no lineage for the time column: use its own name
        return tc.lower()
    for h in res["upstream"]:
        if h["node"] == source and h["kind"] == "direct":
            return str(h["column"])
    return tc.lower()


def _row_keys(graph: Graph, origin: str | None, columns: dict[str, str]) -> list[str]:
    """The source relation's columns that identify a row: the origin's keys found there."""
    from splice.watch.specs import node_keys

    if origin is None or origin not in graph.nodes:
        return []
    keys = node_keys(graph, graph.nodes[origin])
    for k in keys.unique:
        if k in columns:
            return [k]
    return list(keys.grain) if keys.grain and all(k in columns for k in keys.grain) else []


def diagnose(
    ws: Workspace,
    graph: Graph,
    anomalies: list[dict[str, Any]],
    *,
    siblings: set[str] | None = None,
) -> dict[str, Any]:
    """The diagnosis of one incident (a plain dict, stored as JSON with the incident).

    ``siblings``: where the causes of other incidents split from the same anomalies start
    (:mod:`splice.watch.independent`): their failed audits and what those blocked are theirs."""
    from splice.lineage.service import warehouse_columns
    from splice.warehouse.connect import connect
    from splice.watch.source_evidence import cause_sentence, source_evidence

    nodes = {a["node_id"] for a in anomalies if a["node_id"] in graph.nodes}
    origins = origin_nodes(graph, nodes)
    count = Counter(a["node_id"] for a in anomalies if a["node_id"] in origins)
    origin = max(origins, key=lambda n: (count[n], -len(graph.ancestors(n)))) if origins else None
    from splice.watch import change_cause

    changed = change_cause.change_origin(graph, anomalies)
    if changed is not None:  # values a code change rewrote: the incident starts at that node
        origins = sorted({changed, *(o for o in origins if o != changed)})
        origin = changed
    at_origin = [a for a in anomalies if a["node_id"] == origin]
    measure_cols = measure_columns(ws, graph)
    det: Counter[str] = Counter()
    for a in at_origin:
        det[a["detector"]] += DETECTOR_WEIGHT.get(a["detector"], 1)
    headline = det.most_common(1)[0][0] if det else None
    head_items = [a for a in at_origin if a["detector"] == headline]
    head_metric = (
        Counter(a["metric"] for a in head_items).most_common(1)[0][0] if head_items else None
    )
    origin_cols: list[str] = []
    for metric in [head_metric] + sorted({a["metric"] for a in at_origin}):
        for c in measure_cols.get(metric or "", []):
            if c not in origin_cols:
                origin_cols.append(c)

    # the days of runs that failed a check are no bad data of their own when the data says more
    scope_days = (
        sorted({a["interval"] for a in at_origin if a["detector"] != "failing_check"})
        or sorted({a["interval"] for a in at_origin})
        or sorted({a["interval"] for a in anomalies})
    )
    out: dict[str, Any] = {
        "origin": {
            "node": origin,
            "columns": origin_cols,
            "other_origins": [o for o in origins if o != origin],
            "why": "the earliest node upstream whose own monitors are anomalous on these intervals",
        },
        "evidence": _evidence(anomalies),
    }
    blast = blast_radius(ws, graph, origin) if origin else {}
    out["blast_radius"] = blast

    # the column path: from the watched number down to the origin and its source
    start = None
    for m in blast.get("metrics", []):
        cols = measure_cols.get(m["name"], [])
        if cols:
            start = f"{m['node']}.{cols[0]}"
            break
    if start is None and origin is not None:
        downstream = [n for n in nodes if n != origin]
        leaf = max(downstream, key=lambda n: len(graph.ancestors(n)), default=origin)
        cols = [
            c for a in anomalies if a["node_id"] == leaf for c in measure_cols.get(a["metric"], [])
        ]
        start = (
            f"{leaf}.{cols[0]}" if cols else (f"{origin}.{origin_cols[0]}" if origin_cols else None)
        )
    path: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    if start and origin:
        try:
            path, sources = _path(ws, graph, start, origin, origin_cols)
        except Exception as e:  # noqa: BLE001 - lineage is best effort here; say why it is missing
            out["path_error"] = str(e).splitlines()[0]
    out["path"] = path
    if not sources and origin is not None:
        sources = loaded_by(graph, origin, origin_cols)

    # the cause outside the project, from the source's own records
    cause = None
    source_ev: dict[str, Any] | None = None
    if sources and scope_days:
        src = graph.nodes[sources[0]["node"]]
        rel = next((r for r in src.all_writes if r.key == sources[0]["relation"]), None)
        cols_by_rel = warehouse_columns(ws)
        if rel is not None and rel in cols_by_rel:
            time_col = time_column_of(ws, graph, origin or "", src.id)
            if time_col and time_col in cols_by_rel[rel]:
                keys = _row_keys(graph, origin, cols_by_rel[rel])
                with connect(ws, "incident diagnosis") as con:
                    source_ev = source_evidence(
                        con, src, rel, cols_by_rel[rel], time_col, scope_days, ws.dialect, keys
                    )
                cause = cause_sentence(source_ev, src.name)
    # the fault, classified with its numbers (splice.watch.cause); it may say more intervals
    from splice.watch.cause import cause_text, classify
    from splice.watch.cause_evidence import gather

    try:
        kw = gather(ws, graph, origin, at_origin, source_ev)
        if siblings and kw.get("checks"):
            kw["checks"] = [c for c in kw["checks"] if not set(c["of"]) <= siblings]
        fault = classify(at_origin, source_ev, **kw)
    except Exception as e:  # noqa: BLE001 - the diagnosis stands without a classified fault
        fault = {"class": "unknown", "words": f"the fault could not be classified ({e})",
                 "evidence": {}, "n": None, "classes": ["unknown"], "intervals": []}  # fmt: skip
    fault = _code_change(ws, graph, origin, anomalies, at_origin, fault)
    out["fault"] = fault
    if fault["class"] == "code_change":  # the intervals rewritten are downstream's, not its
        fault = dict(fault, intervals=[])
    scope_days = sorted(set(scope_days) | {date.fromisoformat(d) for d in fault["intervals"]})
    out["source"] = source_ev
    # scope: the origin's intervals; narrowed to the source's stale days when they say more
    stale = sorted(
        {
            date.fromisoformat(d["interval"])
            for p in (source_ev or {}).get("payload_dates", [])
            for d in p["days"]
            if d["stale"]
        }  # fmt: skip
    )
    confirmed = bool(stale) and set(stale) <= set(scope_days)
    if confirmed:
        scope_days = [d for d in scope_days if d in set(stale)]
    ranges = consecutive_ranges(scope_days, gap=1 if confirmed else 3)
    out["scope"] = {
        "start": scope_days[0].isoformat() if scope_days else None,
        "end": scope_days[-1].isoformat() if scope_days else None,
        "intervals": [d.isoformat() for d in scope_days],
        "ranges": [[a.isoformat(), b.isoformat()] for a, b in ranges],
        "why": (
            "the origin's anomalous intervals, confirmed by the source's stale as-of dates"
            if confirmed
            else "the origin's anomalous intervals"
        ),
    }
    if origin is not None:
        _extend_scope(
            ws, graph, origin, at_origin, out["scope"], gap=1 if confirmed else 3, fault=fault
        )
        if change_cause.restated(anomalies):
            change_cause.change_scope(out["scope"], anomalies, origin)
        if siblings and out["scope"].get("blocked"):
            _sibling_blocked(out["scope"], siblings)
    if siblings:  # kept, so that the scope derived again later leaves them out as well
        out["siblings"] = sorted(siblings)
    out["cause"] = cause_text(fault, cause) or (
        f"{graph.nodes[origin].name} {DETECTOR_WORDS.get(headline or '', 'is anomalous')}; "
        "no record outside the project explains it"
        if origin
        else "unknown"
    )
    out["headline"] = {"detector": headline, "metric": head_metric,
                       "series": len({str(a["dims"]) for a in head_items})}  # fmt: skip
    out["title"] = _title(graph, origin, headline, head_items, scope_days, fault)
    return out


def _code_change(ws: Workspace, graph: Graph, origin: str | None, anomalies: list[dict[str, Any]],
                 at_origin: list[dict[str, Any]], fault: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The fault as a change inside the project (:mod:`splice.watch.change_cause`) when the
    evidence says so: values a code change rewrote, or, when nothing more specific names the
    fault, new code shipped in the run that first built the first anomalous interval."""
    from splice.watch import change_cause

    conn = ws.state.conn
    found = change_cause.restated_fault(conn, graph, anomalies)
    if found is None and origin is not None and fault["class"] in change_cause.WEAKER:
        days = sorted({a["interval"] for a in at_origin if a["detector"] != "restated"})
        try:
            shipped = change_cause.shipped_with(conn, ws.target, graph, origin, days[0]) if days \
                else []  # fmt: skip
        except Exception:  # noqa: BLE001 - no journal or evidence: the fault stands as it is
            shipped = []
        if shipped:
            found = change_cause.shipped_fault(conn, graph, shipped, days[0])
    if found is None:
        return fault
    others = [c for c in fault.get("classes") or [] if c not in ("unknown", "code_change")]
    if others:
        found["classes"] = ["code_change", *others]
        found["evidence"] = found["evidence"] | {"also": {fault["class"]: fault["evidence"]}}
    return found


def _sibling_blocked(scope: dict[str, Any], siblings: set[str]) -> None:
    """What another incident's failed audit blocked is this incident's damage only where this
    fault reached the audited node too: those intervals will read its bad values once built."""
    ours = {n["node"]: set(n.get("intervals") or []) for n in scope.get("nodes") or []}
    kept = []
    for b in scope["blocked"]:
        audited = b.get("audited_node")
        if audited not in siblings:
            kept.append(b)
        elif audited in ours and (b.get("full") or set(b.get("intervals") or []) & ours[audited]):
            days = sorted(set(b.get("intervals") or []) & ours[audited])
            kept.append(
                b
                | {
                    "intervals": days,
                    "why": f"{b.get('why')}; it will read this "
                    f"fault's values of {', '.join(sorted(ours[audited]))} once built",
                }
            )
    scope["blocked"] = kept


def _extend_scope(ws: Workspace, graph: Graph, origin: str, at_origin: list[dict[str, Any]],
                  scope: dict[str, Any], *, gap: int,
                  fault: dict[str, Any] | None = None) -> None:  # fmt: skip
    """The scope as the damage (:mod:`splice.watch.scope`): from where the fault started, per
    node downstream, and what blocking audits kept from being built; said why when it cannot."""
    from splice.watch.scope import extend_scope

    try:
        extend_scope(ws, graph, origin, at_origin, scope, gap=gap)
        from splice.watch.scope_joins import join_scope

        join_scope(ws, graph, origin, fault or {}, scope)
    except Exception as e:  # noqa: BLE001 - the origin's scope stands without it; say why
        scope["nodes_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__


def _title(
    graph: Graph, origin: str | None, headline: str | None, items: list[dict[str, Any]],
    days: list[date], fault: dict[str, Any] | None = None,
) -> str:  # fmt: skip
    from splice.watch.cause import title_words

    if origin is None:
        return "anomalies on nodes outside the graph"
    words = title_words(fault) or DETECTOR_WORDS.get(headline or "", "is anomalous")
    series = len({str(a["dims"]) for a in items})
    what = graph.nodes[origin].name
    dims = {k for a in items for k in a["dims"]}
    if series > 1 and dims:
        what += f" ({series} {'/'.join(sorted(dims))} values)"
    span = (
        days[0].isoformat()
        if days and days[0] == days[-1]
        else (f"{days[0].isoformat()}..{days[-1].isoformat()}" if days else "?")
    )
    run = ((fault or {}).get("evidence") or {}).get("run_id")
    if (fault or {}).get("class") == "code_change" and run:
        return f"{what} {words} in run {run}"  # a change ships in a run, not on a day
    return f"{what} {words} on {span}"
