"""What ``splice watch`` reports: each anomaly, each metric's figures, the whole watch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from splice.state.sql import statement
from splice.watch import history as hist

_STORE_ANOMALY = statement(
    "INSERT OR IGNORE INTO watch_anomalies (series_id, target, metric, node_id, dims, "
    "interval_start, detector, direction, value, expected, score, reason, data, "
    "watch_id, detected_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass
class Anomaly:
    """One anomalous point, as reported and stored."""

    metric: str
    node_id: str
    dims: dict[str, str | None]
    interval: date
    detector: str
    direction: str
    value: float | None
    expected: float | None
    score: float
    reason: str
    data: dict[str, Any] = field(default_factory=dict)
    declared: bool = False
    owner: str | None = None
    domain: str | None = None

    @property
    def series(self) -> str:
        return hist.dims_label(self.dims)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "node": self.node_id,
            "series": self.series,
            "dims": self.dims,
            "interval": self.interval.isoformat(),
            "detector": self.detector,
            "direction": self.direction,
            "value": _num(self.value),
            "expected": _num(self.expected),
            "score": _num(self.score),
            "reason": self.reason,
            "data": self.data,
            "declared": self.declared,
            "owner": self.owner,
            "domain": self.domain,
        }


@dataclass
class MetricReport:
    name: str
    node_id: str
    declared: bool
    measures: list[str]
    new_points: int
    series: int
    measured_from: date | None  # the query's start (None: the whole history)
    through: date | None
    reset: str | None  # why the history was measured anew (backfill, new, changed)
    sql: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "node": self.node_id,
            "declared": self.declared,
            "measures": self.measures,
            "new_points": self.new_points,
            "series": self.series,
            "measured_from": self.measured_from.isoformat() if self.measured_from else None,
            "through": self.through.isoformat() if self.through else None,
            "reset": self.reset,
            "sql": self.sql,
        }


@dataclass
class WatchResult:
    watch_id: str
    target: str
    backfill: bool
    metrics: list[MetricReport]
    anomalies: list[Anomaly]
    points: int
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)
    incidents: list[Any] = field(default_factory=list)  # opened or changed by this call

    def as_dict(self) -> dict[str, Any]:
        return {
            "watch_id": self.watch_id,
            "incidents": [i.as_dict(with_diagnosis=False) for i in self.incidents],
            "target": self.target,
            "backfill": self.backfill,
            "points": self.points,
            "series": sum(m.series for m in self.metrics),
            "metrics": [m.as_dict() for m in self.metrics],
            "anomalies": [a.as_dict() for a in self.anomalies],
            "seconds": round(self.seconds, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


def store_anomaly(conn: Any, series_id: int, target: str, a: Anomaly, watch_id: str,
                  now: float) -> bool:  # fmt: skip
    """Record ``a`` on series ``series_id`` (once per series, interval and detector); whether
    it was new."""
    import json

    cur = conn.execute(
        _STORE_ANOMALY,
        (series_id, target, a.metric, a.node_id, hist.dims_key(a.dims), a.interval.isoformat(),
         a.detector, a.direction, _num(a.value), _num(a.expected), _num(a.score), a.reason,
         json.dumps(a.data, default=str), watch_id, now),
    )  # fmt: skip
    return bool(cur.rowcount)


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return float(v)
