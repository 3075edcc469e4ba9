"""Doctor checks on where the projects' warehouses are (splice.providers.locations).

=======  ========  =================================================================
code     severity  what it finds
=======  ========  =================================================================
SPL401   error     projects joined by bindings write to different warehouse files
SPL402   warning   a project's warehouse is not splice.toml's [warehouse] path
SPL403   warning   a project's warehouse is in memory: nothing it builds is kept
SPL404   warning   a SQLMesh context holds models of a project no Splice project lists
SPL405   error     SQLMesh projects share one state without distinct `project:` names
=======  ========  =================================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from splice.doctor.checks import Check
from splice.graph.model import Graph

CODES = {
    "SPL401": "split-warehouse",
    "SPL402": "warehouse-not-workspace",
    "SPL403": "in-memory-warehouse",
    "SPL404": "unlisted-sqlmesh-project",
    "SPL405": "shared-state-without-project-names",
}


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _said(loc: Any) -> str:
    value = f" = {loc.value!r}" if loc.value is not None else " (not set)"
    return f"{loc.config_file}: {loc.key}{value}"


def warehouse_checks(
    graph: Graph,
    locations: dict[str, Any],
    project_paths: dict[str, Path],
    *,
    workspace_warehouse: Path | None = None,
    workspace_file: str = "splice.toml",
    foreign_models: dict[str, dict[str, str]] | None = None,
) -> list[Check]:
    """``locations``: project -> WarehouseLocation (or None when unknown); ``project_paths``:
    project -> its directory; ``workspace_warehouse``: splice.toml's ``[warehouse] path`` when
    the workspace has a splice.toml; ``foreign_models``: SQLMesh project -> {fqn: owning
    SQLMesh project} of the models its Context read back from a shared state."""
    checks: list[Check] = []
    for project in sorted(locations):
        loc = locations[project]
        if loc is None or loc.kind != "memory":
            continue
        checks.append(
            Check(
                "SPL403",
                "warning",
                None,
                f"project {project!r} builds into an in-memory DuckDB ({_said(loc)}): nothing "
                "it builds is kept after the run, so every plan finds its models never built "
                "and other projects cannot read them.",
                f"set {loc.key} in {loc.config_file} to a DuckDB file"
                + (
                    f", e.g. {_rel(workspace_warehouse, project_paths[project])!r}"
                    if workspace_warehouse is not None and project in project_paths
                    else ""
                ),
            )
        )

    # projects that bindings join must write to one warehouse
    pairs: dict[tuple[str, str], Any] = {}
    for e in graph.bindings:
        up, down = graph.nodes[e.upstream], graph.nodes[e.downstream]
        if up.project == down.project:
            continue
        a, b = locations.get(up.project), locations.get(down.project)
        if a is None or b is None or a.kind != "file" or b.kind != "file":
            continue
        if _same(a.path, b.path):
            continue
        pairs.setdefault((up.project, down.project), e)
    for (pa, pb), e in sorted(pairs.items()):
        a, b = locations[pa], locations[pb]
        # the one file: splice.toml's when there is one, else the writer's
        one = workspace_warehouse if workspace_warehouse is not None else Path(a.path)
        moves = [
            f"{loc.key} in {loc.config_file} to {_rel(one, project_paths.get(p))!r}"
            for p, loc in ((pa, a), (pb, b))
            if not _same(loc.path, str(one))
        ]
        checks.append(
            Check(
                "SPL401",
                "error",
                e.downstream,
                f"{e.upstream} -> {e.downstream} expects one warehouse, but {pa!r} writes "
                f"{a.path} ({_said(a)}) and {pb!r} writes {b.path} ({_said(b)}); each tool "
                "resolves a relative path against its project directory, where it runs.",
                f"point both at one file ({one}): set " + ", and ".join(moves),
            )
        )

    if workspace_warehouse is not None:
        for project in sorted(locations):
            loc = locations[project]
            if loc is None or loc.kind != "file" or _same(loc.path, str(workspace_warehouse)):
                continue
            checks.append(
                Check(
                    "SPL402",
                    "warning",
                    None,
                    f"project {project!r} writes {loc.path} ({_said(loc)}), not the workspace's "
                    f"warehouse {workspace_warehouse} ({workspace_file}: warehouse.path): "
                    "metrics, diffs and repairs read the workspace's warehouse.",
                    f"set {loc.key} in {loc.config_file} to "
                    f"{_rel(workspace_warehouse, project_paths.get(project))!r}, or correct "
                    f"warehouse.path in {workspace_file}",
                )
            )

    # SQLMesh projects on one state must each have their own `project:` name (multi-repo):
    # otherwise each one's plan counts the other's models as removed from the environment
    by_state: dict[str, list[str]] = {}
    for project in sorted(locations):
        loc = locations[project]
        if loc is not None and loc.tool == "sqlmesh" and loc.state:
            by_state.setdefault(loc.state, []).append(project)
    for state, projects in sorted(by_state.items()):
        if len(projects) < 2:
            continue
        project_names = [locations[p].sqlmesh_project for p in projects]
        if all(project_names) and len(set(project_names)) == len(project_names):
            continue
        said = "; ".join(
            f"{p!r} ({locations[p].config_file}: project = {locations[p].sqlmesh_project!r})"
            if locations[p].sqlmesh_project
            else f"{p!r} ({locations[p].config_file}: no project)"
            for p in projects
        )
        checks.append(
            Check(
                "SPL405",
                "error",
                None,
                f"SQLMesh projects {', '.join(repr(p) for p in projects)} keep their state in "
                f"one place ({state.split('#')[0]}, schema {state.split('#')[-1]}) without "
                f"distinct project names: {said}. Each one's plan counts the other's models "
                "as removed from the environment.",
                "give each config its own `project:` name (SQLMesh's multi-repo setup), or give "
                "each project its own state (state_connection or state_schema in its gateway)",
            )
        )

    listed = {
        str(n.meta.get("fqn")) for n in graph.nodes.values() if n.tool == "sqlmesh" and n.meta
    }
    for project in sorted(foreign_models or {}):
        by_owner: dict[str, list[str]] = {}
        for fqn, owner in (foreign_models or {})[project].items():
            if fqn not in listed:
                by_owner.setdefault(owner or "(no project name)", []).append(fqn)
        for owner, fqns in sorted(by_owner.items()):
            names = ", ".join(sorted(fqns)[:5]) + ("..." if len(fqns) > 5 else "")
            checks.append(
                Check(
                    "SPL404",
                    "warning",
                    None,
                    f"SQLMesh project {project!r} shares its state with SQLMesh project "
                    f"{owner!r}, whose {len(fqns)} model(s) no Splice project lists: {names}; "
                    "Splice sees them only as relations (no plan, no column lineage through them).",
                    f"add SQLMesh project {owner!r} to {workspace_file} as a [[projects]] entry "
                    '(format = "sqlmesh")',
                )
            )
    return checks


def _rel(target: Path | None, start: Path | None) -> str:
    if target is None:
        return ""
    if start is None:
        return str(target)
    return os.path.relpath(target, start)
