"""The damage of an incident per node: which intervals of which node read bad values.

The diagnosis stores its scope with the incident (``diagnosis["scope"]``): the origin's
intervals (``intervals``, ``start``, ``end``), and, per node downstream that read the bad values,
``nodes`` (each with its own ``intervals`` of its own time column, or ``full`` when the node is
rebuilt whole) and ``blocked`` (intervals missing because a blocking audit stopped the runs).
Older incidents have no ``nodes``: the damage is then the origin's intervals, as it always was.

>>> scope = {"intervals": ["2026-09-25"], "nodes": [
...     {"node": "p:fx", "time_column": "d", "intervals": ["2026-09-25"], "full": False},
...     {"node": "p:bookings", "time_column": "d", "full": False,
...      "intervals": ["2026-09-25", "2026-09-26", "2026-09-27"]}],
...     "blocked": [{"node": "p:gmv", "intervals": ["2026-09-28"], "audit": "a", "run_id": "r1"}]}
>>> [(d.node, len(d.days), d.full) for d in node_damage({"origin": {"node": "p:fx"},
...                                                       "scope": scope})]
[('p:fx', 1, False), ('p:bookings', 3, False), ('p:gmv', 1, False)]
>>> [(d.node, [x.isoformat() for x in d.days]) for d in node_damage(
...     {"origin": {"node": "p:fx"}, "scope": {"intervals": ["2026-09-28", "2026-09-29"]}})]
[('p:fx', ['2026-09-28', '2026-09-29'])]
>>> day_ranges([date(2026, 9, 25), date(2026, 9, 26), date(2026, 9, 28)])
[(datetime.date(2026, 9, 25), datetime.date(2026, 9, 26)), (datetime.date(2026, 9, 28), datetime.date(2026, 9, 28))]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any


@dataclass
class NodeDamage:
    """The damaged intervals of one node (``full``: the node is rebuilt whole; its ``days``
    then list the affected ones where known, and an empty list means every interval)."""

    node: str
    time_column: str | None
    days: list[date]
    full: bool = False
    why: str = ""
    blocked: list[dict[str, Any]] = field(default_factory=list)

    @property
    def everything(self) -> bool:
        """Every interval of the node is in the damage (rebuilt whole, intervals unknown)."""
        return self.full and not self.days

    @property
    def whole(self) -> bool:
        """Every interval is in the damage: :attr:`everything`, or a node rebuilt whole that
        has no time column."""
        return self.everything or (self.full and self.time_column is None)

    def covers(self, day: date) -> bool:
        """Is ``day`` in the damage?  Every day is, for a node rebuilt whole that has no time
        column: its rows have no day, so whatever it measured on any day is what the rebuild
        rewrote (its ``days`` then only say when the damage was seen).

        >>> seed = NodeDamage("f:regions", None, [date(2026, 9, 28)], full=True)
        >>> seed.covers(date(2026, 7, 26)), seed.covers(date(2026, 9, 28))
        (True, True)
        >>> NodeDamage("p:fx", "d", [date(2026, 9, 28)]).covers(date(2026, 7, 26))
        False
        """
        return self.whole or day in set(self.days)

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "time_column": self.time_column,
            "intervals": [d.isoformat() for d in self.days],
            "ranges": [[a.isoformat(), b.isoformat()] for a, b in day_ranges(self.days)],
            "full": self.full,
            "why": self.why,
            "blocked": self.blocked,
        }


def _days(values: Iterable[Any]) -> list[date]:
    out = set()
    for v in values or []:
        out.add(v if isinstance(v, date) else date.fromisoformat(str(v)[:10]))
    return sorted(out)


def day_ranges(days: Iterable[date]) -> list[tuple[date, date]]:
    """Consecutive days as (first, last) ranges, in order."""
    out: list[tuple[date, date]] = []
    for d in sorted(set(days)):
        if out and d - out[-1][1] == timedelta(days=1):
            out[-1] = (out[-1][0], d)
        else:
            out.append((d, d))
    return out


def node_damage(diagnosis: dict[str, Any]) -> list[NodeDamage]:
    """The damage per node, the origin first (see the module docstring)."""
    scope = diagnosis.get("scope") or {}
    origin = (diagnosis.get("origin") or {}).get("node")
    out: list[NodeDamage] = []
    by_node: dict[str, NodeDamage] = {}
    for n in scope.get("nodes") or []:
        if not n.get("node") or n["node"] in by_node:
            continue
        d = NodeDamage(str(n["node"]), n.get("time_column"), _days(n.get("intervals") or []),
                       bool(n.get("full")), str(n.get("why") or ""))  # fmt: skip
        out.append(d)
        by_node[d.node] = d
    if origin and origin not in by_node:  # older incidents: the origin's intervals, as always
        d = NodeDamage(origin, None, _days(scope.get("intervals") or []), False,
                       str(scope.get("why") or "the origin's anomalous intervals"))  # fmt: skip
        out.insert(0, d)
        by_node[origin] = d
    for b in scope.get("blocked") or []:
        node = b.get("node")
        if not node:
            continue
        if node not in by_node:
            d = NodeDamage(str(node), None, [], False, "missing: a blocking audit stopped its run")
            out.append(d)
            by_node[node] = d
        d = by_node[node]
        d.blocked.append(dict(b))
        if not d.everything:
            d.days = _days([*d.days, *(b.get("intervals") or [])])
    return out


def has_node_scope(diagnosis: dict[str, Any]) -> bool:
    """Does the diagnosis list its damage per node (newer incidents), or only the origin's?"""
    scope = diagnosis.get("scope") or {}
    return bool(scope.get("nodes")) or bool(scope.get("blocked"))
