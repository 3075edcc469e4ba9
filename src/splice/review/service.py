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
    progress: Progress | None = None,
) -> Review:
    """Review the checked-out commit of the workspace at ``root`` against ``base``."""
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
    dirty = repo.dirty()
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ReviewError(
            f"the work tree has uncommitted changes ({shown}): a review compares commits.",
            fix="commit them (git commit -am ...) or set them aside (git stash -u), then rerun",
        )
    config = load_config(root)
    review_target = target or config.review.target
    _check_target(config, review_target, root)
    out = Review(base_sha, head_sha, base, repo.subject(head_sha))
    out.files = repo.changed_files(base_sha, head_sha)
    if not out.files:
        out.notes.append(f"no file of the workspace differs between {base} and HEAD")
        out.timings["total"] = time.perf_counter() - t_all
        return out
    from splice.workspace import Workspace

    prod = config.workspace.default_target
    with Workspace.open(root, prod) as head_ws, repo.checkout(base_sha) as base_root:
        t0 = time.perf_counter()
        _say(progress, f"loading the base ({base_sha[:12]}) from a temporary checkout")
        base_ws = _open_base(base_root, prod)
        try:
            base_graph = base_ws.load_graph() if base_ws is not None else None
            _say(progress, "loading the head (the work tree)")
            head_graph = head_ws.graph()
            out.timings["load"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            _say(progress, "asking SQLMesh and dbt what changed")
            out.changes = _changes(head_ws, base_ws, head_graph, base_graph)
            out.timings["changes"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            _say(progress, "comparing the changed models' columns")
            _column_diffs(head_ws, base_ws, head_graph, base_graph, out.changes)
            out.impact = _impact(head_ws, head_graph, out.changes)
            out.timings["impact"] = time.perf_counter() - t0
            out.build, out.not_compared = _build_set(
                head_graph, out.changes, out.impact, config.review.max_models
            )
            if data and out.build:
                from splice.review.environment import build_and_compare

                t0 = time.perf_counter()
                defer = _defer_dirs(base_ws, config)
                out.data = build_and_compare(
                    root,
                    head_ws,
                    review_target,
                    out.build,
                    defer=defer,
                    keep=keep,
                    progress=progress,
                )
                out.timings["data"] = time.perf_counter() - t0
            elif not data:
                out.notes.append("data impact not computed (--no-data)")
            else:
                out.notes.append("nothing to build: no change alters data")
        finally:
            if base_ws is not None:
                base_ws.close()
    out.timings["total"] = time.perf_counter() - t_all
    return out


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


def _open_base(base_root: Path, prod: str) -> Any:
    """The base's workspace (its tools, no Splice state), or None when the base has none."""
    from splice.config import CONFIG_FILE
    from splice.workspace import Workspace

    if not (base_root / CONFIG_FILE).exists():
        return None
    return Workspace.open(base_root, prod, use_cache=False)


# -- 1. what changed ----------------------------------------------------------------------------
def _changes(head_ws: Any, base_ws: Any, head: Any, base: Any) -> list[NodeChange]:
    from splice.plan.fingerprint import is_buildable

    out: list[NodeChange] = []
    base_projects = {p.name: p for p in base_ws.config.projects} if base_ws is not None else {}
    for spec in head_ws.config.projects:
        ids = [n.id for n in head.nodes.values() if n.project == spec.name and is_buildable(n)]
        if spec.format == "sqlmesh":
            out += _sqlmesh_changes(head_ws, head, spec.name, ids)
        elif spec.name not in base_projects or base_projects[spec.name].format != "dbt":
            out += [_added(head, i) for i in ids]
        else:
            out += _dbt_changes(head_ws, base_ws, head, spec.name)
    if base is not None:  # models gone from the head
        for nid, n in sorted(base.nodes.items()):
            if nid not in head.nodes and is_buildable(n) and n.kind == "model":
                out.append(NodeChange(nid, n.project, n.tool, "removed", path=n.path))
    return out


def _added(graph: Any, nid: str) -> NodeChange:
    n = graph.nodes[nid]
    return NodeChange(nid, n.project, n.tool, "added", "new", ["new"], n.path)


def _sqlmesh_changes(ws: Any, graph: Any, project: str, ids: list[str]) -> list[NodeChange]:
    from splice.plan.sqlmesh_view import plan_view

    view = plan_view(ws, project, ids)
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
    return out


def _dbt_changes(head_ws: Any, base_ws: Any, graph: Any, project: str) -> list[NodeChange]:
    import json

    base_prov = base_ws.provider(project)
    base_prov._parse()  # writes the base's manifest.json into its private target directory
    state_dir = base_prov.work / "target" / base_prov.ctx.environment
    prov = head_ws.provider(project)
    prov._parse()
    by_uid = {
        str(n.meta.get("unique_id")): n.id
        for n in graph.nodes.values()
        if n.project == project and n.meta.get("unique_id")
    }
    found: dict[str, list[str]] = {}
    for reason in ("new", *DBT_REASONS):
        selector = "state:new" if reason == "new" else f"state:modified.{reason}"
        res = prov.invoke(
            prov._args("ls")
            + ["--select", selector, "--state", str(state_dir)]
            + ["--resource-types", "model", "seed", "snapshot"]
            + ["--output", "json", "--output-keys", "unique_id"],
            label=f"list {selector}",
        )
        for line in res.result or []:
            uid = json.loads(line).get("unique_id") if line.strip().startswith("{") else line
            nid = by_uid.get(str(uid))
            if nid is not None:
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
def _column_diffs(
    head_ws: Any, base_ws: Any, head: Any, base: Any, changes: list[NodeChange]
) -> None:
    from splice.lineage_service import rendered_sql

    direct = [c for c in changes if c.change in ("modified", "added") and c.changes_data]
    direct = [c for c in direct if head.nodes[c.node].kind == "model"]
    if not direct:
        return
    head_sql = rendered_sql(head_ws, head, [c.node for c in direct])
    base_sql: dict[str, Any] = {}
    for project in sorted({c.project for c in direct}):
        if base is None or base_ws is None:
            break
        nodes = [
            base.nodes[c.node] for c in direct if c.project == project and c.node in base.nodes
        ]
        if nodes and project in {p.name for p in base_ws.config.projects}:
            base_sql.update(base_ws.provider(project).render(nodes))
    schema = _schema(head_ws, head)
    for c in direct:
        sql, dialect, opaque = head_sql.get(c.node, (None, head_ws.dialect, "not rendered"))
        b = base_sql.get(c.node)
        if b is None:  # a new model: every column is new
            from splice.review.columns import shapes

            s = shapes(sql, dialect=dialect, schema=schema, default_catalog=head_ws.default_catalog)
            c.columns = ColumnDiff(added=list(s.columns), opaque=s.opaque)
            continue
        c.columns = compare(
            b.sql, sql, dialect=dialect, schema=schema, default_catalog=head_ws.default_catalog
        )


def _schema(ws: Any, graph: Any) -> dict[str, Any]:
    """``{catalog: {schema: {table: {column: type}}}}`` of every relation the graph knows columns
    of (the tools' metadata, and the output columns of the workspace's column lineage)."""
    from splice.lineage_service import workspace_lineage

    wl = workspace_lineage(ws)
    nested: dict[str, Any] = {}

    def put(rel: Any, cols: dict[str, str]) -> None:
        if rel is None or not cols:
            return
        nested.setdefault(rel.catalog or "", {}).setdefault(rel.schema, {})[rel.name] = cols

    for n in graph.nodes.values():
        for rel in [*n.all_writes, *(n.reads if n.kind in ("source", "external") else [])]:
            put(rel, {k.lower(): v for k, v in n.columns.items()})
    for nid, ml in wl.models.items():
        n = graph.nodes.get(nid)
        if n is not None and ml.columns:
            put(n.writes, {c: "" for c in ml.columns})
    return nested


def _impact(ws: Any, graph: Any, changes: list[NodeChange]) -> Any:
    from splice.lineage_service import workspace_lineage, writers_map
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
    return reach(graph, workspace_lineage(ws).models, writers_map(graph, ws.dialect), starts, specs)


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


def _defer_dirs(base_ws: Any, config: Any) -> dict[str, Path]:
    """dbt project -> the base's manifest directory, which dbt defers unbuilt models to."""
    out: dict[str, Path] = {}
    if base_ws is None:
        return out
    for p in base_ws.config.projects:
        if p.format == "dbt" and p.name in {q.name for q in config.projects}:
            prov = base_ws.provider(p.name)
            path = prov.work / "target" / prov.ctx.environment
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
