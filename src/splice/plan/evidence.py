"""Evidence: what Splice knows was built, per target and node, kept in Splice's state.

Tables (migration 2 of :mod:`splice.state.migrations`):

``evidence_versions``
    one row per relation version, append only: ``(target, node_id, version)`` with the
    fingerprint, intervals and SQLMesh state it was recorded with, the run, and ``reason``
    (``build``: a successful build the runner recorded; ``observed``: a change Splice saw in
    SQLMesh's state that no Splice run made).  ``seq`` orders every version of every node.
``evidence_builds``
    the latest successful build per ``(target, node_id)``: its ``version`` (an integer that
    grows by one each time the node's relation changes through a successful build), ``seq``,
    fingerprint, run, time, rows, intervals.
``evidence_inputs``
    per ``(target, node_id, upstream_id)``: the upstream's version the latest build saw.
``evidence_attempts``
    the latest attempt per ``(target, node_id)``: ``running`` (started, not finished: an
    interrupted run leaves this), ``failed`` (with the error) or ``succeeded``.

Every public function runs in one SQLite transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``, WAL
journal), so a process killed at any point (SIGKILL included) leaves either all of a call's
writes or none of them.

The version an upstream had when a node was built comes from ``evidence_inputs`` when the
runner passed ``upstream=`` to :func:`record_build`; otherwise it is read from the version
history: the upstream's latest version recorded before the node's own build (by ``seq``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from splice.plan.intervals import describe_intervals, merge
from splice.state.sql import select_where, statement
from splice.state.store import StateStore

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

_BUILT_VERSION = statement("SELECT version FROM evidence_builds WHERE target=? AND node_id=?")
_HAS_BUILD = statement("SELECT 1 FROM evidence_builds WHERE target=? AND node_id=?")
_LAST_VERSION = statement(  # a node whose latest-build row is gone never reuses a version number
    "SELECT COALESCE(MAX(version), 0) FROM evidence_versions WHERE target=? AND node_id=?"
)
_VERSION_BEFORE = statement(
    "SELECT COALESCE(MAX(version), 0) FROM evidence_versions WHERE target=? AND node_id=? AND seq<?"
)
_ADD_VERSION = statement(
    "INSERT INTO evidence_versions(target, node_id, version, reason, run_id, fingerprint, "
    "intervals, tool_state, row_count, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
)
_SET_BUILD = statement(
    "INSERT INTO evidence_builds(target, node_id, version, seq, reason, run_id, fingerprint, "
    "intervals, tool_state, row_count, built_at, inputs_recorded) VALUES (?,?,?,?,?,?,?,?,?,?,?,0) "
    "ON CONFLICT(target, node_id) DO UPDATE SET version=excluded.version, seq=excluded.seq, "
    "reason=excluded.reason, run_id=excluded.run_id, fingerprint=excluded.fingerprint, "
    "intervals=excluded.intervals, tool_state=excluded.tool_state, row_count=excluded.row_count, "
    "built_at=excluded.built_at, inputs_recorded=0"
)
_REFRESH_BUILD = statement(
    "UPDATE evidence_builds SET reason='build', run_id=?, fingerprint=?, intervals=?, "
    "tool_state=NULL, row_count=?, built_at=? WHERE target=? AND node_id=?"
)
_ADOPT_TOOL_STATE = statement(
    "UPDATE evidence_builds SET tool_state=?, intervals=? WHERE target=? AND node_id=?"
)
_INPUTS_RECORDED = statement(
    "UPDATE evidence_builds SET inputs_recorded=1 WHERE target=? AND node_id=?"
)
_DELETE_INPUTS = statement("DELETE FROM evidence_inputs WHERE target=? AND node_id=?")
_ADD_INPUT = statement(
    "INSERT INTO evidence_inputs(target, node_id, upstream_id, version) VALUES (?,?,?,?)"
)
_MARK_RUNNING = statement(
    "INSERT INTO evidence_attempts(target, node_id, run_id, status, error, started_at, finished_at) "
    "VALUES (?,?,?,'running',NULL,?,NULL) ON CONFLICT(target, node_id) DO UPDATE SET "
    "run_id=excluded.run_id, status='running', error=NULL, started_at=excluded.started_at, finished_at=NULL"
)
_SET_ATTEMPT = statement(
    "INSERT INTO evidence_attempts(target, node_id, run_id, status, error, started_at, finished_at) "
    "VALUES (?,?,?,?,?,?,?) ON CONFLICT(target, node_id) DO UPDATE SET run_id=excluded.run_id, "
    "status=excluded.status, error=excluded.error, finished_at=excluded.finished_at, "
    "started_at=CASE WHEN evidence_attempts.run_id IS excluded.run_id THEN evidence_attempts.started_at "
    "ELSE excluded.started_at END"
)
_INPUTS = statement("SELECT node_id, upstream_id, version FROM evidence_inputs WHERE target=?")
_BUILDS = statement(
    "SELECT node_id, version, seq, reason, run_id, fingerprint, built_at, row_count, intervals, "
    "tool_state, inputs_recorded FROM evidence_builds WHERE target=?"
)
_BUILD_OBSERVED = statement(
    "SELECT version, reason, intervals, tool_state, fingerprint FROM evidence_builds "
    "WHERE target=? AND node_id=?"
)
_ATTEMPTS = statement(
    "SELECT node_id, run_id, status, error, started_at, finished_at FROM evidence_attempts "
    "WHERE target=?"
)
_HISTORY_COLUMNS = (
    "seq", "version", "reason", "run_id", "fingerprint", "intervals", "tool_state", "row_count",
    "recorded_at",
)  # fmt: skip
_HISTORY = statement(
    "SELECT seq, version, reason, run_id, fingerprint, intervals, tool_state, row_count, "
    "recorded_at FROM evidence_versions WHERE target=? AND node_id=? ORDER BY seq"
)


@dataclass(frozen=True)
class BuildRecord:
    """The latest successful build of one node in one target."""

    target: str
    node_id: str
    version: int
    seq: int
    reason: str  # build | observed
    run_id: str | None
    fingerprint: dict[str, str]
    built_at: float
    rows: int | None = None
    intervals: list[list[int]] | None = None
    tool_state: dict[str, Any] | None = None
    inputs: dict[str, int] = field(default_factory=dict)  # upstream id -> version seen
    inputs_recorded: bool = False


@dataclass(frozen=True)
class Attempt:
    """The latest attempt to build one node in one target."""

    target: str
    node_id: str
    run_id: str | None
    status: str  # running | failed | succeeded
    error: str | None
    started_at: float | None
    finished_at: float | None


@dataclass(frozen=True)
class Observation:
    """A change in SQLMesh's state that Splice recorded as a new version (reason "observed")."""

    node_id: str
    version: int
    previous_version: int
    what: str  # words: "intervals grew: ...", "snapshot changed: ...", "first seen"


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _norm_intervals(intervals: Iterable[Any] | None) -> list[list[int]] | None:
    if intervals is None:
        return None
    return merge(intervals)


def _versions(conn: Any, target: str, node_ids: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(0, len(node_ids), 500):
        q = select_where(
            "evidence_builds", ["node_id", "version"], target=target, node_id=node_ids[i : i + 500]
        )
        out.update({n: int(v) for n, v in conn.execute(q, q.args)})
    return out


def _bump(
    conn: Any,
    *,
    target: str,
    node_id: str,
    reason: str,
    run_id: str | None,
    fingerprint: Mapping[str, str],
    intervals: list[list[int]] | None,
    tool_state: Mapping[str, Any] | None,
    rows: int | None,
    now: float,
) -> tuple[int, int]:
    """Record a new version of ``node_id`` (inside the caller's transaction): (version, seq)."""
    row = conn.execute(_BUILT_VERSION, (target, node_id)).fetchone()
    previous = int(row[0]) if row else conn.execute(_LAST_VERSION, (target, node_id)).fetchone()[0]
    version = int(previous) + 1
    fp = _dumps(dict(fingerprint)) or "{}"
    cur = conn.execute(
        _ADD_VERSION,
        (
            target,
            node_id,
            version,
            reason,
            run_id,
            fp,
            _dumps(intervals),
            _dumps(tool_state),
            rows,
            now,
        ),
    )
    seq = int(cur.lastrowid)
    conn.execute(
        _SET_BUILD,
        (
            target,
            node_id,
            version,
            seq,
            reason,
            run_id,
            fp,
            _dumps(intervals),
            _dumps(tool_state),
            rows,
            now,
        ),
    )
    return version, seq


def record_build(
    store: StateStore,
    *,
    target: str,
    node_id: str,
    fingerprint: dict[str, str],
    run_id: str,
    rows: int | None = None,
    intervals: list[Any] | None = None,
    upstream: Mapping[str, int] | Iterable[str] | None = None,
    same_data: bool = False,
) -> int:
    """Record that ``node_id`` was built successfully in ``target``; returns its new version.

    Call it after the node succeeded (and only for nodes that were built: every call is a new
    version of the relation).  ``fingerprint`` is what was built (the decision's
    ``fingerprint``, or :func:`splice.plan.fingerprint.fingerprints`); ``intervals`` the
    ``[start_ms, end_ms)`` intervals the relation holds, for interval-based models;
    ``upstream`` the nodes it read (the decision's ``inputs``), as ids, whose current versions
    are recorded, or as a mapping id -> version seen.  Without ``upstream``, the versions seen
    are read from the history.

    ``same_data``: the tool applied a change that leaves the relation's data as it was (a
    SQLMesh decision whose ``tool_view["changes_data"]`` is false: an indirect-non-breaking or
    metadata change with no interval to fill).  The record is refreshed and the version does
    not move, so readers in other projects are not rebuilt for it.

    The node's latest attempt becomes ``succeeded``.
    """
    now = time.time()
    ivs = _norm_intervals(intervals)
    with store.transaction() as conn:
        row = conn.execute(_BUILT_VERSION, (target, node_id)).fetchone() if same_data else None
        if row is not None:
            version = int(row[0])
            conn.execute(
                _REFRESH_BUILD,
                (
                    run_id,
                    _dumps(dict(fingerprint)) or "{}",
                    _dumps(ivs),
                    rows,
                    now,
                    target,
                    node_id,
                ),
            )
        else:
            version, _seq = _bump(
                conn,
                target=target,
                node_id=node_id,
                reason="build",
                run_id=run_id,
                fingerprint=fingerprint,
                intervals=ivs,
                tool_state=None,
                rows=rows,
                now=now,
            )
        if upstream is not None:
            if isinstance(upstream, Mapping):
                seen = {str(k): int(v) for k, v in upstream.items()}
            else:
                ups = sorted({str(u) for u in upstream})
                current = _versions(conn, target, ups)
                seen = {u: current.get(u, 0) for u in ups}
            conn.execute(_DELETE_INPUTS, (target, node_id))
            conn.executemany(_ADD_INPUT, [(target, node_id, u, v) for u, v in sorted(seen.items())])
            conn.execute(_INPUTS_RECORDED, (target, node_id))
        else:
            conn.execute(_DELETE_INPUTS, (target, node_id))
        _set_attempt(conn, target, node_id, run_id, "succeeded", None, now)
    return version


def record_failure(
    store: StateStore, *, target: str, node_id: str, run_id: str, error: Any
) -> None:
    """Record that building ``node_id`` failed in ``target``. Its last good build is kept."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    with store.transaction() as conn:
        _set_attempt(conn, target, node_id, run_id, "failed", str(text)[:4000], time.time())


def record_attempt(store: StateStore, *, target: str, node_ids: Iterable[str], run_id: str) -> None:
    """Mark nodes as being built by ``run_id`` (before a segment starts; optional).

    A node left ``running`` by a run that never finished (killed) plans as failed_last_time,
    "interrupted"; :func:`record_build` / :func:`record_failure` replace the mark.
    """
    now = time.time()
    with store.transaction() as conn:
        conn.executemany(
            _MARK_RUNNING,
            [(target, n, run_id, now) for n in node_ids],
        )


def _set_attempt(
    conn: Any,
    target: str,
    node_id: str,
    run_id: str | None,
    status: str,
    error: str | None,
    now: float,
) -> None:
    conn.execute(
        _SET_ATTEMPT,
        (target, node_id, run_id, status, error, now, now),
    )


def last_builds(store: StateStore, target: str) -> dict[str, BuildRecord]:
    """The latest successful build of every node recorded in ``target``."""
    conn = store.conn
    inputs: dict[str, dict[str, int]] = {}
    for node_id, up, v in conn.execute(_INPUTS, (target,)):
        inputs.setdefault(node_id, {})[up] = int(v)
    out: dict[str, BuildRecord] = {}
    for r in conn.execute(_BUILDS, (target,)):
        out[r[0]] = BuildRecord(
            target=target,
            node_id=r[0],
            version=int(r[1]),
            seq=int(r[2]),
            reason=r[3],
            run_id=r[4],
            fingerprint=_loads(r[5]) or {},
            built_at=float(r[6]),
            rows=r[7],
            intervals=_loads(r[8]),
            tool_state=_loads(r[9]),
            inputs=inputs.get(r[0], {}),
            inputs_recorded=bool(r[10]),
        )
    return out


def has_build(store: StateStore, target: str, node_id: str) -> bool:
    """Whether ``node_id`` has any build recorded in ``target``."""
    return store.conn.execute(_HAS_BUILD, (target, node_id)).fetchone() is not None


def last_attempts(store: StateStore, target: str) -> dict[str, Attempt]:
    """The latest attempt of every node recorded in ``target``."""
    return {
        r[0]: Attempt(target, r[0], r[1], r[2], r[3], r[4], r[5])
        for r in store.conn.execute(_ATTEMPTS, (target,))
    }


def version_before(store: StateStore, target: str, node_id: str, seq: int) -> int:
    """The version ``node_id`` had just before ``seq`` (0 when it had none)."""
    row = store.conn.execute(_VERSION_BEFORE, (target, node_id, seq)).fetchone()
    return int(row[0]) if row else 0


def history(store: StateStore, target: str, node_id: str) -> list[dict[str, Any]]:
    """Every recorded version of one node, oldest first."""
    rows = store.conn.execute(_HISTORY, (target, node_id)).fetchall()
    out = []
    for r in rows:
        d = dict(zip(_HISTORY_COLUMNS, r, strict=True))
        for k in ("fingerprint", "intervals", "tool_state"):
            d[k] = _loads(d[k])
        out.append(d)
    return out


# -- SQLMesh state as evidence -------------------------------------------------------------------
def observe_sqlmesh(
    ws: Workspace,
    *,
    projects: Iterable[str] | None = None,
    execution_time: datetime | None = None,
    states: Mapping[str, Any] | None = None,
) -> list[Observation]:
    """Record new versions for SQLMesh models that changed outside Splice (reason "observed").

    Compares each model of the target's SQLMesh environments (snapshot, intervals, and
    SQLMesh's last-altered time, from ``provider.context.state_reader``) to the last record:

    - no record, and the model holds intervals: version 1, "first seen";
    - the last record was a Splice build (the runner recorded it): adopt SQLMesh's state as that
      build's, no new version;
    - the snapshot changed, the intervals changed, or SQLMesh evaluated it again since (a
      ``sqlmesh run`` or a restatement by hand): a new version.

    ``states`` (project -> :class:`~splice.plan.sqlmesh_view.EnvironmentState`) reuses a read the
    caller already made.  All writes happen in one transaction.
    """
    from splice.plan.sqlmesh_view import environment_state

    wanted = (
        list(projects)
        if projects is not None
        else [p.name for p in ws.config.projects if p.format == "sqlmesh"]
    )
    read: dict[str, Any] = dict(states or {})
    for p in wanted:
        if p not in read:
            read[p] = environment_state(ws, p, execution_time=execution_time)
    store = ws.state
    target = ws.target
    now = time.time()
    out: list[Observation] = []
    with store.transaction() as conn:
        for p in wanted:
            env = read[p]
            for nid, m in sorted(env.models.items()):
                tool_state = {
                    "snapshot": m.snapshot,
                    "last_altered_ts": m.last_altered_ts,
                    "environment": env.environment,
                }
                row = conn.execute(_BUILD_OBSERVED, (target, nid)).fetchone()
                what: str | None = None
                previous = 0
                if row is None:
                    if m.intervals:
                        what = "first seen in SQLMesh's state"
                else:
                    previous = int(row[0])
                    rec_intervals = _loads(row[2])
                    rec_state = _loads(row[3])
                    if rec_state is None:
                        # the runner's own record of a build: SQLMesh's state is that build's
                        conn.execute(
                            _ADOPT_TOOL_STATE,
                            (_dumps(tool_state), _dumps(m.intervals), target, nid),
                        )
                        continue
                    if rec_state.get("snapshot") != m.snapshot:
                        what = f"snapshot changed: {rec_state.get('snapshot')} -> {m.snapshot}"
                    elif (rec_intervals or []) != m.intervals:
                        what = f"intervals changed: {_span(rec_intervals)} -> {_span(m.intervals)}"
                    elif (m.last_altered_ts or 0) > (rec_state.get("last_altered_ts") or 0):
                        what = "evaluated again by SQLMesh (a run or a restatement outside Splice)"
                if what is None:
                    continue
                version, _ = _bump(
                    conn,
                    target=target,
                    node_id=nid,
                    reason="observed",
                    run_id=None,
                    fingerprint=m.fingerprint,
                    intervals=m.intervals,
                    tool_state={**tool_state, "what": what},
                    rows=None,
                    now=now,
                )
                out.append(Observation(nid, version, previous, what))
    return out


def _span(intervals: list[list[int]] | None) -> str:
    if not intervals:
        return "none"
    return describe_intervals(intervals)


# -- checks (tests and audits) that ran ------------------------------------------------------------
#: The content cache's kind for the code of each check as it last passed, per target: a check
#: whose code is new or changed since runs at the next plan on its own (as ``dbt build --select
#: state:modified+`` would), even when the node it checks is reused.
CHECKS_KIND = "check_runs"


def _check_key(target: str, node_id: str) -> str:
    return json.dumps([target, node_id])


def checks_seen(store: StateStore, target: str, node_ids: Iterable[str]) -> dict[str, str] | None:
    """node id -> the digest of its code when it last passed in ``target``; None when no
    check was ever recorded there (then nothing says which checks are new: a target built
    before checks were recorded plans them with their nodes only, until its next run)."""
    ids = list(node_ids)
    marker = _check_key(target, "*")
    found = store.cache_get_many(CHECKS_KIND, [marker, *(_check_key(target, n) for n in ids)])
    if marker not in found:
        return None
    return {n: str(found[_check_key(target, n)]) for n in ids if _check_key(target, n) in found}


def record_checks(store: StateStore, target: str, passed: Mapping[str, str]) -> None:
    """Record that the checks ``passed`` (node id -> the digest of their code) passed."""
    items: dict[str, object] = {_check_key(target, n): d for n, d in passed.items()}
    items[_check_key(target, "*")] = 1
    store.cache_put_many(CHECKS_KIND, items)
