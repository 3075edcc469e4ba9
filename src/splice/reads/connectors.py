"""Both ends of the graph as data: the ingestion jobs that load raw relations (with their
recent loads, from dlt's own ``_dlt_loads`` table) and the dashboards that read the marts
(with everything upstream of them).

The warehouse is read through one read-only connection (:func:`splice.warehouse.connect.connect`),
closed before the call returns, so DuckDB's single-writer lock is never held afterwards.
Every query is a sqlglot expression.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph, Relation

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: How many recent loads are listed per job.
LOADS_SHOWN = 20
DLT_LOADS = "_dlt_loads"


def tables_query(relations: list[Relation]) -> exp.Select:
    """Which of ``relations`` exist: (catalog, schema, name) rows from information_schema.

    >>> print(tables_query([Relation("wh", "raw", "fx")]).sql("duckdb"))
    SELECT "table_catalog", "table_schema", "table_name" FROM "information_schema"."tables" WHERE "table_catalog" = 'wh' AND "table_schema" = 'raw' AND "table_name" = 'fx'
    """
    conds: exp.Expr | None = None
    for r in relations:
        parts = [("table_schema", r.schema), ("table_name", r.name)]
        if r.catalog:
            parts.insert(0, ("table_catalog", r.catalog))
        one = exp.and_(*(exp.column(c, quoted=True).eq(exp.Literal.string(v)) for c, v in parts))
        conds = one if conds is None else exp.or_(conds, one)
    q = exp.select(
        *(exp.column(c, quoted=True) for c in ("table_catalog", "table_schema", "table_name"))
    ).from_(exp.table_("tables", db="information_schema", quoted=True))
    return q.where(conds) if conds is not None else q.where(exp.false())


def loads_query(schema: Relation, schema_name: str | None, limit: int) -> exp.Select:
    """The newest loads in dlt's ``_dlt_loads`` of one dataset (one dlt schema, when named).

    >>> print(loads_query(Relation("wh", "raw", "_dlt_loads"), "fx_ingest", 5).sql("duckdb"))
    SELECT "load_id", "schema_name", "status", "inserted_at", "schema_version_hash" FROM "wh"."raw"."_dlt_loads" WHERE "schema_name" = 'fx_ingest' ORDER BY "inserted_at" DESC LIMIT 5
    """
    cols = ("load_id", "schema_name", "status", "inserted_at", "schema_version_hash")
    q = exp.select(*(exp.column(c, quoted=True) for c in cols)).from_(
        exp.table_(schema.name, db=schema.schema, catalog=schema.catalog, quoted=True)
    )
    if schema_name:
        q = q.where(exp.column("schema_name", quoted=True).eq(exp.Literal.string(schema_name)))
    return q.order_by(exp.Ordered(this=exp.column("inserted_at", quoted=True), desc=True)).limit(
        limit
    )


def count_query(rel: Relation) -> exp.Select:
    return exp.select(exp.Count(this=exp.Star())).from_(
        exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True)
    )


def _iso(v: Any) -> Any:
    return v.isoformat() if hasattr(v, "isoformat") else v


def _domain(ws: Workspace, g: Graph, node_id: str) -> str | None:
    from splice.approvals.domains import domain_for

    d = domain_for(g, ws.config, node_id)
    return d.name if d is not None else None


def orchestrator_runs(ws: Workspace, job: Any, *, limit: int = LOADS_SHOWN) -> dict[str, Any]:
    """The orchestrator of ``job`` (None when Splice runs it) and the job's latest runs there
    (status, start, end, link); ``error`` says why they could not be read (never raises)."""
    from splice.errors import OrchestratorError
    from splice.orchestrators import for_job

    orch = for_job(job, ws.root)
    if orch is None:
        return {}
    rec: dict[str, Any] = {"system": orch.system, "url": orch.cfg.url, "job": orch.job,
                           "runs": []}  # fmt: skip
    try:
        rec["runs"] = [r.as_dict() for r in orch.recent_runs(limit)]
    except OrchestratorError as e:
        rec["error"] = e.one_line()
    return rec


def ingestion_jobs(ws: Workspace, *, loads: int = LOADS_SHOWN) -> list[dict[str, Any]]:
    """Each ``[[ingestion]]`` job: how it runs, the tables it writes (whether they exist and
    their rows), the nodes reading them, and for a dlt job its newest ``loads`` from dlt's
    ``_dlt_loads`` in the dataset it writes (load id, status, inserted_at, schema).

    The warehouse is opened read-only once for the call (only when some table is to be
    read) and closed before it returns.
    """
    from splice.warehouse.connect import connect

    g = ws.graph()
    jobs: list[dict[str, Any]] = []
    wanted: list[Relation] = []
    for job in ws.config.ingestion:
        node = g.nodes.get(f"ingestion:{job.name}")
        writes = node.all_writes if node is not None else []
        loads_at = (
            Relation(writes[0].catalog, writes[0].schema, DLT_LOADS)
            if (job.runner == "dlt" or job.pipeline_name) and writes
            else None
        )
        rec: dict[str, Any] = {
            "name": job.name,
            "node": node.id if node is not None else f"ingestion:{job.name}",
            "runner": job.runner,
            "description": job.description,
            "owner": job.owner,
            "domain": _domain(ws, g, node.id) if node is not None else None,
            "reads": list(job.reads),
            "command": list(job.command),
            "pipeline_name": job.pipeline_name,
            "dataset": job.dataset or (writes[0].schema if writes else None),
            "tables": [
                {
                    "relation": r.key,
                    "exists": None,
                    "rows": None,
                    "columns": dict(node.columns) if node is not None and i == 0 else {},
                    "read_by": sorted(
                        n.id for n in g.nodes.values() if r in n.reads and n.kind != "ingestion"
                    ),
                }
                for i, r in enumerate(writes)
            ],
            "downstream": sorted(g.children(node.id)) if node is not None else [],
            "loads": [],
            "loads_table": loads_at.key if loads_at else None,
            "last_load": None,
        }
        if job.orchestrated:
            rec["orchestrator"] = orchestrator_runs(ws, job)
        if loads_at is None:
            rec["loads_note"] = f"a {job.runner} job keeps no load records Splice can read"
        wanted += list(writes) + ([loads_at] if loads_at else [])
        jobs.append(rec)
    if not wanted or ws.config.warehouse.type != "duckdb" or not ws.warehouse_path.exists():
        for rec in jobs:
            rec.setdefault("loads_note", "the warehouse is not built yet")
        return jobs
    with connect(ws, "splice ingestion", read_only=True) as con:
        found = {
            Relation(r[0], r[1], r[2])
            for r in con.execute(tables_query(wanted).sql(ws.dialect)).fetchall()
        }
        for job, rec in zip(ws.config.ingestion, jobs, strict=True):
            for t in rec["tables"]:
                rel = next(r for r in wanted if r.key == t["relation"])
                t["exists"] = rel in found
                if t["exists"]:
                    t["rows"] = int(con.execute(count_query(rel).sql(ws.dialect)).fetchone()[0])
            if rec["loads_table"] is None:
                continue
            at = next(r for r in wanted if r.key == rec["loads_table"])
            if at not in found:
                rec["loads_note"] = f"no {DLT_LOADS} table in {at.catalog}.{at.schema} yet"
                continue
            rows = con.execute(loads_query(at, job.pipeline_name, loads).sql(ws.dialect))
            rec["loads"] = [
                {
                    "load_id": str(r[0]),
                    "schema": r[1],
                    "status": int(r[2]) if r[2] is not None else None,
                    "succeeded": r[2] == 0,
                    "inserted_at": _iso(r[3]),
                    "schema_version_hash": r[4],
                }
                for r in rows.fetchall()
            ]
            rec["last_load"] = rec["loads"][0] if rec["loads"] else None
    return jobs


def dashboards(ws: Workspace) -> list[dict[str, Any]]:
    """Each dashboard (``[[dashboards]]`` and dbt exposures): what it reads (nodes, relations,
    their columns), everything upstream of it in dependency order across projects, the
    ingestion jobs and sources it ultimately comes from, the declared metrics watched on the
    way, and the open incidents whose blast radius reaches it."""
    g = ws.graph()
    metrics_on: dict[str, list[str]] = {}
    from splice.semantic.declared import metric_node

    for m in ws.config.metrics:
        metrics_on.setdefault(metric_node(g, m) or "", []).append(m.name)
    reached: dict[str, list[str]] = {}
    from splice.reads import state_conn

    if state_conn(ws) is not None:
        from splice.watch.incidents import list_incidents

        for inc in list_incidents(ws.state.conn, ws.target, status="open"):
            blast = (inc.diagnosis or {}).get("blast_radius") or {}
            for d in blast.get("dashboards") or []:
                reached.setdefault(str(d.get("node")), []).append(inc.incident_id)
    out = []
    for n in sorted(g.nodes.values(), key=lambda n: n.id):
        if n.kind != "dashboard":
            continue
        ups = g.ancestors(n.id)
        order = g.topological_order(ups)
        reads = []
        for p in sorted(g.parents(n.id)):
            pn = g.nodes[p]
            reads.append({
                "node": p, "kind": pn.kind, "project": pn.project,
                "relation": pn.writes.key if pn.writes else None, "columns": sorted(pn.columns),
            })  # fmt: skip
        by_project: dict[str, list[str]] = {}
        for u in order:
            by_project.setdefault(g.nodes[u].project, []).append(u)
        out.append(
            {
                "id": n.id,
                "name": n.name,
                "label": n.meta.get("label") or n.name,
                "tool": n.tool,
                "source": "declared" if n.project == "dashboards" else f"{n.tool} ({n.project})",
                "url": n.meta.get("url"),
                "owner": n.owner,
                "description": n.description,
                "declared_reads": list(n.meta.get("declared_reads") or []),  # type: ignore[call-overload]
                "reads": reads,
                "upstream": order,
                "upstream_by_project": by_project,
                "origins": [u for u in order if not g.parents(u)],
                "ingestion": [u for u in order if g.nodes[u].kind == "ingestion"],
                "metrics": sorted(m for u in [*order, n.id] for m in metrics_on.get(u, [])),
                "open_incidents": sorted(reached.get(n.id, [])),
            }
        )
    return out
