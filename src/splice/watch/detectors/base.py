"""What a detector reads and how it is registered: the walk over one panel (:class:`Walk`), the
series judged at one interval (:class:`Column`), and an entry of the registry (:class:`Detector`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TypeVar

import numpy as np

from splice.watch.panel import Finding, Panel

T = TypeVar("T")

#: How a detector reads an interval: ``"new"`` the series with a new point there, in one
#: :class:`Column`; ``"level"`` those of them no earlier detector flagged at the interval, one
#: :class:`Column` per open-fault start (their training window ends where the fault began);
#: ``"all"`` every series of the panel, with a new point or not.
READS = ("new", "level", "all")


@dataclass(frozen=True)
class Detector:
    """One entry of :data:`splice.watch.detectors.DETECTORS`.

    ``judge`` returns the findings of one :class:`Column`.  The walk runs it when one of
    ``names`` (the finding names it may emit) is among the panel's detectors (a measure's
    kind, narrowed by its ``detectors`` setting): that is how a detector is switched off.
    ``learn``, if any, runs after every interval once its findings opened their faults (a
    detector that keeps state from interval to interval, in :meth:`Walk.state`).
    """

    name: str
    judge: Callable[[Column], list[Finding]]
    names: frozenset[str]
    reads: str = "new"
    learn: Callable[[Column], None] | None = None

    def __post_init__(self) -> None:
        if self.reads not in READS:
            raise ValueError(f"reads must be one of {READS}, not {self.reads!r}")


class Faults:
    """Per series, the open fault: the column its first bad interval is at (-1: none) and its
    direction (+1 up, -1 down, 0 flat or unknown).  A fault stays open until a good point."""

    def __init__(self, s: int) -> None:
        self.since = np.full(s, -1)
        self.direction = np.zeros(s, dtype=int)

    def open(self, f: Finding, values: np.ndarray, bad: np.ndarray, panel: Panel) -> None:
        """Open the fault ``f`` is in (at its ``data["since"]``, if its series has none open)
        and keep every point of it out of training; ``f`` learns the fault's start and length."""
        r, t = f.row, f.col
        if self.since[r] < 0:
            since = f.data.get("since")
            col = panel.days.index(date.fromisoformat(since)) if since else t
            self.since[r] = min(col, t)
            self.direction[r] = {"up": 1, "down": -1}.get(f.direction, 0)
        s = int(self.since[r])
        seg = np.isfinite(values[r, s : t + 1])
        bad[r, s : t + 1] |= seg  # the whole fault stays out of training, not only flagged cells
        f.data["since"] = panel.days[s].isoformat()
        f.data["intervals"] = int(seg.sum())

    def close_good(self, values: np.ndarray, bad: np.ndarray, t: int) -> None:
        """Close the faults of the series whose point at ``t`` is good."""
        rows = np.flatnonzero(self.since >= 0)
        if not rows.size:
            return
        good = np.zeros(len(self.since), dtype=bool)
        good[rows] = np.isfinite(values[rows, t]) & ~bad[rows, t] & (self.since[rows] <= t)
        self.since[good] = -1
        self.direction[good] = 0


@dataclass
class Walk:
    """One panel walked forward: its values, what is excluded from training so far (``bad``:
    anomalies stored before and found on the way, and every point of a fault), the open
    faults, and the detectors' own state."""

    panel: Panel
    values: np.ndarray  # [S, T] float
    new: np.ndarray  # [S, T] bool: the cells to judge
    bad: np.ndarray  # [S, T] bool: kept out of every training window
    weekday: np.ndarray | None  # [T] per column (daily grain), else None
    holiday: np.ndarray | None  # [T] a business day the publishing calendar skips
    level_from: np.ndarray  # [S] the column an accepted level starts at (-1: none)
    faults: Faults
    active: frozenset[str]  # the finding names switched on (the panel's detectors)
    first_new: int  # the first column with a new point (T: none)
    states: dict[Callable[[int], Any], Any] = field(default_factory=dict)

    def state(self, kind: Callable[[int], T]) -> T:
        """The walk's one instance of a detector's state: ``kind(number of series)``, made on
        first use."""
        if kind not in self.states:
            self.states[kind] = kind(self.values.shape[0])
        return self.states[kind]  # type: ignore[no-any-return]


@dataclass
class Column:
    """The series judged at interval ``t``: ``rows`` (panel rows); their training window ends
    at ``hi`` (``t``, or the first interval of the open fault they are in: a fault is judged
    against the level before it), ``fault_dir`` its direction per row.  ``found``: the
    findings of the interval so far (earlier detectors')."""

    walk: Walk
    t: int
    rows: np.ndarray
    found: list[Finding]
    hi: int
    fault_dir: np.ndarray | None = None
    memo: dict[Callable[..., Any], Any] = field(default_factory=dict)

    @property
    def panel(self) -> Panel:
        return self.walk.panel

    @property
    def in_fault(self) -> bool:
        """The rows are in a fault that started before ``t`` (and was not accepted)."""
        return self.hi < self.t

    def once(self, make: Callable[[Column], T]) -> T:
        """``make(self)``, computed once per column: what several detectors share."""
        if make not in self.memo:
            self.memo[make] = make(self)
        return self.memo[make]  # type: ignore[no-any-return]
