"""``splice review``: a pull request's change, across tools, before it merges.

1. **What changed**, per project, in each tool's own terms: SQLMesh's plan of the head against
   its prod environment (the change category of every model), and dbt's ``state:modified``
   selectors (body, configs, contract, macros, relation, persisted descriptions, new) against
   the base commit's manifest, parsed from a temporary checkout of the base.
2. **The impact across tools**, column by column: the output columns each changed model computes
   differently (:mod:`splice.review.columns`), walked downstream through the workspace's column
   lineage to every column, declared metric and dashboard they reach (:mod:`.impact`).
3. **The data impact**: the changed models and the downstream models they reach are built for
   the head in the review target (``[review] target``: a SQLMesh virtual environment, a dbt
   target; dbt defers what it does not build to prod), then compared with prod model by model
   and metric by metric (:mod:`.data`).  The review environment is dropped afterwards unless
   ``keep``.

The review reads the checked-out work tree as the head: it must be clean (what is reviewed is
what is committed), and ``head`` may only name that commit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from splice.errors import ReviewError
from splice.review.columns import ColumnDiff, compare
from splice.review.git import repo_of

Progress = Callable[[str], None]

#: dbt's state:modified sub-selectors, in the order a reviewer reads them.
DBT_REASONS = ("body", "configs", "contract", "macros", "relation", "persisted_descriptions")
#: Changes after which a model holds the same data (nothing to build).
METADATA = frozenset({"metadata", "indirect-non-breaking"})


@dataclass
class NodeChange:
    node: str
    project: str
    tool: str
    change: str  # added | modified | removed | indirect | metadata
    category: str | None = None  # SQLMesh's change category; dbt: "modified" / "new"
    reasons: list[str] = field(default_factory=list)
    path: str | None = None
    columns: ColumnDiff | None = None

    @property
    def changes_data(self) -> bool:
        if self.change in ("removed", "metadata", "indirect"):
            return False
        if self.tool == "sqlmesh":
            return self.category not in METADATA
        return bool(set(self.reasons) - {"persisted_descriptions"})

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "project": self.project,
            "tool": self.tool,
            "change": self.change,
            "category": self.category,
            "reasons": self.reasons,
            "path": self.path,
            "changes_data": self.changes_data,
            "columns": self.columns.to_dict() if self.columns else None,
        }


@dataclass
class Review:
    base: str
    head: str
    base_ref: str
    subject: str
    files: list[str] = field(default_factory=list)
    changes: list[NodeChange] = field(default_factory=list)
    impact: Any = None  # splice.review.impact.Impact
    build: list[str] = field(default_factory=list)  # what the data step builds and compares
    not_compared: list[str] = field(default_factory=list)  # beyond [review] max_models
    data: dict[str, Any] | None = None  # run, models, metrics, environment, cleaned
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    comment_limit: int = 60_000  # [review] comment_limit: the most a --markdown comment prints

    @property
    def breaking(self) -> list[str]:
        """Changed models whose existing columns change or disappear where something reads them:
        SQLMesh's own breaking / forward-only categories, and any model whose changed columns
        reach a downstream column, metric or dashboard."""
        out = [
            c.node
            for c in self.changes
            if c.change != "indirect"
            and (c.category in ("breaking", "forward-only") or c.change == "removed")
        ]
        reached = self.impact.columns if self.impact is not None else []
        for c in self.changes:
            touched = c.columns is not None and (c.columns.changed or c.columns.removed)
            if touched and any(r.path and r.path[0].startswith(c.node + ".") for r in reached):
                out.append(c.node)
        return sorted(set(out))

    @property
    def metric_changes(self) -> list[str]:
        if not self.data:
            return []
        return sorted({m["name"] for m in self.data.get("metrics", []) if m.get("changed")})

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "base_ref": self.base_ref,
            "subject": self.subject,
            "files": self.files,
            "changes": [c.to_dict() for c in self.changes],
            "breaking": self.breaking,
            "impact": self.impact.to_dict() if self.impact is not None else None,
            "build": self.build,
            "not_compared": self.not_compared,
            "data": self.data,
            "metric_changes": self.metric_changes,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "notes": self.notes,
        }


def _say(progress: Progress | None, text: str) -> None:
    if progress is not None:
        progress(text)


def review(
    root: Path | str,
    *,
    base: str,
    head: str | None = None,
    data: bool = True,
    keep: bool = False,
    target: str | None = None,
    execution_time: Any = None,
    progress: Progress | None = None,
) -> Review:
    """Review the checked-out commit of the workspace at ``root`` against ``base``.

    ``execution_time`` pins SQLMesh's clock for its plan and the build (as ``splice plan
    --execution-time`` does); by default a demo workspace's recorded clock, else now."""
    from splice.config import load_config

    t_all = time.perf_counter()
    root = Path(root).resolve()
    repo = repo_of(root)
    head_sha = repo.head()
    if head is not None and repo.resolve(head, "--head") != head_sha:
        raise ReviewError(
            f"--head {head!r} is not the checked-out commit ({head_sha[:12]}): splice review "
            "builds and reads the work tree, so it reviews what is checked out.",
            fix=f"check it out first (git switch --detach {head}), or leave out --head",
        )
    base_sha = repo.resolve(base, "--base")
    config = load_config(root)
    dirty = repo.dirty(_own_files(root, config))
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ReviewError(
            f"the work tree has uncommitted changes ({shown}): a review compares commits.",
            fix="commit them (git commit -am ...) or set them aside (git stash -u), then rerun",
        )
    review_target = target or config.review.target
    _check_target(config, review_target, root)
    out = Review(base_sha, head_sha, base, repo.subject(head_sha))
    out.comment_limit = config.review.comment_limit
    out.files = repo.changed_files(base_sha, head_sha)
    if not out.files:
        out.notes.append(f"no file of the workspace differs between {base} and HEAD")
        out.timings["total"] = time.perf_counter() - t_all
        return out
    from contextlib import nullcontext

    from splice.workspace import Workspace

    prod = config.workspace.default_target
    with Workspace.open(root, prod) as head_ws:
        t0 = time.perf_counter()
        _say(progress, "loading the head (the work tree)")
        head_graph = head_ws.graph()
        out.timings["load_head"] = time.perf_counter() - t0
        # the base is checked out only when a dbt project's files changed: dbt compares with
        # the base's manifest; SQLMesh compares with its prod environment, in its state
        touched = _touched_projects(config, root, repo.top, out.files)
        dbt_touched = [p.name for p in config.projects if p.format == "dbt" and p.name in touched]
        checkout = repo.checkout(base_sha) if dbt_touched else nullcontext(None)
        with checkout as base_root:
            old = _Base(base_root, prod, dbt_touched)
            try:
                t0 = time.perf_counter()
                if base_root is not None:
                    _say(
                        progress, f"parsing the base ({base_sha[:12]}) of {', '.join(dbt_touched)}"
                    )
                old.load()
                out.timings["load_base"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                _say(progress, "asking SQLMesh and dbt what changed")
                out.changes = _changes(head_ws, old, head_graph, execution_time)
                out.timings["changes"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                _say(progress, "comparing the changed models' columns")
                lineage = _lineage(head_ws, head_graph, out.changes)
                _column_diffs(head_ws, old, head_graph, out.changes, lineage)
                out.timings["columns"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                out.impact = _impact(head_ws, head_graph, out.changes, lineage)
                out.timings["impact"] = time.perf_counter() - t0
                out.build, out.not_compared = _build_set(
                    head_graph, out.changes, out.impact, config.review.max_models
                )
                if data and out.build:
                    from splice.review.environment import build_and_compare

                    t0 = time.perf_counter()
                    out.data = build_and_compare(
                        root,
                        head_ws,
                        review_target,
                        out.build,
                        defer=_defer_dirs(head_ws, old),
                        keep=keep,
                        execution_time=execution_time,
                        progress=progress,
                    )
                    out.timings["data"] = time.perf_counter() - t0
                elif not data:
                    out.notes.append("data impact not computed (--no-data)")
                else:
                    out.notes.append("nothing to build: no change alters data")
            finally:
                old.close()
    out.timings["total"] = time.perf_counter() - t_all
    return out


def _own_files(root: Path, config: Any) -> list[Path]:
    """What Splice writes in a workspace (never a change under review)."""
    ws = config.workspace
    out = [root / ".splice", root / ws.witness, root / ws.state]
    out.append((root / ws.witness).parent / f".{Path(ws.witness).name}.lock")
    if config.warehouse.type == "duckdb" and config.warehouse.path:
        wh = root / config.warehouse.path
        out += [wh, wh.with_name(wh.name + ".wal")]
    return out


def _touched_projects(config: Any, root: Path, top: Path, files: list[str]) -> set[str]:
    """The projects with a file among ``files`` (paths from the repository's top)."""
    out = set()
    for p in config.projects:
        path = (root / p.path).resolve()
        for f in files:
            if (top / f).resolve().is_relative_to(path):
                out.add(p.name)
                break
    return out


class _Base:
    """The base commit's side: its dbt projects parsed from a temporary checkout (their
    manifests are dbt's ``--state``; their nodes tell what was removed and render the old SQL)."""

    def __init__(self, root: Path | None, prod: str, dbt_projects: list[str]) -> None:
        self.root = root
        self.prod = prod
        self.dbt_projects = dbt_projects
        self.ws: Any = None
        self.nodes: dict[str, dict[str, Any]] = {}  # project -> node id -> Node
        self.missing: set[str] = set()  # touched projects the base does not have

    def load(self) -> None:
        if self.root is None:
            return
        from splice.config import CONFIG_FILE
        from splice.workspace import Workspace

        if not (self.root / CONFIG_FILE).exists():
            self.missing = set(self.dbt_projects)
            return
        self.ws = Workspace.open(self.root, self.prod, use_cache=False)
        known = {p.name: p for p in self.ws.config.projects}
        for name in self.dbt_projects:
            spec = known.get(name)
            if spec is None or spec.format != "dbt" or not (self.root / spec.path).is_dir():
                self.missing.add(name)
                continue
            self.nodes[name] = {n.id: n for n in self.ws.provider(name).load()}

    def state_dir(self, project: str) -> Path | None:
        if self.ws is None or project not in self.nodes:
            return None
        prov = self.ws.provider(project)
        return Path(prov.work / "target" / prov.ctx.environment)

    def render(self, project: str, node_ids: list[str]) -> dict[str, Any]:
        nodes = [self.nodes[project][i] for i in node_ids if i in self.nodes.get(project, {})]
        return self.ws.provider(project).render(nodes) if nodes else {}

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()


def _check_target(config: Any, name: str, root: Path) -> None:
    from splice.config import CONFIG_FILE

    prod = config.workspace.default_target
    if name not in config.targets:
        raise ReviewError(
            f"{root / CONFIG_FILE}: the review target {name!r} is not defined: the head is "
            "built in it, apart from prod.",
            fix=f"add [targets.{name}.environments] mapping each project to an environment of "
            f"its own (a SQLMesh environment, a dbt target), or pass --target / set "
            "[review] target",
        )
    if name == prod:
        raise ReviewError(
            f"the review target {name!r} is the prod target: a review never builds in prod.",
            fix="set [review] target (or --target) to a target of its own",
        )
    for p in config.projects:
        if config.environment_for(p.name, name) == config.environment_for(p.name, prod):
            raise ReviewError(
                f"{root / CONFIG_FILE}: target {name!r} maps project {p.name!r} to its prod "
                f"environment ({config.environment_for(p.name, prod)!r}): the review would "
                "build over prod.",
                fix=f"map {p.name} to an environment of its own in [targets.{name}.environments]",
            )


# -- 1. what changed ----------------------------------------------------------------------------
def _changes(head_ws: Any, base: _Base, head: Any, execution_time: Any = None) -> list[NodeChange]:
    from splice.plan.fingerprint import is_buildable

    out: list[NodeChange] = []
    for spec in head_ws.config.projects:
        ids = [n.id for n in head.nodes.values() if n.project == spec.name and is_buildable(n)]
        if spec.format == "sqlmesh":
            out += _sqlmesh_changes(head_ws, head, spec.name, ids, execution_time)
        elif spec.name in base.missing:
            out += [_added(head, i) for i in ids]
        elif spec.name in base.nodes:
            out += _dbt_changes(head_ws, base, head, spec.name)
            for nid, n in sorted(base.nodes[spec.name].items()):
                if nid not in head.nodes and is_buildable(n) and n.kind == "model":
                    out.append(NodeChange(nid, n.project, n.tool, "removed", path=n.path))
    return out


def _added(graph: Any, nid: str) -> NodeChange:
    n = graph.nodes[nid]
    return NodeChange(nid, n.project, n.tool, "added", "new", ["new"], n.path)


def _sqlmesh_changes(
    ws: Any, graph: Any, project: str, ids: list[str], execution_time: Any = None
) -> list[NodeChange]:
    from splice.plan.sqlmesh_view import plan_view, resolve_execution_time

    view = plan_view(ws, project, ids, execution_time=resolve_execution_time(ws, execution_time))
    out = []
    for nid, nv in sorted(view.nodes.items()):
        tv = nv.tool_view
        change, category = tv.get("change"), tv.get("change_category")
        if change is None:
            continue
        n = graph.nodes[nid]
        kind = {
            "added": "added",
            "directly modified": "modified",
            "indirectly modified": "indirect",
            "metadata": "metadata",
        }.get(str(change), "modified")
        if kind == "modified" and category == "metadata":
            kind = "metadata"
        reasons = [str(change)]
        if tv.get("indirect_from"):
            reasons.append("from " + ", ".join(tv["indirect_from"]))
        out.append(NodeChange(nid, project, "sqlmesh", kind, category, reasons, n.path))
    for nid in sorted(_prod_models(ws, project)):
        if nid not in graph.nodes:  # in prod, gone from the head
            out.append(NodeChange(nid, project, "sqlmesh", "removed", reasons=["removed"]))
    return out


def _prod_models(ws: Any, project: str) -> dict[str, Any]:
    """node id -> the snapshot of each model in ``project``'s prod environment (what SQLMesh's
    plan compares the head with)."""
    from splice.providers.sqlmesh import _short_name

    prov = ws.provider(project)
    cached = getattr(prov, "_review_prod_models", None)
    if cached is not None:
        return dict(cached)
    _env, snaps = prov.environment_snapshots(ws.environment(project))
    default_catalog = (prov.context.default_catalog or "").lower() or None
    out = {}
    for s in snaps.values():
        if not getattr(s, "is_model", False) or getattr(s, "is_audit", False):
            continue
        kind = getattr(s.model.kind.name, "value", s.model.kind.name)
        if str(kind).upper() == "EXTERNAL":
            continue
        out[f"{project}:{_short_name(s.model, default_catalog)}"] = s
    prov._review_prod_models = out
    return dict(out)


def _prod_sql(ws: Any, project: str, node_ids: list[str]) -> dict[str, Any]:
    """node id -> the prod version's SQL as SQLMesh renders it (against model names)."""
    from splice.providers.base import RenderedSQL

    prov = ws.provider(project)
    snaps = _prod_models(ws, project)
    out: dict[str, Any] = {}
    for nid in node_ids:
        s = snaps.get(nid)
        if s is None:
            continue
        model = s.model
        dialect = model.dialect or ws.dialect
        try:
            q = model.render_query_or_raise(engine_adapter=prov.context.engine_adapter)
            out[nid] = RenderedSQL(nid, q.sql(dialect=dialect), dialect)
        except Exception as e:  # noqa: BLE001 - not comparable: every column counts as changed
            out[nid] = RenderedSQL(nid, None, dialect, f"SQLMesh could not render it: {e}")
    return out


def _dbt_changes(head_ws: Any, base: _Base, graph: Any, project: str) -> list[NodeChange]:
    state_dir = base.state_dir(project)
    assert state_dir is not None
    prov = head_ws.provider(project)
    prov._parse()
    by_uid = {
        str(n.meta.get("unique_id")): n.id
        for n in graph.nodes.values()
        if n.project == project and n.meta.get("unique_id")
    }

    def listed(*selectors: str) -> set[str]:
        res = prov.invoke(
            prov._args("ls")
            + ["--select", *selectors, "--state", str(state_dir)]
            + ["--resource-types", "model", "seed", "snapshot"]
            + ["--output", "json", "--output-keys", "unique_id"],
            label=f"list {' '.join(selectors)}",
        )
        out = set()
        for line in res.result or []:
            text = str(line).strip()
            uid = json.loads(text).get("unique_id") if text.startswith("{") else text
            if str(uid) in by_uid:
                out.add(by_uid[str(uid)])
        return out

    # one listing first: most pull requests leave most projects alone
    if not listed("state:modified", "state:new"):
        return []
    found: dict[str, list[str]] = {}
    for reason in ("new", *DBT_REASONS):
        for nid in listed("state:new" if reason == "new" else f"state:modified.{reason}"):
            found.setdefault(nid, []).append(reason)
    out = []
    for nid in sorted(found):
        n = graph.nodes[nid]
        reasons = found[nid]
        if "new" in reasons:
            out.append(NodeChange(nid, project, "dbt", "added", "new", ["new"], n.path))
            continue
        kind = "metadata" if set(reasons) <= {"persisted_descriptions"} else "modified"
        out.append(NodeChange(nid, project, "dbt", kind, "modified", reasons, n.path))
    return out


# -- 2. columns and impact ---------------------------------------------------------------------------
def _lineage(ws: Any, graph: Any, changes: list[NodeChange]) -> Any:
    """Column lineage of the changed models and of every model downstream of them (what the
    impact walks); what they read beyond that takes its columns from the warehouse."""
    from splice.lineage_service import workspace_lineage

    starts = [c.node for c in changes if c.changes_data and c.node in graph.nodes]
    scope = set(starts)
    for nid in starts:
        scope |= graph.descendants(nid)
    return workspace_lineage(ws, only=scope)


def _column_diffs(
    head_ws: Any, base: _Base, head: Any, changes: list[NodeChange], lineage: Any
) -> None:
    from splice.lineage_service import rendered_sql
    from splice.review.columns import shapes

    direct = [c for c in changes if c.change in ("modified", "added") and c.changes_data]
    direct = [c for c in direct if head.nodes[c.node].kind == "model"]
    if not direct:
        return
    head_sql = rendered_sql(head_ws, head, [c.node for c in direct])
    base_sql: dict[str, Any] = {}
    formats = {p.name: p.format for p in head_ws.config.projects}
    for project in sorted({c.project for c in direct}):
        ids = [c.node for c in direct if c.project == project and c.change == "modified"]
        if formats.get(project) == "sqlmesh":
            base_sql.update(_prod_sql(head_ws, project, ids))
        elif project in base.nodes:
            base_sql.update(base.render(project, ids))
    schema = _schema(head_ws, head, lineage)
    for c in direct:
        sql, dialect, _opaque = head_sql.get(c.node, (None, head_ws.dialect, "not rendered"))
        b = base_sql.get(c.node)
        if b is None:  # a new model: every column is new
            s = shapes(sql, dialect=dialect, schema=schema, default_catalog=head_ws.default_catalog)
            c.columns = ColumnDiff(added=list(s.columns), opaque=s.opaque)
            continue
        c.columns = compare(
            b.sql, sql, dialect=dialect, schema=schema, default_catalog=head_ws.default_catalog
        )


def _schema(ws: Any, graph: Any, wl: Any) -> dict[str, Any]:
    """``{catalog: {schema: {table: {column: type}}}}`` of every relation whose columns are
    known: in the warehouse, in the tools' metadata, and output by a model of ``wl``."""
    from splice.lineage_service import warehouse_columns

    nested: dict[str, Any] = {}

    def put(rel: Any, cols: dict[str, str]) -> None:
        if rel is None or not cols:
            return
        nested.setdefault(rel.catalog or "", {}).setdefault(rel.schema, {})[rel.name] = cols

    for rel, cols in warehouse_columns(ws).items():
        put(rel, cols)
    for n in graph.nodes.values():
        for rel in [*n.all_writes, *(n.reads if n.kind in ("source", "external") else [])]:
            put(rel, {k.lower(): v for k, v in n.columns.items()})
    for nid, ml in wl.models.items():
        n = graph.nodes.get(nid)
        if n is not None and ml.columns:
            put(n.writes, {c: "" for c in ml.columns})
    return nested


def _impact(ws: Any, graph: Any, changes: list[NodeChange], wl: Any) -> Any:
    from splice.lineage_service import writers_map
    from splice.review.impact import OPAQUE, reach
    from splice.watch.metrics import watch_specs

    starts: dict[str, list[str]] = {}
    for c in changes:
        d = c.columns
        if d is None or not c.changes_data:
            continue
        if d.opaque or d.rows:
            starts[c.node] = [OPAQUE] if d.opaque and not d.changed else list(d.changed)
        elif d.changed or d.removed:
            starts[c.node] = [*d.changed, *d.removed]
    try:
        specs = watch_specs(ws)
    except Exception:  # noqa: BLE001 - a metric that no longer fits is the metric step's news
        specs = []
    return reach(graph, wl.models, writers_map(graph, ws.dialect), starts, specs)


def _build_set(
    graph: Any, changes: list[NodeChange], impact: Any, limit: int
) -> tuple[list[str], list[str]]:
    """The models the data step builds: the changes that alter data, then the downstream models
    they reach, nearest first; at most ``limit`` (the rest are named, not compared)."""
    from splice.plan.fingerprint import is_buildable

    wanted = [c.node for c in changes if c.changes_data and c.node in graph.nodes]
    dist: dict[str, int] = {}
    for r in impact.columns:
        dist[r.node] = min(dist.get(r.node, 99), len(r.path))
    wanted += [n for n in sorted(dist, key=lambda n: (dist[n], n)) if n not in wanted]
    wanted = [n for n in wanted if is_buildable(graph.nodes[n])]
    chosen, rest = wanted[:limit], wanted[limit:]
    return graph.topological_order(chosen), rest


def _defer_dirs(head_ws: Any, base: _Base) -> dict[str, Path]:
    """dbt project -> the directory of the prod manifest its review build defers to: the base's
    (parsed from its checkout), or, for a project this change leaves alone, the head's own prod
    manifest (the same files)."""
    out: dict[str, Path] = {}
    for p in head_ws.config.projects:
        if p.format != "dbt" or p.name in base.missing:
            continue
        path = base.state_dir(p.name)
        if path is None:
            prov = head_ws.provider(p.name)
            prov._parse()
            path = Path(prov.work / "target" / prov.ctx.environment)
        if (path / "manifest.json").exists():
            out[p.name] = path
    return out


def recent_start(last: date, intervals: int, grain: str) -> date:
    """The first day of the last ``intervals`` intervals ending at ``last``.

    >>> recent_start(date(2026, 9, 30), 14, "day")
    datetime.date(2026, 9, 17)
    """
    days = {"day": 1, "week": 7, "month": 31, "quarter": 92, "year": 366}.get(grain, 1)
    return last - timedelta(days=days * intervals - 1)
