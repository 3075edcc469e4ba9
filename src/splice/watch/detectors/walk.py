"""The registry of detectors, in the order they judge an interval (:data:`DETECTORS`), and the
walk that runs them over a panel, interval by interval (:func:`detect`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import groupby

import numpy as np

from splice.watch.detectors import (
    jump,
    level_shift,
    missing,
    rate_rise,
    slices,
    spike,
    stopped_moving,
)
from splice.watch.detectors.base import Column, Detector, Faults, Walk
from splice.watch.panel import Finding, Panel, quiet

#: Every detector, in the order it judges an interval (see :mod:`splice.watch.detectors`).
DETECTORS: tuple[Detector, ...] = (
    Detector(
        "stopped_moving",
        stopped_moving.stopped_moving,
        frozenset({"stopped_moving"}),
        learn=stopped_moving.learn,
    ),
    Detector("jump", jump.jump, frozenset({"jump"}), reads="level"),
    Detector(
        "rate_rise",
        rate_rise.rate_rise,
        frozenset(rate_rise.RATE_DETECTORS.values()),
        reads="level",
    ),
    Detector(
        "spike",
        spike.spike,
        frozenset({"spike", "volume_drop", "volume_jump", "distinct_change", "level_shift"}),
        reads="level",
    ),
    Detector(
        "level_shift",
        level_shift.level_shift,
        frozenset({"level_shift", "volume_drop", "volume_jump", "distinct_change"}),
        reads="level",
    ),
    Detector("domain_change", slices.domain_change, frozenset({"domain_change", "slice_drop"})),
    Detector("slice_drop", slices.slice_drop, frozenset({"slice_drop"})),
    Detector("missing", missing.missing, frozenset({"missing"}), reads="all"),
)


def detect(panel: Panel, detectors: Iterable[Detector] = DETECTORS) -> list[Finding]:
    """Judge every new cell of ``panel``; return the anomalous ones (in column order; at one
    interval, in the order of ``detectors``).  A detector runs when one of its names is among
    ``panel.detectors``."""
    s_count, t_count = panel.shape
    if s_count == 0 or t_count == 0:
        return []
    walk = _walk(panel)
    dets = [d for d in detectors if d.names & walk.active]
    learners = [d.learn for d in dets if d.learn is not None]
    findings: list[Finding] = []
    with quiet():
        for t in range(t_count):
            rows = np.flatnonzero(walk.new[:, t])
            found: list[Finding] = []
            for reads, group in groupby(dets, key=lambda d: d.reads):
                run = list(group)
                for col in _VIEWS[reads](walk, t, rows, found):
                    for d in run:
                        found += d.judge(col)
            for f in found:
                if f.detector != "missing":
                    walk.faults.open(f, walk.values, walk.bad, panel)
            walk.faults.close_good(walk.values, walk.bad, t)
            for learn in learners:
                learn(Column(walk, t, rows, found, t))
            findings += found
    return findings


def _walk(panel: Panel) -> Walk:
    """The panel ready to walk: ``bad`` holds the anomalies of earlier watches and the open
    faults they left (:func:`_open_faults`)."""
    s_count = panel.shape[0]
    values = np.asarray(panel.values, dtype=float)
    new = np.asarray(panel.new, dtype=bool) & np.isfinite(values)
    prior = (
        np.zeros_like(new) if panel.prior is None else np.asarray(panel.prior, dtype=bool).copy()
    )
    bad = prior.copy()  # excluded from training: anomalies, earlier ones and found ones
    weekday = np.array([d.weekday() for d in panel.days]) if panel.grain == "day" else None
    holiday = ~panel.calendar.publishing_mask(panel.days) if panel.grain == "day" else None
    if holiday is not None and weekday is not None:
        # weekends are learned from the series; holidays come from the calendar
        holiday &= weekday < 5
    level_from = (
        np.full(s_count, -1) if panel.level_from is None else np.asarray(panel.level_from).copy()
    )
    faults = _open_faults(panel, values, new, bad, level_from)
    first_new = int(np.argmax(new.any(axis=0))) if new.any() else values.shape[1]
    return Walk(panel, values, new, bad, weekday, holiday, level_from, faults,
                frozenset(panel.detectors), first_new)  # fmt: skip


def _open_faults(
    panel: Panel, values: np.ndarray, new: np.ndarray, bad: np.ndarray, level_from: np.ndarray
) -> Faults:
    """The faults earlier watches left open: a series whose latest point before its new ones
    was anomalous, with the fault's first interval (``panel.fault_since``) after any accepted
    level.  The fault's points between are kept out of training."""
    s_count, t_count = values.shape
    out = Faults(s_count)
    if panel.fault_since is None:
        return out
    fs = np.asarray(panel.fault_since)
    fd = (
        np.zeros(s_count, dtype=int)
        if panel.fault_direction is None
        else np.asarray(panel.fault_direction)
    )
    present = np.isfinite(values)
    for r in np.flatnonzero((fs >= 0) & (fs > level_from)):
        first = int(np.argmax(new[r])) if new[r].any() else t_count
        cols = np.flatnonzero(present[r, :first])
        if not cols.size or not bad[r, cols[-1]] or cols[-1] < fs[r]:
            continue  # the last judged point was good: the fault ended
        out.since[r] = int(fs[r])
        out.direction[r] = int(fd[r])
        bad[r, int(fs[r]) : first] |= present[r, int(fs[r]) : first]
    return out


def _new_view(walk: Walk, t: int, rows: np.ndarray, found: list[Finding]) -> list[Column]:
    """The series with a new point at ``t``, in one column."""
    return [Column(walk, t, rows, found, t)] if rows.size else []


def _level_view(walk: Walk, t: int, rows: np.ndarray, found: list[Finding]) -> list[Column]:
    """The series with a new point at ``t`` that no earlier detector flagged there, one column
    per open-fault start (a series in a fault is judged against its level before it)."""
    if not rows.size:
        return []
    flagged = {f.row for f in found}
    rest = np.array([r for r in rows if r not in flagged], dtype=int)
    since, direction = walk.faults.since, walk.faults.direction
    hi = np.where(since[rest] >= 0, since[rest], t)
    out = []
    for h in np.unique(hi):
        part = rest[hi == h]
        out.append(Column(walk, t, part, found, int(h), direction[part]))
    return out


def _all_view(walk: Walk, t: int, rows: np.ndarray, found: list[Finding]) -> list[Column]:
    """Every series of the panel at ``t``."""
    return [Column(walk, t, np.arange(walk.values.shape[0]), found, t)]


_VIEWS: dict[str, Callable[[Walk, int, np.ndarray, list[Finding]], list[Column]]] = {
    "new": _new_view,
    "level": _level_view,
    "all": _all_view,
}
