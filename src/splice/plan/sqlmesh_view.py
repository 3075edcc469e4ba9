"""SQLMesh's own view of a project: what its plan would do, and what its state holds.

Inside a SQLMesh project SQLMesh is authoritative (DESIGN.md): Splice asks SQLMesh for a plan
*without applying it* (``Context.plan_builder(...).build()``, the same builder ``Context.plan``
uses before it applies) and reports, per model, the change category SQLMesh chose and the
intervals it would fill. It never second-guesses that view.

The clock
---------
A prod plan backfills from each model's ``start`` up to *now*, on each model's own ``cron``.
A workspace whose data lives in the past (the demo's Q3 2026) must pin that clock, or every
day since would look due.  :func:`resolve_execution_time` decides the clock a plan uses:

1. an explicit ``execution_time`` (``make_plan(..., execution_time=...)``, ``splice plan
   --execution-time``);
2. else, in a demo workspace, the ``execution_time`` the demo recorded in ``.splice/demo.json``
   (midnight after the last day of Q3 2026);
3. else none: SQLMesh uses the current time.

The plan is built with ``run=True``: intervals that ``sqlmesh run`` would evaluate (due by each
model's cron up to the execution time) count as missing, as well as those a change needs.

The view of one model (``NodeDecision.tool_view``)
--------------------------------------------------
``tool`` ("sqlmesh"), ``environment``, ``snapshot`` (identifier), ``kind``, ``cron``, ``start``,
``execution_time`` (ISO, or None for now), ``change`` (None, "added", "directly modified",
"indirectly modified", "metadata"), ``change_category`` (SQLMesh's category: "breaking",
"non-breaking", "forward-only", "indirect-breaking", "indirect-non-breaking", "metadata"; None
when unchanged or uncategorised), ``indirect_from`` (node ids), ``missing_intervals`` (merged
``[start_ms, end_ms)``), ``missing_interval_count`` (SQLMesh's own count), ``new_environment``,
``changes_data`` (false for a change after which the relation holds the same data: pass
``same_data=not changes_data`` to :func:`splice.plan.evidence.record_build`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from splice.errors import ProjectError
from splice.graph.model import Graph
from splice.plan.fingerprint import sqlmesh_fingerprint
from splice.plan.intervals import merge
from splice.plan.model import Action, Reason
from splice.plan.sqlmesh_kinds import missing_reason, unchanged_reason
from splice.support.capture import captured

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: SQLMesh's change categories as the plan prints them.
CATEGORY_NAMES = {
    1: "breaking",
    2: "non-breaking",
    3: "forward-only",
    4: "indirect-breaking",
    5: "indirect-non-breaking",
    6: "metadata",
}
#: Categories after which the model's relation holds the same data as before.
DATA_NEUTRAL = frozenset({"indirect-non-breaking", "metadata"})


def resolve_execution_time(
    ws: Workspace, explicit: datetime | date | str | None = None
) -> datetime | None:
    """The clock SQLMesh plans with (see the module docstring); ``None`` means now."""
    if explicit is not None:
        return _to_datetime(explicit)
    record = ws.splice_dir / "demo.json"
    if record.exists():
        try:
            value = json.loads(record.read_text()).get("execution_time")
        except (OSError, ValueError):
            value = None
        if value:
            return _to_datetime(value)
    return None


def _to_datetime(value: datetime | date | str) -> datetime:
    """
    >>> _to_datetime("2026-10-01")
    datetime.datetime(2026, 10, 1, 0, 0)
    """
    from splice.support.clock import parse_execution_time

    return parse_execution_time(value)


def tool_error(project: str, e: BaseException, what: str) -> Exception:
    """A SpliceError for a SQLMesh failure: the lock holder when DuckDB is locked."""
    from splice.support.faults_env import locked_error

    lock = locked_error(e, f"SQLMesh project {project!r}")
    if lock is not None:
        return lock
    text = " ".join(ln.strip() for ln in str(e).strip().splitlines()[:3] if ln.strip())
    return ProjectError(
        f"SQLMesh project {project!r} failed to {what}: {type(e).__name__}: {text}",
        fix="fix what SQLMesh names; `sqlmesh plan` in that directory shows the same; rerun with -v for SQLMesh's output",
    )


def _ids_by_fqn(graph: Graph, project: str) -> dict[str, str]:
    return {
        str(n.meta["fqn"]): n.id
        for n in graph.nodes.values()
        if n.project == project and n.tool == "sqlmesh" and n.meta.get("fqn")
    }


def _is_external(snapshot: Any) -> bool:
    kind = getattr(getattr(snapshot, "model", None), "kind", None)
    name = getattr(kind, "name", "")
    return str(getattr(name, "value", name)).upper() == "EXTERNAL"


def _kind(snapshot: Any) -> str:
    name = snapshot.model.kind.name
    return str(getattr(name, "value", name))


def _next_due(snapshot: Any, intervals: list[list[int]]) -> int | None:
    if not intervals:
        return None
    try:
        from splice.support.sqlmesh_import import import_sqlmesh

        import_sqlmesh()
        from sqlmesh.utils.date import to_timestamp

        return int(to_timestamp(snapshot.node.interval_unit.cron_next(intervals[-1][1])))
    except Exception:  # noqa: BLE001 - no bound known: the plan memo is then not used
        return None


def _never_due(snapshot: Any, intervals: list[list[int]]) -> bool:
    """True when SQLMesh never finds an interval of this model missing, whatever the clock:
    a model it never evaluates (EMBEDDED, without audits), a seed once loaded, a model filled
    up to its ``end``."""
    try:
        if not snapshot.evaluatable or (snapshot.is_seed and intervals):
            return True
        end = getattr(snapshot.node, "end", None)
        if end is None or not intervals:
            return False
        from sqlmesh.utils.date import to_timestamp

        return intervals[-1][1] >= int(to_timestamp(end))
    except Exception:  # noqa: BLE001 - not known: it may fall due (the memo then gives up)
        return False


# -- what SQLMesh's state holds ------------------------------------------------------------------
@dataclass
class ModelState:
    """A SQLMesh model as its environment holds it (from SQLMesh's state)."""

    node_id: str
    fqn: str
    snapshot: str  # snapshot identifier
    fingerprint: dict[str, str]
    intervals: list[list[int]]  # merged, [start_ms, end_ms)
    last_altered_ts: int | None
    missing: list[list[int]]  # merged intervals due by the execution time and not yet filled
    missing_count: int
    kind: str
    cron: str | None
    start: str | None
    # the earliest moment (ms) a new interval can fall due: the end of the last filled interval
    # plus one interval unit (a cron offset only makes it later); None when nothing is filled
    next_due: int | None = None
    # no interval of it ever falls due (see _never_due): it sets no bound on the plan memo
    never_due: bool = False

    @property
    def complete(self) -> bool:
        return not self.missing


@dataclass
class EnvironmentState:
    project: str
    environment: str
    exists: bool
    models: dict[str, ModelState] = field(default_factory=dict)  # node id -> state
    finalized: bool = False  # its last plan finished
    # snapshots SQLMesh would restamp rather than restore (its plan then has a change)
    unrestorable: set[str] = field(default_factory=set)
    audits: dict[str, str] = field(default_factory=dict)  # standalone audit -> snapshot id


def environment_state(
    ws: Workspace, project: str, *, execution_time: datetime | None = None
) -> EnvironmentState:
    """The models of ``project``'s environment for ``ws.target``, from SQLMesh's state."""
    env_name = ws.environment(project)
    prov = ws.provider(project)
    ids = _ids_by_fqn(ws.graph(), project)
    with captured(ws.log_path, f"sqlmesh state ({project})", cwd=prov.run_dir):
        try:
            env, snaps = prov.environment_snapshots(env_name)
        except ProjectError:
            raise
        except Exception as e:  # noqa: BLE001 - a state read failure names the project
            raise tool_error(project, e, "read its state") from e
    out = EnvironmentState(
        project,
        env_name,
        env is not None,
        finalized=env is not None and getattr(env, "finalized_ts", None) is not None,
    )
    from splice.support.sqlmesh_import import import_sqlmesh

    import_sqlmesh()
    from sqlmesh.utils.date import now

    et = execution_time or now()
    for s in snaps.values():
        if getattr(s, "unrestorable", False):
            out.unrestorable.add(s.name)
        if getattr(s, "is_audit", False):
            out.audits[s.name] = str(s.snapshot_id.identifier)
            continue
        nid = ids.get(s.name)
        if nid is None or not s.is_model or _is_external(s):
            continue
        intervals = merge(s.intervals)
        start = (
            s.node.start if s.node.start is not None else (intervals[0][0] if intervals else None)
        )
        raw_missing = s.missing_intervals(start, et, execution_time=et) if start is not None else []
        out.models[nid] = ModelState(
            node_id=nid,
            fqn=s.name,
            snapshot=str(s.snapshot_id.identifier),
            fingerprint=sqlmesh_fingerprint(s),
            intervals=intervals,
            last_altered_ts=getattr(s, "last_altered_ts", None),
            missing=merge(raw_missing),
            missing_count=len(raw_missing),
            kind=_kind(s),
            cron=getattr(s.node, "cron", None),
            start=str(s.node.start) if s.node.start is not None else None,
            next_due=_next_due(s, intervals),
            never_due=_never_due(s, intervals),
        )
    return out


# -- what SQLMesh's plan would do ----------------------------------------------------------------
@dataclass
class NodeView:
    """SQLMesh's plan for one model: build or reuse, why, and the raw view for the plan."""

    node_id: str
    action: Action  # build | reuse
    reasons: list[Reason]
    tool_view: dict[str, Any]
    fingerprint: dict[str, str]
    changes_data: bool  # after the build the relation holds different data (or schema)


@dataclass
class ProjectView:
    project: str
    environment: str
    new_environment: bool
    nodes: dict[str, NodeView] = field(default_factory=dict)  # selected models only
    # models SQLMesh would also backfill (upstream of the selection), node id -> intervals
    also_backfilled: dict[str, list[list[int]]] = field(default_factory=dict)
    seconds: float = 0.0


def plan_view(
    ws: Workspace,
    project: str,
    node_ids: list[str],
    *,
    execution_time: datetime | None = None,
    state: EnvironmentState | None = None,
) -> ProjectView:
    """SQLMesh's plan for ``node_ids`` of ``project`` in the target's environment, not applied.

    The selection is passed on as SQLMesh's ``select_models`` unless it is the whole project,
    so SQLMesh categorises exactly what a run of that selection would apply.  When ``state``
    (the environment as SQLMesh's state holds it) shows every local model's snapshot already in
    the finished environment, SQLMesh's plan could only be "no changes" plus the missing
    intervals the state names: the view is read from that state, without building the plan.
    """
    import time

    t0 = time.perf_counter()
    g = ws.graph()
    env_name = ws.environment(project)
    prov = ws.provider(project)
    ctx = prov.context
    ids = _ids_by_fqn(g, project)
    fqn_of = {v: k for k, v in ids.items()}
    wanted = {fqn_of[i] for i in node_ids if i in fqn_of}
    all_models = {
        fqn
        for fqn, m in ctx.models.items()
        if str(getattr(m.kind.name, "value", m.kind.name)).upper() != "EXTERNAL"
    }
    select_models = None if all_models <= wanted else sorted(wanted)
    same = _unchanged_view(ws, project, env_name, ids, wanted, state, execution_time)
    if same is not None:
        same.seconds = time.perf_counter() - t0
        return same
    kwargs: dict[str, Any] = {
        "skip_tests": True,
        "skip_linter": True,
        "run": True,
        "select_models": select_models,
    }
    if execution_time is not None:
        kwargs["execution_time"] = execution_time
    view = ProjectView(project, env_name, False)
    with captured(
        ws.log_path,
        f"sqlmesh plan, not applied ({project}, {env_name})",
        cwd=prov.run_dir,
    ):
        try:
            from splice.support.sqlmesh_import import import_sqlmesh

            import_sqlmesh()
            from sqlmesh.utils.errors import NoChangesPlanError

            try:
                plan = ctx.plan_builder(env_name, **kwargs).build()
            except NoChangesPlanError:
                plan = None
        except ProjectError:
            raise
        except Exception as e:  # noqa: BLE001 - SQLMesh's message names the model
            raise tool_error(project, e, "plan") from e
    if plan is None:  # a new dev environment with nothing to change: SQLMesh plans nothing
        for nid in node_ids:
            if nid in fqn_of:
                view.nodes[nid] = NodeView(
                    nid,
                    "reuse",
                    [
                        Reason(
                            "unchanged", f"SQLMesh: no changes to plan for environment {env_name!r}"
                        )
                    ],
                    {
                        "tool": "sqlmesh",
                        "environment": env_name,
                        "change": None,
                        "change_category": None,
                        "missing_intervals": [],
                        "missing_interval_count": 0,
                        "changes_data": False,
                    },
                    {},
                    False,
                )
        view.seconds = time.perf_counter() - t0
        return view

    diff = plan.context_diff
    view.new_environment = bool(diff.is_new_environment)
    by_name = {s.name: s for s in plan.snapshots.values()}
    missing: dict[str, list[list[int]]] = {}
    missing_count: dict[str, int] = {}
    for si in plan.missing_intervals:
        missing[si.snapshot_id.name] = merge(si.intervals)
        missing_count[si.snapshot_id.name] = len(si.intervals)
    direct = {s_id.name for s_id in plan.directly_modified}
    indirect_from: dict[str, list[str]] = {}
    for parent, children in plan.indirectly_modified.items():
        for c in children:
            indirect_from.setdefault(c.name, []).append(parent.name)
    added = {s_id.name for s_id in diff.added}
    metadata = {s_id.name for s_id in plan.metadata_updated}
    et_text = execution_time.isoformat() if execution_time is not None else None

    for fqn in sorted(wanted):
        nid = ids[fqn]
        snap = by_name.get(fqn)
        if snap is None:
            continue
        category_value = getattr(snap.change_category, "value", snap.change_category)
        category = CATEGORY_NAMES.get(int(category_value)) if category_value is not None else None
        if (
            category is not None
            and getattr(snap, "forward_only", False)
            and category in ("breaking", "non-breaking")
        ):
            category = "forward-only"
        change: str | None = None
        if fqn in added:
            change = "added"
        elif fqn in direct:
            change = "directly modified"
        elif fqn in indirect_from:
            change = "indirectly modified"
        elif fqn in metadata:
            change = "metadata"
        miss = missing.get(fqn, [])
        node = snap.node
        tool_view: dict[str, Any] = {
            "tool": "sqlmesh",
            "environment": env_name,
            "snapshot": str(snap.snapshot_id.identifier),
            "kind": _kind(snap),
            "cron": getattr(node, "cron", None),
            "start": str(node.start) if node.start is not None else None,
            "execution_time": et_text,
            "change": change,
            "change_category": category if change else None,
            "indirect_from": sorted(ids.get(p, p) for p in indirect_from.get(fqn, [])),
            "missing_intervals": miss,
            "missing_interval_count": missing_count.get(fqn, 0),
            "new_environment": view.new_environment,
        }
        reasons: list[Reason] = []
        changes_data = False
        if change == "added":
            reasons.append(
                Reason("sqlmesh_change", "SQLMesh: a new model", data={"change": change})
            )
            changes_data = True
        elif change is not None:
            label = category or "uncategorized (SQLMesh would ask which category)"
            text = f"SQLMesh: {label} change"
            if change == "indirectly modified" and tool_view["indirect_from"]:
                text += f", from {', '.join(tool_view['indirect_from'])}"
            elif change == "directly modified":
                text += " (directly modified)"
            reasons.append(
                Reason("sqlmesh_change", text, data={"change": change, "category": category})
            )
            changes_data = changes_data or category not in DATA_NEUTRAL
        if miss:
            reasons.append(missing_reason(tool_view["kind"], missing_count.get(fqn, 0), miss))
            changes_data = True
        if not reasons and view.new_environment:
            reasons.append(
                Reason(
                    "sqlmesh_change",
                    f"SQLMesh: environment {env_name!r} is new; the plan creates its views (no backfill)",
                    data={"change": "new_environment"},
                )
            )
            changes_data = True
        action: Action = "build" if reasons else "reuse"
        tool_view["changes_data"] = action == "build" and changes_data
        if not reasons:
            reasons.append(unchanged_reason(tool_view["kind"], env_name))
        view.nodes[nid] = NodeView(
            nid, action, reasons, tool_view, sqlmesh_fingerprint(snap), changes_data
        )

    for name, miss in missing.items():
        other = ids.get(name)
        if other is not None and name not in wanted:
            view.also_backfilled[other] = miss
    view.seconds = time.perf_counter() - t0
    return view


def _unchanged_view(
    ws: Workspace,
    project: str,
    env_name: str,
    ids: dict[str, str],
    wanted: set[str],
    state: EnvironmentState | None,
    execution_time: datetime | None,
) -> ProjectView | None:
    """The view when no local model differs from the environment (see :func:`plan_view`)."""
    if state is None or not state.exists:
        return None
    if not state.finalized:
        return None  # its last plan did not finish: SQLMesh's plan decides
    if state.unrestorable:
        return None  # SQLMesh restamps those models: its plan has a change
    local = ws.provider(project).local_snapshot_ids()
    held = {m.fqn: m.snapshot for m in state.models.values()}
    if local != held:
        return None  # a model added, removed or changed: SQLMesh's plan categorises it
    et_text = execution_time.isoformat() if execution_time is not None else None
    view = ProjectView(project, env_name, False)
    for fqn in sorted(wanted):
        m = state.models.get(ids[fqn])
        if m is None:
            return None
        tool_view: dict[str, Any] = {
            "tool": "sqlmesh",
            "environment": env_name,
            "snapshot": m.snapshot,
            "kind": m.kind,
            "cron": m.cron,
            "start": m.start,
            "execution_time": et_text,
            "change": None,
            "change_category": None,
            "indirect_from": [],
            "missing_intervals": m.missing,
            "missing_interval_count": m.missing_count,
            "new_environment": False,
            "from_state": True,
        }
        if m.missing:
            reasons = [missing_reason(m.kind, m.missing_count, m.missing)]
        else:
            reasons = [unchanged_reason(m.kind, env_name)]
        action: Action = "build" if m.missing else "reuse"
        tool_view["changes_data"] = bool(m.missing)
        view.nodes[m.node_id] = NodeView(
            m.node_id, action, reasons, tool_view, m.fingerprint, bool(m.missing)
        )
    # SQLMesh backfills what a selected model reads first: its upstream's missing intervals
    g = ws.graph()
    chosen = {ids[f] for f in wanted}
    for nid, m in state.models.items():
        if nid not in chosen and m.missing and g.descendants(nid) & chosen:
            view.also_backfilled[nid] = m.missing
    return view
