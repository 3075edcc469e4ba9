"""The plan memo: a plan whose SQLMesh models build nothing is kept, and given again while
nothing it rests on can have changed, without loading dbt or SQLMesh.

Such a plan (it may build dbt models: the demo's first plan builds finance, which Splice has
never seen built) rests on four things; the memo keeps a mark of each and is used only while
all four are the same and the clock has not reached a new interval:

1. **the code**: the graph key (:mod:`splice.workspace.graph_cache`: splice.toml, every file of every
   project, the dbt profiles, the environment variables the projects read, the tools' and
   Splice's versions, the target), with the selector and exclusion;
2. **Splice's evidence**: the newest relation version and attempt of the target (a run, an
   ingestion, a failure all move it);
3. **SQLMesh's state**: an order-independent checksum of its ``_intervals`` and
   ``_environments`` tables (a ``sqlmesh run`` or restatement by hand moves it), read in the
   warehouse, or in the DuckDB file of a project's own ``state_connection`` (as the demo on
   Spark keeps it: then no Spark session opens); a project whose own state connection is not
   a DuckDB file is never memoised;
4. **the clock**: the execution time is before the earliest moment a SQLMesh model can have a
   new interval due (the end of its last interval plus one interval unit); a model SQLMesh
   never finds missing (EMBEDDED, a seed once loaded, a model filled up to its ``end``) sets
   no bound.

Each selection keeps its own plan; a selection without one is given the whole workspace's
no-op plan (when it is valid) reduced to the selected nodes: nothing of a selection builds when
nothing of the workspace does.

A plan in which a SQLMesh model builds is never kept: SQLMesh's own plan of what is due moves
with the clock.  What the graph key cannot see (see :mod:`splice.workspace.graph_cache`) is not seen
here either: ``splice plan --fresh`` / ``splice run --fresh`` always plans from scratch.

>>> key_of({"a": 1}) == key_of({"a": 1}), key_of({"a": 1}) == key_of({"a": 2})
(True, False)
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from splice.plan.model import NodeDecision, Plan, Reason, Segment
from splice.providers.sqlmesh_state import state_probe
from splice.state.sql import statement

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

KIND = "noop_plan"
REUSED = "nothing changed since the plan of"  # how the memo's note begins

_VERSIONS_MARK = statement(
    "SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM evidence_versions WHERE target = ?"
)
_ATTEMPTS_MARK = statement(
    "SELECT COUNT(*), COALESCE(MAX(COALESCE(finished_at, started_at)), 0), "
    "GROUP_CONCAT(status) FROM evidence_attempts WHERE target = ?"
)


def key_of(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def code_key(ws: Workspace, selector: str | None, exclude: str | None) -> str:
    """The SHA-256 of everything the plan's code side reads (see the module docstring)."""
    return key_of([ws.inputs_key(), ws.target, selector, exclude])


def evidence_mark(ws: Workspace) -> list[Any]:
    conn = ws.state.conn
    v = conn.execute(_VERSIONS_MARK, (ws.target,)).fetchone()
    a = conn.execute(_ATTEMPTS_MARK, (ws.target,)).fetchone()
    return [list(v), list(a)]


def _now_ms(execution_time: datetime | None) -> int:
    if execution_time is None:
        return int(time.time() * 1000)
    t = execution_time if execution_time.tzinfo else execution_time.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def marks(
    ws: Workspace, code: str, state_files: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """The marks a remembered plan rests on, ``code`` being :func:`code_key`'s and
    ``state_files`` the DuckDB files of the SQLMesh projects' own state connections
    (:func:`state_files`)."""
    probe = state_probe(ws, state_files)
    if probe is None:
        return None
    return {
        "code": code,
        "evidence": evidence_mark(ws),
        "sqlmesh_state": probe,
        "state_files": dict(sorted((state_files or {}).items())),
    }


def state_files(ws: Workspace) -> dict[str, str] | None:
    """Project -> the DuckDB file of its own SQLMesh state connection, for each SQLMesh project
    that has one, asked of the loaded projects; None when one keeps its state elsewhere (then
    the memo cannot read it without loading SQLMesh)."""
    from splice.providers.sqlmesh_state import own_state_connection

    out: dict[str, str] = {}
    for spec in ws.config.projects:
        if spec.format == "sqlmesh" and own_state_connection(ws, spec):
            prov = ws.provider(spec.name)
            path = prov.state_file()
            if path is None:
                return None
            prov.release()  # SQLMesh's own connection to the file is closed: it is read next
            out[spec.name] = path
    return out


def _valid(hit: Any, now: dict[str, Any], execution_time: datetime | None) -> bool:
    if not isinstance(hit, dict) or hit.get("marks") != now:
        return False
    due = hit.get("valid_until")
    return due is None or _now_ms(execution_time) < int(due)


def lookup(
    ws: Workspace,
    selector: str | None,
    exclude: str | None,
    execution_time: datetime | None,
    code: str,
) -> Plan | None:
    """The memoised no-op plan, if every mark is unchanged and no interval fell due.

    A selection (or exclusion) with no plan of its own kept is given the no-op plan of the
    whole workspace, when that one is valid, reduced to the selected nodes: when nothing of
    the workspace builds, nothing of any selection does (the graph comes from the graph
    cache: still no tool is loaded)."""
    t0 = time.perf_counter()
    key = key_of([ws.target, selector, exclude])
    whole = key_of([ws.target, None, None])
    keys = [key] if key == whole else [key, whole]
    found = ws.state.cache_get_many(KIND, keys)
    taken: dict[str, dict[str, Any] | None] = {}

    def now_for(entry: Any) -> dict[str, Any] | None:
        """The marks as they are now, read where ``entry``'s plan read them."""
        files = (entry.get("marks") or {}).get("state_files") if isinstance(entry, dict) else None
        files = files if isinstance(files, dict) else {}
        k = json.dumps(files, sort_keys=True)
        if k not in taken:
            taken[k] = marks(ws, code, files)
        return taken[k]

    hit = found.get(key)
    plan: Plan | None = None
    now = now_for(hit)
    if now is not None and _valid(hit, now, execution_time):
        plan = plan_from_dict(hit["plan"])  # type: ignore[index]
    elif key != whole:
        hit = found.get(whole)
        now = now_for(hit)
        whole_now = {**now, "code": code_key(ws, None, None)} if now is not None else None
        if whole_now is not None and _valid(hit, whole_now, execution_time):
            kept = plan_from_dict(hit["plan"])  # type: ignore[index]
            if not kept.to_build:
                plan = _reduced(ws, kept, selector, exclude)
    if plan is None:
        return None
    assert isinstance(hit, dict)
    due = hit.get("valid_until")
    made = datetime.fromtimestamp(float(hit["made_at"]), tz=UTC)
    until = (
        f"; no SQLMesh interval falls due before "
        f"{datetime.fromtimestamp(int(due) / 1000, tz=UTC):%Y-%m-%d %H:%M} UTC"
        if due is not None
        else ""
    )
    plan.warnings = [
        *plan.warnings,
        f"{REUSED} {made:%Y-%m-%d %H:%M:%S} UTC (project files, "
        f"Splice's evidence and SQLMesh's state are the same{until}): that plan is reused "
        "without loading the tools (--fresh plans from scratch)",
    ]
    plan.timings = {"memo": round(time.perf_counter() - t0, 4)}
    if execution_time is not None:
        plan.execution_time = execution_time.isoformat()
    plan.memo = {"code": code, "exclude": exclude}  # a run of it remembers what follows
    plan.created_at = time.time()
    return plan


def _reduced(ws: Workspace, plan: Plan, selector: str | None, exclude: str | None) -> Plan:
    """The whole workspace's no-op ``plan`` as the plan of ``selector`` / ``exclude``."""
    from splice.graph.selectors import select

    chosen = set(select(ws.graph(), selector, exclude=exclude))
    plan.decisions = {n: d for n, d in plan.decisions.items() if n in chosen}
    plan.segments = []
    plan.selector = selector
    plan.warnings = [w for w in plan.warnings if any(n in w for n in plan.decisions)]
    return plan


def remember(
    ws: Workspace,
    plan: Plan,
    selector: str | None,
    exclude: str | None,
    next_due: dict[str, int | None],
    code: str,
) -> str | None:
    """Keep ``plan`` when no SQLMesh model builds in it and the next due time of every SQLMesh
    model that can fall due is known (``next_due``: node id -> ms; a model that never falls due
    is left out of it). ``code`` is the :func:`code_key` taken before the plan read the
    projects. None when kept, else why not, in words."""
    formats = {p.name: p.format for p in ws.config.projects}
    if any(formats.get(plan.decisions[n].project) == "sqlmesh" for n in plan.to_build):
        return "a SQLMesh model builds in it"
    unknown = sorted(n for n, d in next_due.items() if d is None)
    if unknown:
        return (
            f"SQLMesh cannot say when {unknown[0]}"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
            + " next falls due (no interval of it is filled)"
        )
    files = state_files(ws)
    now = marks(ws, code, files) if files is not None else None
    if now is None:
        return (
            "SQLMesh's state cannot be read without loading SQLMesh (a state_connection of its "
            "own that is not a DuckDB file, or a warehouse other than DuckDB or PostgreSQL "
            "holding it)"
        )
    key = key_of([ws.target, selector, exclude])
    dues = [d for d in next_due.values() if d is not None]
    ws.state.cache_put_many(KIND, {key: {
        "marks": now,
        "valid_until": min(dues) if dues else None,
        "made_at": time.time(),
        "plan": plan.to_dict(),
    }})  # fmt: skip
    return None


def plan_from_dict(d: dict[str, Any]) -> Plan:
    """The inverse of :meth:`Plan.to_dict`."""
    decisions = {
        nid: NodeDecision(
            node_id=v["node_id"],
            project=v["project"],
            action=v["action"],
            reasons=[
                Reason(
                    r["code"],
                    r["text"],
                    r.get("upstream"),
                    tuple(r.get("components") or ()),
                    dict(r.get("data") or {}),
                )  # fmt: skip
                for r in v.get("reasons") or []
            ],
            fingerprint=dict(v.get("fingerprint") or {}),
            tool_view=dict(v.get("tool_view") or {}),
            inputs=list(v.get("inputs") or []),
        )
        for nid, v in d["decisions"].items()
    }
    return Plan(
        target=d["target"],
        environments=dict(d["environments"]),
        decisions=decisions,
        segments=[Segment(**s) for s in d.get("segments") or []],
        selector=d.get("selector"),
        created_at=float(d.get("created_at") or 0.0),
        warnings=list(d.get("warnings") or []),
        execution_time=d.get("execution_time"),
        timings={},
    )
