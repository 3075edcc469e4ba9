"""``splice watch``: measure what is new, keep it, judge it, report what is anomalous.

One call:

1. builds the specs (declared metrics, validated against the graph, and default monitors);
   a bad declaration stops here, before anything is measured or written;
2. measures, per spec, every interval not yet measured in one pushed-down query
   (``WHERE time >= start``; ``start`` reaches ``[watch].late_days`` back so an interval
   that arrives late is still measured once), on one DuckDB connection opened for the call
   and closed at once;
3. judges the new points against each series' stored history (:mod:`splice.watch.detectors`);
4. writes points, series, anomalies and a run record in one transaction: all or nothing.

A spec whose definition changed (its fingerprint) is measured anew from the start;
``backfill=True`` does that for every spec.
"""

from __future__ import annotations

import difflib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from splice.errors import ConfigError
from splice.state.sql import statement
from splice.watch import history as hist
from splice.watch import windows
from splice.watch.calendars import publishing_calendar
from splice.watch.detectors import Panel, detect, sensitivity
from splice.watch.detectors.slices import fill as fill_slices
from splice.watch.failing_checks import find_failing_checks, record_failing_checks
from splice.watch.grid import grid, intervals_back, next_interval
from splice.watch.measuring import measure, measure_jobs  # noqa: F401 - measure: re-exported
from splice.watch.metrics import watch_specs
from splice.watch.new_points import new_points
from splice.watch.restated import Restated, patch
from splice.watch.results import Anomaly, MetricReport, WatchResult, store_anomaly
from splice.watch.specs import MetricSpec

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

Progress = Callable[[str], None]
#: How much stored history is loaded to judge new points: the training window twice over,
#: and at least this many days (the repeat rates of stopped_moving are learned from it).  A
#: series in an open fault loads more: from its fault's first interval back one training
#: window, so a fault that lasts is still judged against the level before it.
HISTORY_DAYS = 120

_STORE_POINT = statement(
    "INSERT OR REPLACE INTO watch_points "
    "(series_id, interval_start, value, measured_at, watch_id) VALUES (?, ?, ?, ?, ?)"
)
_STORE_METRIC = statement(
    "INSERT INTO watch_metrics (target, name, node_id, declared, fingerprint, sql, "
    "grain, measured_through, judged_through, owner, domain, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(target, name) DO UPDATE SET node_id=excluded.node_id, "
    "declared=excluded.declared, fingerprint=excluded.fingerprint, sql=excluded.sql, "
    "grain=excluded.grain, measured_through=excluded.measured_through, "
    "judged_through=excluded.judged_through, owner=excluded.owner, "
    "domain=excluded.domain, updated_at=excluded.updated_at"
)
_STORE_RUN = statement(
    "INSERT INTO watch_runs (watch_id, target, started_at, finished_at, backfill, "
    "metrics, points, anomalies, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


# -- the call -------------------------------------------------------------------------------------
def history_since(measured_through: date, ws: Workspace) -> date:
    """The first day of stored history a daily spec measured through ``measured_through`` is
    judged against next: its re-measured late days, and the training history before them."""
    wcfg = ws.config.watch
    start = intervals_back(measured_through, "day", wcfg.late_days)
    return intervals_back(start, "day", max(HISTORY_DAYS, 2 * wcfg.training_days))


def select_specs(specs: list[MetricSpec], only: list[str] | None) -> list[MetricSpec]:
    """The specs named by ``only`` (metric names, spec names or node ids); all when empty."""
    if not only:
        return specs
    chosen = []
    for name in only:
        hits = [
            s
            for s in specs
            if name in (s.name, s.node_id) or any(m.name == name for m in s.measures)
        ]
        if not hits:
            names = sorted({s.name for s in specs if s.declared} | {s.node_id for s in specs})
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
            raise ConfigError(
                f"no metric or monitored node {name!r}"
                + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")
                + ".",
                fix="name a [[metrics]] entry or a node id with a time column "
                f"(known: {', '.join(names[:12])})",
            )
        chosen += [h for h in hits if h not in chosen]
    return chosen


@dataclass
class _Job:
    spec: MetricSpec
    reset: str | None
    start: date | None
    history_since: date | None
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    stored: list[hist.SeriesRow] = field(default_factory=list)
    restated: Restated = field(default_factory=lambda: Restated())


#: How long a watch waits for another watch of the same target before it refuses (seconds).
WATCH_LOCK_WAIT = 120.0


def watch(
    ws: Workspace,
    *,
    backfill: bool = False,
    only: list[str] | None = None,
    nodes: set[str] | None = None,
    progress: Progress | None = None,
    lock_wait: float = WATCH_LOCK_WAIT,
) -> WatchResult:
    """Measure every new interval of every metric and monitor, store it, judge it.

    ``only``: these metrics, monitors or nodes (an unknown name is an error); ``nodes``: the
    metrics and monitors of these nodes, whichever have some (what production moved, for the
    operator). Either scopes the watch: the workspace-wide looks (late rows, failing checks)
    are left to a whole watch.

    One watch per target at a time: a second one waits for the first (up to ``lock_wait``
    seconds, then refuses naming the holder), then measures only what is still new, so no
    point is measured twice and incident ids are never contended."""
    from splice.run.journal import Journal
    from splice.run.locks import RunLock, watch_lock

    with (
        Journal.for_workspace(ws) as journal,
        RunLock(
            ws.splice_dir / "locks",
            journal,
            [watch_lock(ws.target)],
            command="splice watch" + (" --backfill" if backfill else ""),
            wait=lock_wait,
        ),
    ):
        return _watch(ws, backfill=backfill, only=only, nodes=nodes, progress=progress)


def _watch(
    ws: Workspace,
    *,
    backfill: bool,
    only: list[str] | None,
    nodes: set[str] | None,
    progress: Progress | None,
) -> WatchResult:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    say = progress or (lambda _m: None)
    graph = ws.graph()
    timings["graph"] = time.perf_counter() - t0
    specs = select_specs(watch_specs(ws, graph), only)
    if nodes is not None:
        specs = [s for s in specs if s.node_id in nodes]
    scoped = bool(only) or nodes is not None
    wcfg = ws.config.watch
    target = ws.target
    store = ws.state
    conn = store.conn
    known = hist.metric_rows(conn, target)
    jobs: list[_Job] = []
    for spec in specs:
        row = known.get(spec.name)
        fp = spec.fingerprint(ws.dialect)
        reset = (
            "backfill"
            if backfill
            else "new"
            if row is None or row.measured_through is None
            else "changed"
            if row.fingerprint != fp
            else None
        )
        start = None
        since = None
        if reset is None and row is not None and row.measured_through is not None:
            late = wcfg.late_days if spec.grain == "day" else 1
            start = intervals_back(row.measured_through, spec.grain, late)
            since = history_since(row.measured_through, ws)
            if spec.grain != "day":
                since = intervals_back(
                    start, spec.grain, 2 * sensitivity(spec.sensitivity).min_history
                )
        jobs.append(_Job(spec, reset, start, since))
    n_nodes = len({j.spec.node_id for j in jobs})
    if jobs:
        say(f"Measuring {len(jobs)} metric queries over {n_nodes} node(s) in the warehouse...")
    elif scoped:
        say("Nothing to watch among the metrics and monitors asked for.")
    else:
        say("Nothing to watch: no [[metrics]] declared and no node with a time column.")
    t1 = time.perf_counter()
    ref_end, restate = measure_jobs(ws, graph, jobs, known)
    timings["measure"] = time.perf_counter() - t1
    t2 = time.perf_counter()

    now = time.time()
    watch_id = f"w{datetime.now().strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"
    plans: list[_SpecPlan] = []
    n_new = 0
    for job in jobs:
        if not job.reset:
            job.stored = hist.series_rows(conn, target, job.spec.name)
            job.restated = restate.compare(job)
        plan = _plan_spec(ws, job, conn, ref_end, known.get(job.spec.name))
        n_new += plan.new_points
        plans.append(plan)
    timings["history"] = time.perf_counter() - t2
    t2 = time.perf_counter()
    say(f"Judging {n_new} new point(s) in {sum(p.n_series for p in plans)} series...")
    anomalies: list[tuple[_SpecPlan, Anomaly, tuple[str, str]]] = []
    for plan in plans:
        for a, key in plan.job.restated.anomalies + plan.judge():
            anomalies.append((plan, a, key))
    timings["detect"] = time.perf_counter() - t2

    # rows loaded after their interval was processed (splice.watch.late_rows)
    from splice.watch.late_rows import find_late_rows, record_late_rows

    late_rows = [] if scoped else find_late_rows(ws, graph, say)
    failing = [] if scoped else find_failing_checks(ws, graph, say)  # runs that keep failing

    # -- write: all or nothing ------------------------------------------------------------
    t3 = time.perf_counter()
    reported: list[Anomaly] = []
    with store.transaction():
        for plan in plans:
            spec = plan.job.spec
            if plan.job.reset:
                hist.reset_spec(conn, target, spec.name)
            ids: dict[tuple[str, str], int] = {}
            touched = plan.touched
            missing: list[tuple[str, str]] = []
            for key in plan.series_meta:
                if key in plan.stored_ids:
                    ids[key] = plan.stored_ids[key]
                elif key in touched:
                    missing.append(key)
            made = hist.ensure_many(conn, target, spec.name, spec.node_id,
                                    [plan.series_meta[k] for k in missing], now)  # fmt: skip
            ids.update(zip(missing, made, strict=True))
            plan.ids = ids
            conn.executemany(
                _STORE_POINT,
                plan.point_rows(now, watch_id)
                + [(ids[key], d, v, now, watch_id) for key, d, v in plan.job.restated.points],
            )
            if spec.grain == "day" and plan.through is not None:
                windows.store(conn, plan.windows(history_since(plan.through, ws)), now)
            conn.execute(
                _STORE_METRIC,
                (
                    target,
                    spec.name,
                    spec.node_id,
                    int(spec.declared),
                    spec.fingerprint(ws.dialect),
                    spec.sql(ws.dialect),
                    spec.grain,
                    plan.through.isoformat() if plan.through else None,
                    plan.judged_through.isoformat() if plan.judged_through else None,
                    spec.owner,
                    spec.domain,
                    now,
                ),
            )
        for plan, a, key in anomalies:
            sid = plan.ids.get(key)
            if sid is None:
                sid = hist.ensure_series(
                    conn, target, plan.job.spec.name, a.node_id, key[0],
                    plan.series_meta[key][1], a.dims, now,
                )  # fmt: skip
                plan.ids[key] = sid
            if store_anomaly(conn, sid, target, a, watch_id, now):
                reported.append(a)
        reported += record_late_rows(conn, target, watch_id, now, late_rows)
        reported += record_failing_checks(conn, target, watch_id, now, failing)
        seconds = time.perf_counter() - t0
        conn.execute(
            _STORE_RUN,
            (
                watch_id,
                target,
                now - seconds,
                time.time(),
                int(backfill),
                len(plans),
                n_new,
                len(reported),
                json.dumps({"only": only or [], "nodes": sorted(nodes or [])}),
            ),
        )
    timings["write"] = time.perf_counter() - t3
    reported.sort(key=lambda a: (a.interval, a.metric, a.series, a.detector))
    t4 = time.perf_counter()
    from splice.watch.triage import triage

    incidents = triage(ws, graph, progress=say)
    timings["incidents"] = time.perf_counter() - t4
    return WatchResult(
        watch_id=watch_id,
        target=target,
        backfill=backfill,
        metrics=[p.report(ws.dialect) for p in plans],
        anomalies=reported,
        points=n_new,
        seconds=time.perf_counter() - t0,
        timings=timings,
        incidents=incidents,
    )


_epoch = hist.epoch_day


def _from_epoch(n: int) -> date:
    return hist.EPOCH + timedelta(days=int(n))


class _SpecPlan:
    """One spec's series, the new points measured for them, and their panels.

    History is kept as arrays (series index, day since 1970, value): a workspace of 10,000
    series x a year of points never becomes Python objects point by point.
    """

    def __init__(
        self,
        ws: Workspace,
        job: _Job,
        stored: tuple[np.ndarray, np.ndarray, np.ndarray],
        prior_cells: set[tuple[int, date]],
        ref_end: date | None,
        row: hist.MetricRow | None,
    ) -> None:
        self.ws = ws
        self.job = job
        spec = job.spec
        self.keys: list[tuple[str, str]] = []
        self.index: dict[tuple[str, str], int] = {}
        self.series_meta: dict[tuple[str, str], tuple[str, str, dict[str, str | None]]] = {}
        self.stored_ids: dict[tuple[str, str], int] = {}
        for s in job.stored:
            key = s.key
            self._add(key, (s.metric, s.kind, s.dims))
            self.stored_ids[key] = s.series_id
        idx_of_sid = {sid: self.index[k] for k, sid in self.stored_ids.items()}
        sids, days, vals = stored
        if sids.size:
            lut = np.full(int(sids.max()) + 1, -1)
            for sid, i in idx_of_sid.items():
                if sid < lut.size:
                    lut[sid] = i
            h_idx = lut[sids]
            keep = h_idx >= 0
            self.h_idx, self.h_day, self.h_val = h_idx[keep], days[keep], vals[keep]
        else:
            self.h_idx = self.h_day = np.zeros(0, np.int64)
            self.h_val = np.zeros(0)
        self.prior: set[tuple[int, int]] = {
            (idx_of_sid[sid], _epoch(d)) for sid, d in prior_cells if sid in idx_of_sid
        }
        # points measured before, in the range asked again: the new rows there are not new
        start = _epoch(job.start) if job.start else None
        known = np.zeros(0, np.int64)  # (series index << 32) + day
        if start is not None and self.h_day.size:
            recent = self.h_day >= start
            known = self.h_idx[recent] * (1 << 32) + self.h_day[recent]
        self.n_idx, self.n_day, self.n_val = new_points(
            job.rows, spec, self.index, self._add, known
        )
        ends = [int(a.max()) for a in (self.h_day, self.n_day) if a.size]
        prev = None if job.reset else (row.measured_through if row else None)
        through = _from_epoch(max(ends)) if ends else prev
        if prev is not None and (through is None or prev > through):
            through = prev
        self.through = through
        self.new_points = int(self.n_idx.size)
        self.n_series = len(self.keys)
        self.ref_end = ref_end if spec.grain == "day" else through
        self.judge_missing_from = None if job.reset else (row.judged_through if row else None)
        self.judged_through = self.ref_end or through
        self.ids: dict[tuple[str, str], int] = {}
        self.level_starts: dict[tuple[str, str], date] = {}
        self.faults: dict[tuple[str, str], hist.OpenFault] = {}

    def _add(self, key: tuple[str, str], meta: tuple[str, str, dict[str, str | None]]) -> int:
        self.index[key] = len(self.keys)
        self.keys.append(key)
        self.series_meta[key] = meta
        return self.index[key]

    def windows(self, first: date) -> list[tuple[int, int, bytes]]:
        """The windows of this spec's series with an id (:mod:`splice.watch.windows`) from
        ``first`` to its last point: what is stored, restated and new, in that order."""
        assert self.through is not None
        sid_of = self._sid_of()
        restated = self.job.restated.points
        r_sid = np.array([self.ids.get(k, -1) for k, _d, _v in restated], dtype=np.int64)
        r_day = np.array([_epoch(date.fromisoformat(d)) for _k, d, _v in restated], np.int64)
        r_val = np.array([v for _k, _d, v in restated], dtype=float)
        every = sid_of[sid_of >= 0]
        layers = [
            (sid_of[self.h_idx], self.h_day, self.h_val),
            (r_sid, r_day, r_val),
            (sid_of[self.n_idx], self.n_day, self.n_val),
            (every, np.full(every.size, -1, np.int64), np.full(every.size, np.nan)),
        ]
        kept = [(s[s >= 0], d[s >= 0], v[s >= 0]) for s, d, v in layers]
        return windows.pack(kept, first, self.through)

    @property
    def touched(self) -> set[tuple[str, str]]:
        return {self.keys[i] for i in set(self.n_idx.tolist())}

    def _sid_of(self) -> np.ndarray:
        """Each series index's id in the state (-1: none yet), once :attr:`ids` is set."""
        return np.array([self.ids.get(k, -1) for k in self.keys], dtype=np.int64)

    def point_rows(self, now: float, watch_id: str) -> list[tuple[int, str, float, float, str]]:
        """The rows of every new point (series id, interval start as ISO text, value,
        ``now``, ``watch_id``), series by series and each series' days in order: the order of
        the points' primary key, which makes writing a year of 10,000 series three times
        faster than interval by interval. Made column by column, not point by point."""
        if not self.n_idx.size:
            return []
        sid_of = self._sid_of()
        order = np.lexsort((self.n_day, self.n_idx))
        days, at = np.unique(self.n_day[order], return_inverse=True)
        text = np.array([_from_epoch(int(e)).isoformat() for e in days], dtype=object)
        return list(
            zip(
                sid_of[self.n_idx[order]].tolist(), text[at.reshape(-1)].tolist(),
                self.n_val[order].tolist(), repeat(now), repeat(watch_id),
            )
        )  # fmt: skip

    def judge(self) -> list[tuple[Anomaly, tuple[str, str]]]:
        spec = self.job.spec
        wcfg = self.ws.config.watch
        out: list[tuple[Anomaly, tuple[str, str]]] = []
        cal = publishing_calendar(spec.calendar)
        sens = sensitivity(spec.sensitivity, wcfg.training_days, spec.grain)
        for m in spec.measures:
            rows = [i for i, k in enumerate(self.keys) if k[0] == m.name]
            if not rows or not m.active_detectors:
                continue
            has_new = bool(np.isin(self.n_idx, rows).any())
            if not has_new and "missing" not in m.active_detectors:
                continue
            local = np.full(len(self.keys), -1)
            local[rows] = np.arange(len(rows))
            hsel = local[self.h_idx] >= 0 if self.h_idx.size else np.zeros(0, bool)
            nsel = local[self.n_idx] >= 0 if self.n_idx.size else np.zeros(0, bool)
            all_days = np.concatenate([self.h_day[hsel], self.n_day[nsel]])
            if not all_days.size:
                continue
            first = _from_epoch(int(all_days.min()))
            last = _from_epoch(int(all_days.max()))
            if self.ref_end is not None and self.ref_end > last:
                last = self.ref_end
            days = grid(first, last, spec.grain)
            grid_epoch = np.array([_epoch(d) for d in days], dtype=np.int64)
            values = np.full((len(rows), len(days)), np.nan)
            new = np.zeros(values.shape, dtype=bool)
            prior = np.zeros(values.shape, dtype=bool)
            hc = np.searchsorted(grid_epoch, self.h_day[hsel])
            values[local[self.h_idx[hsel]], hc] = self.h_val[hsel]
            nc = np.searchsorted(grid_epoch, self.n_day[nsel])
            values[local[self.n_idx[nsel]], nc] = self.n_val[nsel]
            new[local[self.n_idx[nsel]], nc] = True
            if m.kind == "slice":  # a value absent from an interval with rows has 0 rows
                fill_slices(values, new)
            col = {int(e): i for i, e in enumerate(grid_epoch)}
            for i, d in self.prior:
                if local[i] >= 0 and d in col:
                    prior[local[i], col[d]] = True
            keys = [self.keys[i] for i in rows]
            level_from = np.array(
                [col.get(_epoch(self.level_starts[k]), -1) if k in self.level_starts else -1
                 for k in keys]
            )  # fmt: skip
            fault_since = np.array(
                [col.get(_epoch(self.faults[k].since), -1) if k in self.faults else -1
                 for k in keys]
            )  # fmt: skip
            fault_dir = np.array(
                [{"up": 1, "down": -1}.get(self.faults[k].direction, 0) if k in self.faults
                 else 0 for k in keys]
            )  # fmt: skip
            judge_from = None
            if "missing" in m.active_detectors:
                jf = self.judge_missing_from
                judge_from = (
                    0 if jf is None else col.get(_epoch(next_interval(jf, spec.grain)), len(days))
                )
            panel = Panel(
                name=m.name,
                kind=m.kind,
                days=days,
                values=values,
                new=new,
                prior=prior,
                labels=[hist.dims_label(self.series_meta[k][2]) for k in keys],
                detectors=m.active_detectors,
                sensitivity=sens,
                calendar=cal,
                grain=spec.grain,
                judge_missing_from=judge_from,
                level_from=level_from,
                fault_since=fault_since,
                fault_direction=fault_dir,
            )
            for f in detect(panel):
                k = keys[f.row]
                out.append(
                    (
                        Anomaly(
                            metric=m.name,
                            node_id=spec.node_id,
                            dims=self.series_meta[k][2],
                            interval=days[f.col],
                            detector=f.detector,
                            direction=f.direction,
                            value=f.value,
                            expected=f.expected,
                            score=f.score,
                            reason=f.reason,
                            data=f.data,
                            declared=spec.declared,
                            owner=spec.owner,
                            domain=spec.domain,
                        ),
                        k,
                    )
                )
        return out

    def report(self, dialect: str) -> MetricReport:
        spec = self.job.spec
        return MetricReport(
            name=spec.name,
            node_id=spec.node_id,
            declared=spec.declared,
            measures=[m.name for m in spec.measures],
            new_points=self.new_points,
            series=self.n_series,
            measured_from=self.job.start,
            through=self.through,
            reset=self.job.reset,
            sql=spec.sql(dialect, self.job.start),
        )


def _stored_points(
    conn: Any,
    ws: Workspace,
    job: _Job,
    ids: list[int],
    faults: dict[int, hist.OpenFault],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored points the new ones are judged against, from ``job.history_since`` on (a
    daily spec's series read their windows, one row each, :mod:`splice.watch.windows`, and
    their points only where the window does not reach); a series whose fault may still be
    open (no point between its latest anomaly and the re-measured days) from its fault's
    first interval back one training window, and the margin the walk needs. Moves
    ``job.history_since`` back as far as that reached."""
    empty = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    since = job.history_since
    if not ids:
        return empty
    if job.spec.grain == "day" and since is not None:
        got, rest = windows.read(conn, ws.target, job.spec.name, ids, since)
        parts = [got, hist.point_arrays(conn, rest, since) if rest else empty]
    else:
        parts = [hist.point_arrays(conn, ids, since)]
    if faults and since is not None and job.start is not None:
        sens = sensitivity(job.spec.sensitivity, ws.config.watch.training_days, job.spec.grain)
        # each faulted series' latest stored point before the re-measured days, in one pass
        sids = np.concatenate([p[0] for p in parts])
        days = np.concatenate([p[1] for p in parts])
        sel = (days < _epoch(job.start)) & np.isin(sids, np.fromiter(faults, np.int64))
        order = np.lexsort((days[sel], sids[sel]))
        s_sel, d_sel = sids[sel][order], days[sel][order]
        last = np.flatnonzero(np.r_[s_sel[1:] != s_sel[:-1], True])[: s_sel.size]
        latest = dict(zip(s_sel[last].tolist(), d_sel[last].tolist(), strict=True))
        reach: dict[int, date] = {}
        for sid, f in faults.items():
            back = intervals_back(f.since, job.spec.grain, sens.training + 7)
            # open unless a good point came after its latest anomaly
            if back < since and latest.get(sid, -(1 << 40)) <= _epoch(f.last):
                reach[sid] = back
        if reach:
            job.history_since = min(reach.values())
            s2, d2, v2 = hist.point_arrays(conn, list(reach), job.history_since)
            keys = np.fromiter(reach, np.int64)
            backs = np.array([_epoch(d) for d in reach.values()], dtype=np.int64)
            lo = backs[np.argsort(keys)][np.searchsorted(np.sort(keys), s2)]
            keep = (d2 >= lo) & (d2 < _epoch(since))
            parts.append((s2[keep], d2[keep], v2[keep]))
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )


def _plan_spec(
    ws: Workspace, job: _Job, conn: Any, ref_end: date | None, row: hist.MetricRow | None
) -> _SpecPlan:
    from splice.watch.levels import accepted_levels

    ids = [s.series_id for s in job.stored]
    accepted = accepted_levels(conn, ids) if ids else {}  # read once for the three uses below
    starts = {sid: since for sid, (since, _) in accepted.items()}
    faults = hist.open_faults(conn, ids, starts) if ids else {}
    stored = _stored_points(conn, ws, job, ids, faults)
    stored = patch(stored, job.restated.overrides)
    prior = hist.anomaly_cells(conn, ids, job.history_since, accepted) if ids else set()
    plan = _SpecPlan(ws, job, stored, prior, ref_end, row)
    if ids:
        by_id = {i: key for key, i in plan.stored_ids.items()}
        plan.level_starts = {by_id[sid]: d for sid, d in starts.items() if sid in by_id}
        plan.faults = {by_id[sid]: f for sid, f in faults.items() if sid in by_id}
    return plan
