"""The workspace's checks (``splice doctor``): the joined graph's, the warehouses' (read from
each tool's config) and, optionally, the column lineage's. The planner refuses a plan on two
of them (SPL201/202), so they live below the api, which re-exports :func:`doctor`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from splice.doctor.checks import Check, graph_checks, lineage_checks
from splice.workspace.core import Workspace


def doctor(ws: Workspace, *, lineage: bool = True) -> list[Check]:
    """Every doctor check for the workspace's current target. A warehouse that does not
    answer while the graph loads (SQLMesh connects its gateway) is itself a check (SPL409),
    reported with the checks that need only the tools' configs."""
    from splice.errors import WarehouseError

    if ws.config.bi:  # asked now, before the graph is built from their reads
        from splice.bi.snapshot import refresh

        for cfg in ws.config.bi:
            refresh(ws.root, cfg, force=True)
    try:
        g = ws.graph()
    except WarehouseError as err:
        return _unreachable(ws, err)
    if lineage:
        ws.open_state_for_caches()
    prod: dict[str, str] = {}
    for n in g.nodes.values():
        rel = n.meta.get("prod_relation")
        if rel:
            prod[str(rel)] = n.id
    checks = graph_checks(g, prod_relations=prod)
    checks += _warehouse_checks(ws, g)
    checks += semantic_checks(ws, g)
    checks += bi_checks(ws, g)
    if lineage:
        from splice.lineage.service import workspace_lineage

        try:
            checks += lineage_checks(workspace_lineage(ws).models)
        except WarehouseError as err:  # the lineage reads the warehouse's columns
            checks += _unreachable(ws, err, loaded=True)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(checks, key=lambda c: (order[c.severity], c.code, c.node or ""))


def bi_checks(ws: Workspace, g: Any) -> list[Check]:
    """SPL511: a ``[[bi]]`` tool that does not answer or refuses the sign-in (asked when doctor
    starts; the graph keeps its last read, stale); SPL512: a chart whose dataset reads a relation no node
    of the workspace writes (it stays out of every blast radius)."""
    import datetime as dt

    from splice.bi.snapshot import last_read, status

    out: list[Check] = []
    for i, cfg in enumerate(ws.config.bi):
        st = status(ws.root, cfg.name)
        if st.get("error"):
            kept = last_read(ws.root, cfg.name)
            when = (
                "its last read, from "
                + dt.datetime.fromtimestamp(float(kept["read_at"]), dt.UTC).strftime(
                    "%Y-%m-%d %H:%M:%SZ"
                )  # fmt: skip
                if kept and kept.get("read_at")
                else "no dashboards (it was never read)"
            )
            retry = " (a retry may help)" if st.get("retry") else ""
            out.append(Check("SPL511", "warning", f"bi[{i}]",
                             f"{st['error']}{retry} The graph shows {when}, marked stale.",
                             str(st.get("fix") or f"check [[bi]] {cfg.name!r} in splice.toml")))  # fmt: skip
    written = {r for n in g.nodes.values() for r in n.all_writes}
    written |= {r for n in g.nodes.values() if n.kind in ("source", "external") for r in n.reads}
    for n in sorted(g.nodes.values(), key=lambda n: n.id):
        if n.kind != "chart":
            continue
        for rel in n.reads:
            if rel not in written:
                out.append(Check("SPL512", "warning", n.id,
                                 f"chart {n.meta.get('label')!r} ({n.meta.get('url')}) reads "
                                 f"{rel.key}, which no node of the workspace writes: no blast "
                                 "radius reaches it",
                                 "point its dataset at a model's relation, or add the project "
                                 "that writes it to splice.toml"))  # fmt: skip
    return out


#: the content-cache kind of SPL501's verdicts
SEMANTIC_KIND = "semantic_compile"


def semantic_checks(ws: Workspace, g: Any) -> list[Check]:
    """SPL501: a ``[[metrics]] semantic = ...`` entry whose metric its tool (MetricFlow, SQLMesh)
    no longer compiles (renamed or removed in the project, a group_by it no longer has)."""
    from splice.errors import ConfigError
    from splice.semantic.compile import compile_semantic
    from splice.semantic.declared import declaring_projects, metric_model

    out: list[Check] = []
    for i, m in enumerate(ws.config.metrics):
        if m.semantic is None:
            continue
        projects = declaring_projects(g, m)
        where = f"metric {m.name!r} (metrics[{i}]): semantic metric {m.semantic!r}"
        if len(projects) != 1:
            what = (
                "is declared by no dbt or SQLMesh project"
                if not projects
                else (f"is declared by {', '.join(projects)}: name one with project")
            )
            out.append(Check("SPL501", "error", m.name, f"{where} {what}",
                             "correct semantic (`splice metrics discover` lists them)"))  # fmt: skip
            continue
        node = metric_model(g, projects[0], m.semantic)
        # the verdict is kept per graph key (every project file) and entry: a warm doctor
        # neither imports MetricFlow nor loads SQLMesh to say the same again
        key = hashlib.sha256(json.dumps([ws.inputs_key(), ws.dialect, projects[0], m.semantic,
                                         m.group_by, m.grain]).encode()).hexdigest()  # fmt: skip
        kept = ws.state.cache_get_many(SEMANTIC_KIND, [key]).get(key) if ws.caching else None
        if not isinstance(kept, dict):
            try:
                if node is None:
                    raise ConfigError("it reads no model Splice can measure.",
                                      fix="check its model")  # fmt: skip
                compile_semantic(ws, projects[0], m.semantic, list(m.group_by), m.grain, node)
                kept = {"error": None}
            except ConfigError as e:
                kept = {"error": e.message, "fix": e.fix or ""}
            if ws.caching:
                ws.state.cache_put_many(SEMANTIC_KIND, {key: kept})
        if kept.get("error"):
            out.append(Check("SPL501", "error", m.name,
                             f"{where} no longer compiles: {kept['error']}",
                             str(kept.get("fix") or "")))  # fmt: skip
    return out


def project_dialects(ws: Workspace) -> dict[str, dict[str, Any]]:
    """The SQL dialect each project's models were parsed in for column lineage, and where it
    comes from: a dbt project's ``[[projects]] dialect`` or its adapter's, a SQLMesh model's own.
    Read from the graph (no tool is loaded for it); empty when the graph does not load."""
    from splice.errors import SpliceError

    try:
        g = ws.graph()
    except SpliceError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for spec in ws.config.projects:
        mine = [n for n in g.nodes.values() if n.project == spec.name and n.dialect]
        found = sorted({str(n.dialect) for n in mine})
        if spec.format == "dbt":
            adapter = next((str(n.meta["adapter_type"]) for n in mine
                            if n.meta.get("adapter_type")), None)  # fmt: skip
            source = (
                "splice.toml: [[projects]] dialect"
                if spec.dialect
                else f"dbt's {adapter} adapter"
                if adapter
                else "dbt's adapter"
            )
            found = [spec.dialect] if spec.dialect else found
        else:
            source = "each SQLMesh model's dialect"
        out[spec.name] = {"format": spec.format, "dialects": found or [ws.dialect], "from": source}
    return out


def warehouses(ws: Workspace) -> dict[str, Any]:
    """Each project's warehouse as its tool resolves it (project -> WarehouseLocation, or None
    when its config can't be read); reads the tools' configs, never the warehouse.

    The locations follow from the same files and environment variables as the graph, so with
    the graph cache on they are kept under the graph's key (no tool is imported for them)."""
    from splice.providers.locations import WarehouseLocation

    key = ws.inputs_key() if ws.caching else None
    if key is not None:
        hit = ws.state.cache_get_many(WAREHOUSES_KIND, [key]).get(key)
        if isinstance(hit, dict):
            return {p: (WarehouseLocation(**d) if d else None) for p, d in hit.items()}
    found = {p.name: ws.provider(p.name).warehouse() for p in ws.config.projects}
    if key is not None:
        ws.state.cache_put_many(
            WAREHOUSES_KIND, {key: {p: (w.to_dict() if w else None) for p, w in found.items()}}
        )
    return found


WAREHOUSES_KIND = "warehouse_locations"


def _foreign_models(ws: Workspace, g: Any) -> dict[str, dict[str, str]]:
    """Models another SQLMesh project owns that each multi-repo project's Context holds (read
    from the shared state: loads SQLMesh, only for projects that have a `project:` name)."""
    multi = {n.project for n in g.nodes.values() if n.meta.get("sqlmesh_project")}
    names = [p.name for p in ws.config.projects if p.format == "sqlmesh" and p.name in multi]
    if not names:
        return {}
    # kept under the graph's key and a mark of SQLMesh's state (a plan applied in the shared
    # state moves it), so a warm doctor loads no SQLMesh for it
    key = None
    if ws.caching:
        from splice.providers.sqlmesh_state import state_probe

        probe = state_probe(ws)
        key = None if probe is None else json.dumps([ws.inputs_key(), probe])
    if key is not None:
        hit = ws.state.cache_get_many(FOREIGN_KIND, [ws.target]).get(ws.target)
        if isinstance(hit, dict) and hit.get("key") == key:
            return {p: dict(v) for p, v in hit["models"].items()}
    found = {p: ws.provider(p).owned_elsewhere() for p in names}
    if key is not None:
        ws.state.cache_put_many(FOREIGN_KIND, {ws.target: {"key": key, "models": found}})
    return found


FOREIGN_KIND = "sqlmesh_foreign_models"


def _unreachable(ws: Workspace, err: Any, *, loaded: bool = False) -> list[Check]:
    """SPL409 for the endpoint that did not answer; with the config-only endpoint checks when
    the graph did not load (``loaded``: it did, and its checks were made; the column lineage's
    were not)."""
    skipped = ("The column lineage was not checked (it reads the warehouse's columns)."
               if loaded else "The graph was not loaded, so only the tools' configs were checked.")  # fmt: skip
    fix = err.fix or "start the warehouse, then run splice doctor again"
    checks = [Check("SPL409", "error", None, f"{err.message} {skipped}", fix)]
    if loaded:
        return checks
    checks += _endpoint_checks(ws, warehouses(ws))
    return sorted(checks, key=lambda c: (c.code, c.node or ""))


def _warehouse_checks(ws: Workspace, g: Any) -> list[Check]:
    from splice.config.workspace import CONFIG_FILE
    from splice.doctor.warehouse import warehouse_checks

    locations = warehouses(ws)
    postgres = ws.config.warehouse.type == "postgres"
    checks = warehouse_checks(
        g,
        locations,
        {p.name: (ws.root / p.path).resolve() for p in ws.config.projects},
        workspace_warehouse=ws.warehouse_path if ws.has_config and not postgres else None,
        workspace_file=str(ws.root / CONFIG_FILE),
        foreign_models=_foreign_models(ws, g),
    )
    return checks + _endpoint_checks(ws, locations)


def _endpoint_checks(ws: Workspace, locations: dict[str, Any]) -> list[Check]:
    """Each project's server against ``[warehouse]`` (SPL406/407 PostgreSQL, SPL408 Spark):
    the tools' configs only, so they are made even when the warehouse does not answer."""
    from splice.config.workspace import CONFIG_FILE
    from splice.doctor.server import server_checks, spark_checks

    if not ws.has_config:
        return []
    wh, workspace_file = ws.config.warehouse, str(ws.root / CONFIG_FILE)
    server = (
        {k: v for k, v in wh.pg_fields().items() if k != "url_password"}
        if wh.type == "postgres"
        else None
    )
    checks = server_checks(locations, server, workspace_file)
    if wh.type == "spark" and wh.remote:
        checks += spark_checks(locations, str(wh.remote), workspace_file)
    return checks
