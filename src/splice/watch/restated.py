"""Values a code change rewrote: measured again, compared with what was measured before.

A watch measures each spec's new intervals only; the intervals it measured before are kept as
they were.  When the run journal's evidence says a node was built with new code since a spec
was last stored (:mod:`splice.watch.changes`: the spec's node or any node upstream of it), the
watch measures that spec over every interval it has stored and compares:

- an interval whose value changed (a row count, a sum, a column's checksum) is a
  ``restated`` anomaly: a number already published is no longer what it was, and the change
  that did it is named (its node, its run, the components of its code that changed);
- a spec without a time column is compared with its previous measurement as a whole: a seed
  (its rows are its code), or a table that held still until now (a table whose rows change with
  every run says nothing about its code).

The new values replace the stored ones (the history is what the new code says), and the new
intervals are judged against them.  Nothing is compared when no code changed: the intervals
of a clean run-on are never measured twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from splice.graph.model import Graph
from splice.watch import history as hist
from splice.watch.changes import CodeChange, code_changes, last_measured, run_words
from splice.watch.grid import as_date, measured_float
from splice.watch.results import Anomaly

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

DETECTOR = "restated"
#: Values closer than this (relative) are the same value measured twice.
TOLERANCE = 1e-9


def same(a: float | None, b: float | None) -> bool:
    """
    >>> same(1.0, 1.0 + 1e-12), same(1.0, 1.1), same(None, None), same(None, 0.0)
    (True, False, True, False)
    """
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


@dataclass
class Restated:
    """One spec's comparison: the anomalies, the values to store, the rows left to judge."""

    anomalies: list[tuple[Anomaly, tuple[str, str]]] = field(default_factory=list)
    points: list[tuple[tuple[str, str], str, float]] = field(default_factory=list)
    overrides: dict[tuple[int, int], float] = field(default_factory=dict)  # (sid, epoch day)


def _lead(changes: list[CodeChange], graph: Graph) -> CodeChange:
    """The change the others are downstream of (the first when none is)."""
    for c in changes:
        up = graph.ancestors(c.node_id) if c.node_id in graph.nodes else set()
        if not any(o.node_id in up for o in changes if o is not c):
            return c
    return changes[0]


class Restatements:
    """The specs a code change may have rewritten, and their comparison."""

    def __init__(self, ws: Workspace, graph: Graph, conn: Any) -> None:
        self.ws, self.graph, self.conn, self.target = ws, graph, conn, ws.target
        self.measured = last_measured(conn, self.target)
        self.changes: list[CodeChange] = []
        if self.measured:
            try:
                self.changes = code_changes(conn, self.target, since=min(self.measured.values()))
            except Exception:  # noqa: BLE001 - no build evidence: nothing to compare against
                self.changes = []
        self._words: dict[str, str] = {}

    def hits(self, spec: Any, reset: str | None) -> list[CodeChange]:
        """The code changes since ``spec`` was last stored, of its node or upstream of it."""
        when = self.measured.get(spec.name)
        if when is None or reset or not self.changes:
            return []
        near = {spec.node_id}
        if spec.node_id in self.graph.nodes:
            near |= self.graph.ancestors(spec.node_id)
        return [c for c in self.changes if c.node_id in near and c.recorded_at > when]

    def start(self, job: Any) -> date | None:
        """Where ``job`` is measured from: everything when a change may have rewritten it."""
        return None if self.hits(job.spec, job.reset) else job.start

    def words(self, c: CodeChange) -> str:
        if c.key not in self._words:
            self._words[c.key] = run_words(self.conn, c)
        return self._words[c.key]

    # -- the comparison ------------------------------------------------------------------------
    def compare(self, job: Any) -> Restated:
        """Compare ``job``'s measured rows with its stored points; keep in ``job.rows`` only
        the rows its ordinary judgement reads (those from ``job.start``)."""
        out = Restated()
        changes = self.hits(job.spec, job.reset)
        if not changes or not job.stored:
            return out
        spec = job.spec
        nd = len(spec.dimensions)
        sid_of = {s.key: s.series_id for s in job.stored}
        stored = hist.points(self.conn, list(sid_of.values()))
        now: dict[tuple[str, str], dict[date, float | None]] = {}
        for r in job.rows:
            if r[0] is None:
                continue
            day = as_date(r[0])
            dims = {spec.dimensions[i]: None if r[1 + i] is None else str(r[1 + i])
                    for i in range(nd)}  # fmt: skip
            dk = hist.dims_key(dims)
            for j, m in enumerate(spec.measures):
                now.setdefault((m.name, dk), {})[day] = measured_float(r[1 + nd + j], spec, m.name)
        lead = _lead(changes, self.graph)
        found_in: set[str] = set()  # series with a value the change rewrote
        for s in job.stored:
            before = dict(stored.get(s.series_id, []))
            after = now.get(s.key, {})
            if spec.per_table:  # the table now against its latest measurement
                last = max(before) if before else None
                pairs = [(d, before.get(d, before[last]), after[d]) for d in after
                         if last is not None and d >= last and self._static(spec, before)]  # fmt: skip
            else:
                pairs = [(d, before[d], after.get(d)) for d in sorted(before)]
            m = next((x for x in spec.measures if x.name == s.metric), None)
            for day, old, new in pairs:
                if new is not None and not math.isfinite(new):
                    new = None
                if same(old, new):
                    continue
                found_in.add(s.metric)
                out.anomalies.append((self._anomaly(spec, m, s, day, old, new, lead, changes),
                                      s.key))  # fmt: skip
                if new is not None:
                    out.points.append((s.key, day.isoformat(), new))
                    if not spec.per_table:
                        out.overrides[(s.series_id, (day - hist.EPOCH).days)] = new
        if found_in and not spec.per_table:
            # the intervals measured for the first time were built by the new code as well
            first: set[date] = set()
            for (metric, dk), v in now.items():
                had = dict(stored.get(sid_of.get((metric, dk), -1), []))
                if metric in found_in:
                    first |= {d for d in v if d not in had}
            for a, _key in out.anomalies:
                a.data["built_since"] = [d.isoformat() for d in sorted(first)]
        if job.start is not None and not spec.per_table:
            job.rows = [r for r in job.rows if r[0] is None or as_date(r[0]) >= job.start]
        return out

    def _static(self, spec: Any, before: dict[date, float]) -> bool:
        """Can a change of a whole table be the code's?  A seed's rows are its code; another
        table only when it held still (two or more measurements, all the same) until now."""
        node = self.graph.nodes.get(spec.node_id)
        if node is not None and node.kind == "seed":
            return True
        values = list(before.values())
        return len(values) >= 2 and all(same(v, values[0]) for v in values)

    def _anomaly(self, spec: Any, m: Any, s: hist.SeriesRow, day: date, old: float | None,
                 new: float | None, lead: CodeChange, changes: list[CodeChange]) -> Anomaly:  # fmt: skip
        label = m.label if m is not None else s.metric
        series = hist.dims_label(s.dims)
        what = f"{label}" + (f" ({series})" if s.dims else "")
        node = self.graph.nodes.get(lead.node_id)
        kind = node.kind if node is not None else "node"
        when = "as a whole" if spec.per_table else f"of {day.isoformat()}"
        reason = (
            f"{what} {when} was {_show(old, label)} when measured before and is "
            f"{_show(new, label)} now: {kind} {lead.node_id} was built with new code "
            f"({', '.join(lead.components)}) in {self.words(lead)}"
        )
        rel = None if old is None or old == 0 or new is None else (new - old) / abs(old)
        return Anomaly(
            metric=s.metric, node_id=spec.node_id, dims=s.dims, interval=day, detector=DETECTOR,
            direction="changed" if rel is None or "checksum" in label else (
                "up" if rel > 0 else "down"),
            value=new, expected=old, score=abs(rel) if rel is not None else 1.0, reason=reason,
            data={"change_key": lead.key, "changes": [c.as_dict() for c in changes],
                  "time_column": spec.time or None,
                  "kind": "table" if spec.per_table else "interval",
                  "column": m.column if m is not None else None, "measure": label},
            declared=spec.declared, owner=spec.owner, domain=spec.domain,
        )  # fmt: skip


def _show(v: float | None, label: str) -> str:
    if v is None:
        return "absent"
    if label.startswith("checksum"):
        return f"checksum {int(v):x}"
    from splice.support.numbers import value

    return value(v)


def patch(
    stored: tuple[np.ndarray, np.ndarray, np.ndarray], overrides: dict[tuple[int, int], float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored point arrays (series id, day, value) with the restated values in place."""
    if not overrides:
        return stored
    sids, days, vals = stored
    vals = vals.copy()
    index = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(sids.tolist(), days.tolist(),
                                                                  strict=True))}  # fmt: skip
    for (s, d), v in overrides.items():
        if (s, d) in index:  # a point outside the loaded history is not judged against
            vals[index[(s, d)]] = v
    return sids, days, vals
