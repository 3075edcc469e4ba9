"""What a pull request changed, in each tool's own terms (the first part of a review).

- SQLMesh: its own plan of the head against the prod environment, built and never applied
  (:func:`splice.plan.sqlmesh_view.plan_view`): added, directly modified with SQLMesh's change
  category, indirectly modified; a model in prod that the head no longer has is removed.  The
  base SQL of a changed model is its prod snapshot's, rendered as SQLMesh renders it.
- dbt: dbt's own ``state:new`` and ``state:modified.*`` selectors against the base commit's
  manifest, parsed from a temporary checkout (:class:`BaseCheckout`); a model the base has and the
  head does not is removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.review.columns import ColumnDiff

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

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


class BaseCheckout:
    """The base commit's side: its dbt projects parsed from a temporary checkout (their
    manifests are dbt's ``--state``; their nodes tell what was removed and render the old SQL)."""

    def __init__(self, root: Path | None, prod: str, dbt_projects: list[str]) -> None:
        self.root = root
        self.prod = prod
        self.dbt_projects = dbt_projects
        self.ws: Workspace | None = None
        self.nodes: dict[str, dict[str, Any]] = {}  # project -> node id -> Node
        self.missing: set[str] = set()  # touched projects the base does not have

    def load(self) -> None:
        if self.root is None:
            return
        from splice.config.workspace import CONFIG_FILE
        from splice.workspace.core import Workspace

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
        return Path(self.ws.provider(project).artifacts())

    def render(self, project: str, node_ids: list[str]) -> dict[str, Any]:
        nodes = [self.nodes[project][i] for i in node_ids if i in self.nodes.get(project, {})]
        if not nodes:
            return {}
        assert self.ws is not None  # the nodes were loaded through it
        return self.ws.provider(project).render(nodes)

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()


# -- 1. what changed ----------------------------------------------------------------------------
def what_changed(
    head_ws: Workspace, base: BaseCheckout, head: Any, execution_time: Any = None
) -> list[NodeChange]:
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
    ws: Workspace, graph: Any, project: str, ids: list[str], execution_time: Any = None
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


def _prod_models(ws: Workspace, project: str) -> dict[str, Any]:
    """node id -> the snapshot of each model in ``project``'s prod environment (what SQLMesh's
    plan compares the head with)."""
    from splice.providers.sqlmesh import short_name

    prov = ws.provider(project)
    # the provider keeps the snapshots it read: a second call reads only their intervals
    _env, snaps = prov.environment_snapshots(ws.environment(project))
    default_catalog = (prov.context.default_catalog or "").lower() or None
    out = {}
    for s in snaps.values():
        if not getattr(s, "is_model", False) or getattr(s, "is_audit", False):
            continue
        kind = getattr(s.model.kind.name, "value", s.model.kind.name)
        if str(kind).upper() == "EXTERNAL":
            continue
        out[f"{project}:{short_name(s.model, default_catalog)}"] = s
    return out


def prod_sql(ws: Workspace, project: str, node_ids: list[str]) -> dict[str, Any]:
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


def _dbt_changes(
    head_ws: Workspace, base: BaseCheckout, graph: Any, project: str
) -> list[NodeChange]:
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
