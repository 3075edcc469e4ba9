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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.errors import ReviewError
from splice.review.changes import BaseCheckout, NodeChange, prod_sql, what_changed
from splice.review.columns import ColumnDiff, compare
from splice.review.git import repo_of

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

Progress = Callable[[str], None]


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
        reaching = {r.origin for r in self.impact.columns} if self.impact is not None else set()
        for c in self.changes:
            touched = c.columns is not None and (c.columns.changed or c.columns.removed)
            if touched and c.node in reaching:
                out.append(c.node)
        return sorted(set(out))

    @property
    def metric_changes(self) -> list[str]:
        if not self.data:
            return []
        return sorted({m["name"] for m in self.data.get("metrics", []) if m.get("changed")})

    @property
    def not_built(self) -> list[str]:
        """The models the data step was to compare and could not, not built for the head (its
        build failed, or never ran): a review with any compared less than it says."""
        if self.data is None:
            return []
        return [m["node"] for m in self.data.get("models", []) if "added" not in m]

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
            "not_built": self.not_built,
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
    from splice.config.workspace import load_config

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

    from splice.workspace.core import Workspace

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
            old = BaseCheckout(base_root, prod, dbt_touched)
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
                out.changes = what_changed(head_ws, old, head_graph, execution_time)
                out.timings["changes"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                _say(progress, "comparing the changed models' columns")
                lineage = _lineage(head_ws, head_graph, out.changes)
                _column_diffs(head_ws, old, head_graph, out.changes, lineage)
                out.timings["columns"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                specs = _metric_specs(head_ws, head_graph, out.notes)
                out.impact = _impact(head_ws, head_graph, out.changes, lineage, specs)
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
                        metrics=specs,
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


def _check_target(config: Any, name: str, root: Path) -> None:
    from splice.config.workspace import CONFIG_FILE

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


# -- 2. columns and impact ---------------------------------------------------------------------------
def _lineage(ws: Workspace, graph: Any, changes: list[NodeChange]) -> Any:
    """Column lineage of the changed models and of every model downstream of them (what the
    impact walks); what they read beyond that takes its columns from the warehouse."""
    from splice.lineage.service import workspace_lineage

    starts = [c.node for c in changes if c.changes_data and c.node in graph.nodes]
    scope = set(starts)
    for nid in starts:
        scope |= graph.descendants(nid)
    return workspace_lineage(ws, only=scope)


def _column_diffs(
    head_ws: Workspace, base: BaseCheckout, head: Any, changes: list[NodeChange], lineage: Any
) -> None:
    from splice.lineage.service import rendered_sql
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
            base_sql.update(prod_sql(head_ws, project, ids))
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


def _schema(ws: Workspace, graph: Any, wl: Any) -> dict[str, Any]:
    """``{catalog: {schema: {table: {column: type}}}}`` of every relation whose columns are
    known: in the warehouse, in the tools' metadata, and output by a model of ``wl``."""
    from splice.lineage.service import warehouse_columns

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


def _metric_specs(ws: Workspace, graph: Any, notes: list[str]) -> list[Any]:
    """The head's metrics (:func:`splice.watch.metrics.watch_specs`); a declaration the head's
    models no longer fit is the review's news, not its failure."""
    from splice.errors import ConfigError
    from splice.watch.metrics import watch_specs

    try:
        return watch_specs(ws, graph, lineage=False)
    except ConfigError as e:
        notes.append(f"metrics not compared: {e.message}")
        return []


def _impact(ws: Workspace, graph: Any, changes: list[NodeChange], wl: Any, specs: list[Any]) -> Any:
    from splice.lineage.service import writers_map
    from splice.review.impact import OPAQUE, reach

    starts: dict[str, list[str]] = {}
    for c in changes:
        d = c.columns
        if d is None or not c.changes_data:
            continue
        cols = [*d.changed, *d.removed] or ([OPAQUE] if d.opaque else [])
        if cols:
            starts[c.node] = cols
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


def _defer_dirs(head_ws: Workspace, base: BaseCheckout) -> dict[str, Path]:
    """dbt project -> the directory of the prod manifest its review build defers to: the base's
    (parsed from its checkout), or, for a project this change leaves alone, the head's own prod
    manifest (the same files)."""
    out: dict[str, Path] = {}
    for p in head_ws.config.projects:
        if p.format != "dbt" or p.name in base.missing:
            continue
        path = base.state_dir(p.name)
        if path is None:
            path = Path(head_ws.provider(p.name).artifacts())
        if (path / "manifest.json").exists():
            out[p.name] = path
    return out
