"""The measured rows of one spec as new points: arrays (series index, day, value), by column.

A first watch of 10,000 series over a year measures 3.65 million rows (interval, dimension
values, one value per measure). Taken row by row in Python, turning them into points cost more
than measuring them. Here each column is handled whole: the intervals and the dimension values
are numbered once per distinct value, the values converted in one pass per measure, and what
was measured before dropped as arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any

import numpy as np

from splice.watch.grid import as_date, measured_float
from splice.watch.history import dims_key, epoch_day
from splice.watch.specs import MetricSpec

Key = tuple[str, str]
Meta = tuple[str, str, dict[str, str | None]]


def factorize(col: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Each value's number (in the order values first appear) and the distinct values.

    >>> codes, uniq = factorize(["b", "a", "b", None])
    >>> codes.tolist(), uniq
    ([0, 1, 0, 2], ['b', 'a', None])
    """
    uniq = list(dict.fromkeys(col))
    number = {v: i for i, v in enumerate(uniq)}
    return np.fromiter(map(number.__getitem__, col), np.int64, len(col)), uniq


def _floats(col: Sequence[Any], spec: MetricSpec, name: str) -> np.ndarray:
    """A measure's values as floats (NaN: no value, or not finite); a value that is not a
    number is the error :func:`measured_float` gives."""
    for t in set(map(type, col)):
        if t is not type(None) and not issubclass(t, int | float | Decimal):
            bad = next(v for v in col if type(v) is t)
            measured_float(bad, spec, name)  # raises: not a number
    vals = np.array(col, dtype=float)
    vals[~np.isfinite(vals)] = np.nan
    return vals


def new_points(
    rows: list[tuple[Any, ...]],
    spec: MetricSpec,
    index: dict[Key, int],
    add: Callable[[Key, Meta], int],
    known: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The new points of ``rows`` (interval, dimension values, one value per measure) as
    (series index, day since 1970, value), in the rows' order and each row's measures in
    order. A series not in ``index`` is made with ``add`` where it first has a value; a
    point whose series and day are in ``known`` (``index * 2**32 + day``: measured before)
    is not new; of two rows with the same series and day, the first counts."""
    empty = np.zeros(0, np.int64)
    if not rows:
        return empty, empty.copy(), np.zeros(0)
    nd = len(spec.dimensions)
    names = [m.name for m in spec.measures]
    kinds = {m.name: m.kind for m in spec.measures}
    cols = [list(map(itemgetter(c), rows)) for c in range(1 + nd + len(names))]
    t_codes, t_uniq = factorize(cols[0])
    t_epoch = np.array([-1 if t is None else epoch_day(as_date(t)) for t in t_uniq], dtype=np.int64)
    timed = np.array([t is not None for t in t_uniq], dtype=bool)[t_codes]
    day = t_epoch[t_codes]
    # the rows' dimension values, numbered together (one number per distinct combination)
    slot = np.zeros(len(rows), np.int64)
    for c in range(nd):
        codes, uniq = factorize(cols[1 + c])
        slot = np.unique(slot * len(uniq) + codes, return_inverse=True)[1].reshape(-1)
    uniq_slots = np.unique(slot, return_index=True, return_inverse=True)
    first_rows, slot = uniq_slots[1], uniq_slots[2]
    slot = slot.reshape(-1)
    # np.unique numbers in sorted order: renumber in the order slots first appear
    order = np.argsort(first_rows, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    slot = rank[slot]
    slot_row = first_rows[order]  # a row of each slot
    n_slots = order.size
    vals = [_floats(cols[1 + nd + j], spec, name) for j, name in enumerate(names)]
    ok = [timed & np.isfinite(v) for v in vals]
    # each (slot, measure)'s series: made in the order the loop over rows would make them
    firsts = []
    for j, sel in enumerate(ok):
        s_sel = slot[sel]
        if s_sel.size:
            u, at = np.unique(s_sel, return_index=True)
            firsts.append(np.stack([np.flatnonzero(sel)[at], np.full(u.size, j), u], axis=1))
    series = np.full((n_slots, len(names)), -1, np.int64)
    if firsts:
        made = np.concatenate(firsts)
        made = made[np.lexsort((made[:, 1], made[:, 0]))]
        dims_of: dict[int, tuple[dict[str, str | None], str]] = {}
        for _row, j, s in made.tolist():
            if s not in dims_of:
                raw = rows[int(slot_row[s])][1 : 1 + nd]
                dims = {spec.dimensions[i]: None if raw[i] is None else str(raw[i])
                        for i in range(nd)}  # fmt: skip
                dims_of[s] = (dims, dims_key(dims))
            dims, dk = dims_of[s]
            key = (names[j], dk)
            found = index.get(key)
            series[s, j] = add(key, (names[j], kinds[names[j]], dims)) if found is None else found
    # the points, row-major (row, measure), first of a series and day kept, known ones left out
    r_all: list[np.ndarray] = []
    i_all: list[np.ndarray] = []
    d_all: list[np.ndarray] = []
    v_all: list[np.ndarray] = []
    j_all: list[np.ndarray] = []
    for j, sel in enumerate(ok):
        at = np.flatnonzero(sel)
        r_all.append(at)
        j_all.append(np.full(at.size, j))
        i_all.append(series[slot[at], j])
        d_all.append(day[at])
        v_all.append(vals[j][at])
    r, jj = np.concatenate(r_all), np.concatenate(j_all)
    i, d, v = np.concatenate(i_all), np.concatenate(d_all), np.concatenate(v_all)
    o = np.lexsort((jj, r))
    i, d, v = i[o], d[o], v[o]
    cell = i * (1 << 32) + d
    first = np.unique(cell, return_index=True)[1]
    keep = np.zeros(cell.size, bool)
    keep[first] = True
    if known.size:
        keep &= ~np.isin(cell, known)
    return i[keep], d[keep], v[keep]
