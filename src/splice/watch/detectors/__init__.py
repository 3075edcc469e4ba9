"""Detectors: each judges a new point against its own series' history, and says why.

The unit of work is a :class:`Panel`: every series of one measure (one row per dimension
value) on one grid of intervals (``values[S, T]``, NaN where a series has no point).  :func:`detect`
walks the grid forward; at each interval it runs the detectors of :data:`DETECTORS` in order,
each on the cells that are new (``new[S, T]``) with numpy over all series at once, and a point
found anomalous is kept out of every later training window (as are anomalies stored by earlier
watches, ``prior[S, T]``).

A fault that lasts is not the new normal.  A finding opens a fault on its series at the
fault's first interval (``data["since"]``: a level shift's run start, a stopped series' first
repeat, else the flagged interval); while it is open, the series is judged against the
training window that ends where the fault began (however long ago: a fault that outlasts the
window is still judged against the last good points before it), and every interval still at
the shifted level is flagged again, saying "still at the level it moved to on DAY (N
intervals); not accepted as the new normal" (spike, jump, level shift, volume, distinct and
lag alike; ``stopped_moving`` flags every repeat of a flagged run).  A point "still at the
shifted level" is on the fault's side, at least half way from the old level to the fault's
median level, and ``z_fault`` (2) robust sigmas from the old level.  The fault closes at the
first good point.  Only an accepted level (``splice incident accept-level``,
:mod:`splice.watch.levels`, given as ``Panel.level_from``) moves the baseline: from its start
on the series is judged against itself.  Faults left open by an earlier watch come in as
``Panel.fault_since`` / ``fault_direction`` (see :func:`splice.watch.history.open_faults`).

The detectors, in the order of :data:`DETECTORS` (one function each, its contract in its
docstring; which ones run depends on the measure's kind, see
:data:`splice.watch.specs.KIND_DETECTORS`, narrowed by a metric's ``detectors`` setting):

- ``stopped_moving`` (:mod:`~splice.watch.detectors.stopped_moving`): the value equals the last
  good value, on a day the series normally changes, improbably for the series alone or for
  the many series that repeat with it.
- ``jump`` (:mod:`~splice.watch.detectors.jump`): for series that behave like a random walk
  (FX rates), the change since the last good point against the series' own changes.
- ``rate_rise`` (:mod:`~splice.watch.detectors.rate_rise`): ``null_rate_rise`` /
  ``duplicates`` rise above, ``coverage_drop`` falls below, anything the training window saw.
- ``spike`` (:mod:`~splice.watch.detectors.spike`; ``volume_drop`` / ``volume_jump``,
  ``distinct_change`` on counts; also a lag): a point beyond ``z_spike`` robust sigmas of its
  weekday-seasonal level and outside every residual the training window saw; in a fault, each
  point still at the fault's level.
- ``level_shift`` (:mod:`~splice.watch.detectors.level_shift`; same names on counts):
  ``shift_run`` (3) points in a row beyond ``z_shift`` sigmas on the same side.
- ``domain_change`` (:mod:`~splice.watch.detectors.slices`): the set of a dimension's values
  changed (expected values vanish at once, unseen ones appear).
- ``slice_drop`` (:mod:`~splice.watch.detectors.slices`): one value's rows fall to at most half
  of what its history expects.
- ``missing`` (:mod:`~splice.watch.detectors.missing`, freshness): an interval with no rows on
  a weekday that usually has them.

``jump``, ``rate_rise``, ``spike`` and ``level_shift`` share one level baseline per interval
(:mod:`~splice.watch.detectors.window`): the training window ends before the detection period
(the last ``shift_run`` points are kept out of it too: a level shift's run may be one point
longer when one day of it is noisy).  Sensitivity presets (``low``, ``medium``, ``high``) set
the thresholds.  A new detector is a function ``judge(column) -> findings`` in a module of its
own and one line in :data:`DETECTORS`.
"""

from __future__ import annotations

from splice.watch.detectors.base import Column, Detector
from splice.watch.detectors.walk import DETECTORS, detect
from splice.watch.panel import Finding, Panel, Sensitivity, fmt, sensitivity

__all__ = [
    "DETECTORS",
    "Column",
    "Detector",
    "Finding",
    "Panel",
    "Sensitivity",
    "detect",
    "fmt",
    "sensitivity",
]
