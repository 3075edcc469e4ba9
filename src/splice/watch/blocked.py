"""Intervals missing downstream because a blocking audit stopped the runs (part of an
incident's scope, :mod:`splice.watch.scope`).

The run journal says which blocking audit (or test) failed last on the origin or a node below
it, in which run, and which nodes downstream that run skipped for it.  The warehouse says which
intervals they lack: each skipped node's time column comes (column lineage) from an input's;
the intervals that input has, up to the last the audited node holds, that the node does not.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph
from splice.warehouse.rows import date_literal, table
from splice.watch.damage import (
    Damage,
    ScopeWalk,
    cast_date,
    days_from,
    quoted_column,
    read_parents,
    restatable,
    span,
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def _days(walk: ScopeWalk, nid: str, column: str, lo: date | None, hi: date | None) -> set[date]:
    from splice.watch.specs import relation_of

    rel = relation_of(walk.graph.nodes[nid])
    if rel is None:
        return set()
    t = cast_date(quoted_column(column))
    q = exp.select(t).distinct().from_(table(rel, walk.dialect))
    conds = [c for c in (lo and t >= date_literal(lo), hi and t <= date_literal(hi)) if c]
    if conds:
        q = q.where(exp.and_(*conds))
    return set(days_from(walk.con, q, walk.dialect))


def _source(walk: ScopeWalk, nid: str, column: str) -> tuple[str, str] | None:
    """The input node and column ``nid.column`` is a copy of (column lineage)."""
    ml = walk.lineage.get(nid)
    col = ml.columns.get(column) if ml is not None else None
    for r in col.direct if col is not None else []:
        writer = walk.writers.get(r.relation.key)
        if writer and set(r.subtypes) <= {"IDENTITY"}:
            return writer, r.column.lower()
    return None


def _failed_audits(ws: Workspace) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    from splice.run.journal import Journal

    with Journal.for_workspace(ws) as j:
        last = j.last_outcomes(ws.target)
    failed = [
        (aid, ev)
        for aid, ev in sorted(last.items())
        if ev.kind == "check_finished"
        and ev.status in ("fail", "error")
        and ev.data.get("blocking") is not False
    ]
    return last, failed


def blocked_scope(
    ws: Workspace, graph: Graph, damage: list[Damage], start: date | None, con: Any
) -> list[dict[str, Any]]:
    """The intervals the latest runs did not build below a failed blocking audit.

    One record per skipped node: ``node``, ``intervals`` it lacks (empty and ``full`` when its
    intervals cannot be told), ``audit`` (name), ``audit_id``, ``audited_node``, ``run_id``,
    ``why``.
    """
    from splice.watch.blast import BUILT_KINDS

    if not damage:
        return []
    last, failed = _failed_audits(ws)
    if not failed:
        return []
    walk = ScopeWalk(ws, graph, con)
    origin = damage[0].node
    relevant = graph.descendants(origin) | {origin}
    known = {d.node: d.time_column for d in damage if d.time_column}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for aid, ev in failed:
        audit = graph.nodes.get(aid)
        name = audit.name if audit is not None else aid
        kind = audit.kind if audit is not None and audit.kind == "test" else "audit"
        of = list(ev.data.get("of") or (audit.depends_on if audit is not None else []))
        for m in [o for o in of if o in relevant and o in graph.nodes]:
            mn = graph.nodes[m]
            mtc = known.get(m) or (mn.time_column.lower() if mn.time_column else None)
            hi = max(_days(walk, m, mtc, start, None), default=None) if mtc else None
            # per node: its time column and the intervals it should have in [start, hi]
            expected: dict[str, tuple[str, set[date]]] = {}
            if mtc and hi is not None:
                expected[m] = (mtc, _days(walk, m, mtc, start, hi))
            for d in graph.topological_order(graph.descendants(m)):
                dn, ev_d = graph.nodes[d], last.get(d)
                if d in seen or dn.kind not in BUILT_KINDS or ev_d is None:
                    continue
                if ev_d.status != "skipped" or (
                    m not in str(ev_d.data.get("skipped_because") or "")
                    and ev_d.run_id != ev.run_id
                ):
                    continue
                rec: dict[str, Any] = {
                    "node": d, "intervals": [], "audit": name, "audit_id": aid, "kind": kind,
                    "audited_node": m, "run_id": ev.run_id, "full": True,
                    "why": f"run {ev.run_id} skipped it: {kind} {name} on {mn.name} failed",
                }  # fmt: skip
                tc = dn.time_column.lower() if dn.time_column else None
                if tc is None:  # a copy of a blocked input's time column
                    for p in sorted(read_parents(graph, d)):
                        refs = walk.refs(d, p, expected[p][0]) if p in expected else {}
                        ident = sorted(c for c, how in refs.items() if how == "identity")
                        if ident:
                            tc = ident[0]
                            break
                src = _source(walk, d, tc) if tc else None
                if tc and hi is not None and src is not None:
                    p, pcol = src
                    want = expected[p][1] if p in expected else _days(walk, p, pcol, start, hi)
                    missing = sorted(want - _days(walk, d, tc, start, hi))
                    expected[d] = (tc, want)
                    if not missing:
                        continue
                    rec.update(time_column=tc, intervals=[x.isoformat() for x in missing],
                               full=not restatable(dn),
                               why=f"{rec['why']}; it lacks {span(missing)} of "
                                   f"{graph.nodes[p].name}'s {pcol}s")  # fmt: skip
                seen.add(d)
                out.append(rec)
    return out


def blocked_words(blocked: list[dict[str, Any]]) -> str | None:
    """One sentence for the diagnosis: what the failed audits kept from being built.

    >>> blocked_words([{"node": "p:m", "intervals": ["2026-09-28"], "audit": "a",
    ...                 "audited_node": "p:x", "run_id": "r1"}])
    'not built because audit a on p:x failed (run r1): p:m 2026-09-28'
    """
    if not blocked:
        return None
    parts: dict[tuple[str, str, str, str], list[str]] = {}
    for b in blocked:
        days = [date.fromisoformat(x) for x in b.get("intervals") or []]
        what = f"{b['node']} {span(days)}" if days else f"{b['node']} (whole)"
        key = (b.get("kind") or "audit", b["audit"], b["audited_node"], b["run_id"])
        parts.setdefault(key, []).append(what)
    return "; ".join(
        f"not built because {k} {a} on {m} failed (run {r}): {', '.join(nodes)}"
        for (k, a, m, r), nodes in parts.items()
    )
