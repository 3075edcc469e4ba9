"""Changes inside the project: which run built which node with new code, from Splice's evidence.

Every successful build the runner records is a row of ``evidence_versions`` (state migration 2,
:mod:`splice.plan.evidence`): the node, the run, when, and the node's fingerprint, per
component (:mod:`splice.plan.fingerprint`).  Two consecutive versions of a node whose *own
code* components differ are a code change shipped by the later version's run:

- dbt models, seeds and snapshots: ``sql`` (dbt's checksum of the code; a seed's is the file's
  hash), ``config``, ``macros``, ``contract``;
- SQLMesh models: ``data`` and ``metadata`` (SQLMesh's own hashes of the model; the
  ``parent_*`` hashes and the snapshot id move when an upstream changes, which is no change of
  this node's code).

Nothing here is judged: a teammate's change is a fact Splice recorded.  The watch uses it to
measure again what such a change may have rewritten (:mod:`splice.watch.restated`), and the
diagnosis names the change and its run (:mod:`splice.watch.cause`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from splice.state.sql import statement

#: Fingerprint components that are a node's own code (the others follow its parents).
CODE_COMPONENTS = ("sql", "config", "macros", "contract", "data", "metadata")

_VERSIONS = statement(
    "SELECT node_id, version, reason, run_id, fingerprint, recorded_at FROM evidence_versions "
    "WHERE target = ? ORDER BY node_id, seq"
)
#: the versions of the nodes built since a time, with their whole history
_VERSIONS_SINCE = statement(
    "SELECT node_id, version, reason, run_id, fingerprint, recorded_at FROM evidence_versions "
    "WHERE target = ? AND node_id IN (SELECT node_id FROM evidence_versions WHERE target = ? "
    "AND recorded_at > ?) ORDER BY node_id, seq"
)
_LAST_MEASURED = statement("SELECT name, updated_at FROM watch_metrics WHERE target = ?")
_RUN_STARTED = statement(
    "SELECT data FROM run_events WHERE run_id = ? AND kind = 'run_started' ORDER BY seq LIMIT 1"
)


@dataclass(frozen=True)
class CodeChange:
    """A node built with code that differs from its previous build's."""

    node_id: str
    run_id: str | None
    version: int
    components: tuple[str, ...]  # which of CODE_COMPONENTS changed
    before: dict[str, str] = field(compare=False)  # component -> hash, previous build
    after: dict[str, str] = field(compare=False)  # component -> hash, this build
    recorded_at: float = 0.0
    reason: str = "build"  # build (a Splice run) | observed (SQLMesh state changed outside)

    @property
    def key(self) -> str:
        """What anomalies caused by this change are grouped by."""
        return f"{self.node_id}@{self.run_id or self.version}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node_id,
            "run_id": self.run_id,
            "version": self.version,
            "components": list(self.components),
            "before": {c: self.before.get(c) for c in self.components},
            "after": {c: self.after.get(c) for c in self.components},
            "recorded_at": datetime.fromtimestamp(self.recorded_at).isoformat(timespec="seconds"),
            "reason": self.reason,
        }


def code_components(old: dict[str, str], new: dict[str, str]) -> tuple[str, ...]:
    """The code components that differ between two fingerprints (a component missing from
    either says nothing: fingerprints recorded by other Splice versions may lack it).

    >>> code_components({"sql": "a", "config": "b", "parent_data": "x"},
    ...                 {"sql": "c", "config": "b", "parent_data": "y"})
    ('sql',)
    """
    return tuple(
        c for c in CODE_COMPONENTS if c in old and c in new and old[c] != new[c]
    )  # fmt: skip


def code_changes(
    conn: Any, target: str, *, since: float | None = None, nodes: set[str] | None = None
) -> list[CodeChange]:
    """The code changes of ``target`` recorded after ``since`` (all when None), of ``nodes``
    (all when None), oldest first."""
    if since is None:
        rows = conn.execute(_VERSIONS, (target,))
    else:  # only the nodes built since, with their whole history
        rows = conn.execute(_VERSIONS_SINCE, (target, target, since))
    out: list[CodeChange] = []
    prev: dict[str, dict[str, str]] = {}
    for node_id, version, reason, run_id, fp, at in rows:
        fingerprint = json.loads(fp) if fp else {}
        before = prev.get(node_id)
        prev[node_id] = fingerprint
        if before is None or (nodes is not None and node_id not in nodes):
            continue
        if since is not None and float(at) <= since:
            continue
        changed = code_components(before, fingerprint)
        if changed:
            out.append(CodeChange(node_id, run_id, int(version), changed, before, fingerprint,
                                  float(at), str(reason)))  # fmt: skip
    out.sort(key=lambda c: (c.recorded_at, c.node_id))
    return out


def last_measured(conn: Any, target: str) -> dict[str, float]:
    """spec name -> when a watch last stored it (``watch_metrics.updated_at``)."""
    rows = conn.execute(_LAST_MEASURED, (target,)).fetchall()
    return {str(n): float(t) for n, t in rows if t is not None}


def run_interval(conn: Any, run_id: str | None) -> date | None:
    """The last interval a run processed: the day before its execution time (the plan's
    ``execution_time`` in the journal's ``run_started`` event); None when not recorded."""
    if not run_id:
        return None
    row = conn.execute(_RUN_STARTED, (run_id,)).fetchone()
    try:
        et = json.loads(row[0]).get("execution_time") if row and row[0] else None
        return (datetime.fromisoformat(str(et)) - timedelta(days=1)).date() if et else None
    except (ValueError, TypeError):
        return None


def run_words(conn: Any, change: CodeChange) -> str:
    """``run r2026... (through 2026-09-30, at 2026-10-01T06:02:11)``: the run that shipped it."""
    if not change.run_id:
        return f"a change SQLMesh applied outside Splice (version {change.version})"
    through = run_interval(conn, change.run_id)
    at = datetime.fromtimestamp(change.recorded_at).isoformat(timespec="seconds")
    return (
        f"run {change.run_id} ("
        + (f"through {through.isoformat()}, " if through else "")
        + (f"built at {at})")
    )
