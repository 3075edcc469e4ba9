"""A warehouse migration as plain data: waves of relations moved from one target to another,
each approved by an owner, run, and checked for parity before the next one starts.

A :class:`Migration` holds its :class:`Wave` s in graph order: first the raw relations (what
ingestion loads, and sources nothing in the graph writes), **copied** row for row; then one
wave per project, **rebuilt** in the new target by its own tool (dbt, SQLMesh).  A wave's
checks (:class:`Check`) compare the two targets: rows and an order-independent checksum per
interval of the relation's time column, the declared metrics per interval, and the schema.

Statuses::

    wave:       planned ──> approved ──> passed
                               │  ▲         │
                               ▼  │ (run    ▼
                              failed again)  (checked again: passed or failed)

    migration:  planned ──> in progress ──> failed (a wave's check failed: fix, run it again)
                                       └──> checked (every wave passed) ──> complete (signed)

>>> w = Wave(1, "raw", "copy", None, ["ingestion:fx"], [Moved("ingestion:fx", "raw.fx", None)])
>>> m = Migration("MG-1", "prod", "pg", [w], "maria", 0.0)
>>> Migration.from_dict(m.as_dict()) == m
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _known(cls: Any, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclass
class Moved:
    """A relation a wave moves: written by ``node``; ``time_column`` splits its checks."""

    node: str
    relation: str  # schema.name, the same in both targets
    time_column: str | None
    rows: int | None = None
    extra: bool = False  # moved with its node, unchecked by interval (dlt's _dlt_loads)
    source_relation: str | None = None  # where it differs in the source target

    @property
    def source(self) -> str:
        return self.source_relation or self.relation


@dataclass
class Check:
    """One comparison of the two targets (``ok`` False names what differs)."""

    kind: str  # rows | checksum | sums | metric | schema
    subject: str  # the relation, or the metric
    interval: str | None
    ok: bool
    detail: str

    @classmethod
    def of(cls, d: dict[str, Any]) -> Check:
        return cls(**d)


@dataclass
class Wave:
    index: int
    name: str
    kind: str  # copy | build
    project: str | None
    nodes: list[str]
    relations: list[Moved]
    metrics: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    status: str = "planned"  # planned | approved | passed | failed
    approved_by: dict[str, Any] | None = None
    approved_at: float | None = None
    ran_at: float | None = None
    run_id: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def failed_checks(self) -> list[Check]:
        return [Check.of(c) for c in self.checks if not c["ok"]]


@dataclass
class Migration:
    migration_id: str
    source: str
    dest: str
    waves: list[Wave]
    created_by: str
    created_at: float
    status: str = "planned"  # planned | in progress | failed | checked | complete
    requester: dict[str, Any] | None = None
    execution_time: str | None = None
    tolerance: float = 0.0001  # per row, absolute: how far a floating-point value may differ
    relative_tolerance: float = 1e-6  # how far a sum or a metric may differ, relative to it
    completed_by: dict[str, Any] | None = None
    completed_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Migration:
        waves = [Wave(**{**_known(Wave, w), "relations": [Moved(**_known(Moved, r))
                                                          for r in w["relations"]]})
                 for w in d["waves"]]  # fmt: skip
        return cls(**{**_known(cls, d), "waves": waves})

    def wave(self, index: int) -> Wave:
        for w in self.waves:
            if w.index == index:
                return w
        from splice.errors import InputError

        raise InputError(
            f"migration {self.migration_id} has no wave {index} (waves 1-{len(self.waves)}).",
            fix=f"splice migrate status {self.migration_id} lists them",
        )

    def next_wave(self) -> Wave | None:
        """The first wave that has not passed."""
        return next((w for w in self.waves if w.status != "passed"), None)
