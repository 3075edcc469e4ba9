"""Segments: maximal connected runs of nodes to build, one project each, in run order.

Two nodes to build of the same project share a segment when one is the nearest node to build
upstream of the other (directly, or through nodes that are not built, such as a source), or
when they read the same source of their project, and putting them together makes no cycle
between segments (a path that leaves the project and comes back, e.g. dbt -> SQLMesh -> dbt,
splits the project into a segment before and one after).  A segment depends on every segment
holding a node to build upstream of one of its nodes; independent segments may run in
parallel.

Then segments of one project that depend on exactly the same segments are merged: they would
start at the same moment anyway, and one executor invocation (one ``dbt build``, one SQLMesh
run) builds them with the tool's own parallelism instead of one invocation each.  Such a merge
never makes a cycle and never makes anything wait longer.  Segment ids (``s1``, ``s2``, ...) follow run order: a topological order of the
segments, ties broken by the position of their first node in the graph's order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from splice.graph.model import Graph
from splice.plan.model import Segment


def make_segments(
    graph: Graph,
    build: list[str],
    *,
    format_of: Callable[[str], str],
    environment_of: Callable[[str], str],
) -> list[Segment]:
    """Segments for the nodes in ``build`` (in the graph's topological order)."""
    building = set(build)
    order = [n for n in graph.topological_order() if n in building]
    position = {n: i for i, n in enumerate(order)}

    # nearest nodes to build upstream of each node (through nodes that are not built), by one
    # pass over the graph's order up to the last node to build
    near: dict[str, frozenset[str]] = {}
    empty: frozenset[str] = frozenset()
    last = order[-1] if order else None
    for nid in graph.topological_order() if order else []:
        parents = graph.parents(nid)
        if not parents:
            near[nid] = empty
        elif len(parents) == 1:
            (p,) = parents
            near[nid] = frozenset((p,)) if p in building else near.get(p, empty)
        else:
            acc: set[str] = set()
            for p in parents:
                if p in building:
                    acc.add(p)
                else:
                    acc |= near.get(p, empty)
            near[nid] = frozenset(acc)
        if nid == last:
            break

    hidden = _hidden_ancestors(graph, building)

    def clash(nodes: set[str]) -> bool:
        """Would one invocation of the tool hold a node and an ancestor it cannot order?"""
        return any(hidden.get(x, empty) & nodes for x in nodes)

    seg_of: dict[str, int] = {}
    members: list[list[str]] = []
    project: list[str] = []
    deps: list[set[int]] = []
    anc: list[set[int]] = []  # every segment a segment depends on, transitively
    claimed: dict[str, int] = {}  # a source (not built) -> the segment of its readers

    def through_other(a: int, b: int, inside: set[int]) -> bool:
        """Is there a path between segments a and b through a segment outside ``inside``?"""
        return any(
            x not in inside and ((x in anc[a] and b in anc[x]) or (x in anc[b] and a in anc[x]))
            for x in range(len(members))
            if members[x]
        )

    def merge(keep: int, other: int) -> None:
        for moved in members[other]:
            seg_of[moved] = keep
        members[keep].extend(members[other])
        members[other] = []
        deps[keep] = (deps[keep] | deps[other]) - {keep, other}
        anc[keep] = (anc[keep] | anc[other]) - {keep, other}
        deps[other], anc[other] = set(), set()
        for x in range(len(members)):
            if not members[x] or x == keep:
                continue
            if other in deps[x]:
                deps[x].discard(other)
                deps[x].add(keep)
            if other in anc[x] or keep in anc[x]:
                anc[x].discard(other)
                anc[x] |= ({keep} | anc[keep]) - {x}
        for src, seg in claimed.items():
            if seg == other:
                claimed[src] = keep

    for nid in order:
        node = graph.nodes[nid]
        ups = near.get(nid, empty)
        dep_segs = {seg_of[u] for u in ups if u in seg_of}
        shared = [
            p
            for p in graph.parents(nid)
            if p not in building
            and graph.nodes[p].project == node.project
            and graph.nodes[p].kind in ("source", "external")
        ]
        candidates = sorted(
            {s for s in dep_segs if project[s] == node.project}
            | {claimed[p] for p in shared if p in claimed},
            key=lambda s: position[members[s][0]],
        )
        joined: list[int] = []
        for c in candidates:
            trial = set(joined) | {c}
            if any(k in anc[d] for d in dep_segs - trial for k in trial):
                continue  # some other segment this node needs depends on it: a cycle
            if any(through_other(c, k, trial) for k in joined):
                continue
            if hidden and clash({nid}.union(*(members[k] for k in trial))):
                continue  # an edge the tool does not know: Splice orders them, in two segments
            joined.append(c)
        if joined:
            chosen = joined[0]
            for other in joined[1:]:
                merge(chosen, other)
            dep_segs = {seg_of[u] for u in ups if u in seg_of}
        else:
            chosen = len(members)
            members.append([])
            project.append(node.project)
            deps.append(set())
            anc.append(set())
        members[chosen].append(nid)
        seg_of[nid] = chosen
        new_deps = dep_segs - {chosen}
        if new_deps:
            deps[chosen] |= new_deps
            gained = set(new_deps)
            for d in new_deps:
                gained |= anc[d]
            gained.discard(chosen)
            anc[chosen] |= gained
            for x in range(len(members)):
                if members[x] and chosen in anc[x]:
                    anc[x] |= gained - {x}
        for p in shared:
            claimed.setdefault(p, chosen)

    # same-project segments with the same dependencies would run side by side anyway: one
    # executor invocation builds them (the tool parallelises inside it), nothing waits longer
    merged_any = True
    while merged_any:
        merged_any = False
        groups: dict[tuple[str, frozenset[int]], list[int]] = {}
        for x in range(len(members)):
            if members[x]:
                groups.setdefault((project[x], frozenset(deps[x])), []).append(x)
        for same in groups.values():
            if len(same) > 1:
                others = [o for o in same[1:]
                          if not (hidden and clash(set(members[same[0]]) | set(members[o])))]  # fmt: skip
                if not others:
                    continue
                for other in others:
                    merge(same[0], other)
                merged_any = True
                break

    live = [x for x in range(len(members)) if members[x]]
    # run order: topological over segments, ties by their first node's position
    indeg = {x: len(deps[x]) for x in live}
    children: dict[int, set[int]] = {x: set() for x in live}
    for x in live:
        for d in deps[x]:
            children[d].add(x)
    first = {x: min(position[m] for m in members[x]) for x in live}
    heap = [(first[x], x) for x in live if indeg[x] == 0]
    heapq.heapify(heap)
    run: list[int] = []
    while heap:
        _, s = heapq.heappop(heap)
        run.append(s)
        for c in children[s]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, (first[c], c))
    if len(run) != len(live):  # cannot happen (no merge makes a cycle); stay total
        run += [x for x in live if x not in set(run)]
    name = {s: f"s{i + 1}" for i, s in enumerate(run)}
    return [
        Segment(
            id=name[s],
            project=project[s],
            format=format_of(project[s]),
            environment=environment_of(project[s]),
            node_ids=sorted(members[s], key=position.__getitem__),
            depends_on=sorted((name[d] for d in deps[s]), key=lambda x: int(x[1:])),
        )
        for s in run
    ]


def _hidden_ancestors(graph: Graph, building: set[str]) -> dict[str, frozenset[str]]:
    """For each node to build: the nodes to build upstream of it that its tool cannot order
    before it, because every path between them crosses an edge the tool does not know (a
    binding inside one project: a dbt source over the project's own seed). Such pairs never
    share a segment, so Splice runs them one after the other. Empty when no binding joins two
    nodes of one project (the usual case: nothing is computed)."""
    blind = {
        (e.upstream, e.downstream)
        for e in graph.edges
        if e.binding and graph.nodes[e.upstream].project == graph.nodes[e.downstream].project
    }
    if not blind:
        return {}
    tool_up: dict[str, frozenset[str]] = {}
    all_up: dict[str, frozenset[str]] = {}
    out: dict[str, frozenset[str]] = {}
    for nid in graph.topological_order():
        t: set[str] = set()
        a: set[str] = set()
        for p in graph.parents(nid):
            mine = {p} if p in building else set()
            a |= mine | all_up.get(p, frozenset())
            e = graph.edge(p, nid)
            if e is not None and not e.binding:  # an edge the tool knows and orders itself
                t |= mine | tool_up.get(p, frozenset())
        tool_up[nid], all_up[nid] = frozenset(t), frozenset(a)
        if nid in building and a - t:
            out[nid] = frozenset(a - t)
    return out
