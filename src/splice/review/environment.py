"""The review environment: build the head there, compare it with prod, drop it.

The build is an ordinary Splice run in the review target (journaled like any run), of exactly
the models the review names, every one built (``full``): SQLMesh plans them into its virtual
environment (and decides itself what else a breaking change rebuilds there); dbt builds them
into the review target with ``--defer --state`` the base's manifest, so a model it does not
build is read from prod.  Afterwards the SQLMesh environment is invalidated and deleted, and the
relations dbt built are dropped, unless the review keeps them (``--keep``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.review.data import compare_model, metric_query, node_key

Progress = Callable[[str], None]
#: Run outcomes after which a node's relation in the review environment is not the head's.
NOT_BUILT = frozenset({"failed", "skipped", "interrupted", "pending", "cancelled"})


def build_and_compare(
    root: Path,
    head_ws: Any,
    target: str,
    ids: list[str],
    *,
    defer: dict[str, Path],
    keep: bool,
    execution_time: Any = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    from splice.run.runner import run
    from splice.warehouse import connect
    from splice.workspace import Workspace

    cfg = head_ws.config
    rcfg = cfg.review
    out: dict[str, Any] = {
        "target": target,
        "environments": {p.name: cfg.environment_for(p.name, target) for p in cfg.projects},
        "models": [],
        "metrics": [],
    }
    graph = head_ws.graph()
    rws = Workspace.open(root, target)
    shared = _share_sqlmesh(head_ws, rws)
    report = None
    rgraph = None
    try:
        rws.check_targets()
        for project, path in defer.items():
            rws.provider(project).defer_state = path
        if progress:
            progress(f"building {len(ids)} model(s) for the head in target {target!r}")
        report = run(
            rws,
            " ".join(ids),
            full=True,
            execution_time=execution_time,
            command=f"splice review (the head, built in {target})",
        )
        # built, or (SQLMesh) already in the environment as planned: its relation is the head's
        built = {
            n
            for n, r in report.nodes.items()
            if r.status not in NOT_BUILT and r.kind not in ("test", "audit")
        }
        out["run"] = {
            "id": report.run_id,
            "status": report.status,
            "built": sorted(built),
            "not_built": {
                n: r.message or r.skipped_because or r.status
                for n, r in report.nodes.items()
                if r.status in NOT_BUILT and r.kind not in ("test", "audit")
            },
            "checks_failed": sorted(c for n, r in report.nodes.items() for c in r.checks_failed),
        }
        out["timings"] = {"build": report.timings.get("total", 0.0)}
        rgraph = rws.graph()
        if progress:
            progress(f"comparing {len(built & set(ids))} model(s) with prod")
        with connect(head_ws, "splice review", read_only=False) as con:
            for nid in ids:
                hn, rn = graph.nodes.get(nid), rgraph.nodes.get(nid)
                if nid not in built or hn is None or rn is None or not hn.writes or not rn.writes:
                    out["models"].append(
                        {"node": nid, "note": "not built in the review environment"}
                    )
                    continue
                d = compare_model(
                    con,
                    nid,
                    hn.writes,
                    rn.writes,
                    node_key(graph, hn),
                    dialect=head_ws.dialect,
                    max_rows=rcfg.max_rows,
                    examples=rcfg.examples,
                )
                out["models"].append(d.to_dict())
            out["metrics"] = _metrics(con, head_ws, graph, rgraph, built)
    finally:
        if not keep:
            out["cleaned"] = cleanup(rws, head_ws, rgraph, report)
        else:
            out["cleaned"] = None
        for prov in shared:  # the head's Context: closed with the head's workspace
            prov._context = None
        rws.close()
    return out


def _share_sqlmesh(head_ws: Any, rws: Any) -> list[Any]:
    """Give the review workspace's SQLMesh providers the head's loaded ``Context``: the same
    project files, the environment is only a plan's argument (loading 100 models again costs
    seconds)."""
    shared = []
    for spec in rws.config.projects:
        if spec.format != "sqlmesh":
            continue
        prov = rws.provider(spec.name)
        if getattr(prov, "_context", None) is None:
            prov._context = head_ws.provider(spec.name).context
            shared.append(prov)
    return shared


def _metrics(con: Any, ws: Any, graph: Any, rgraph: Any, built: set[str]) -> list[dict[str, Any]]:
    """Each declared metric on a built model, before (prod) and after (the head), for the
    recent intervals (``[review] metric_intervals``, ending at the last one prod has)."""
    from splice.review.service import recent_start
    from splice.watch.metrics import watch_specs

    out = []
    for spec in watch_specs(ws, graph):
        if not spec.declared or spec.node_id not in built:
            continue
        rnode = rgraph.nodes.get(spec.node_id)
        if rnode is None or rnode.writes is None:
            continue
        tbl = exp.table_(
            spec.relation.name, db=spec.relation.schema, catalog=spec.relation.catalog, quoted=True
        )
        last_q = exp.select(
            exp.Max(this=exp.cast(exp.column(spec.time, quoted=True), exp.DataType.build("DATE")))
        ).from_(tbl)
        last = con.execute(last_q.sql(dialect=ws.dialect)).fetchone()[0]
        if last is None:
            continue
        start = recent_start(last, ws.config.review.metric_intervals, spec.grain)
        before = con.execute(
            metric_query(spec, spec.relation, start).sql(dialect=ws.dialect)
        ).fetchall()
        after = con.execute(
            metric_query(spec, rnode.writes, start).sql(dialect=ws.dialect)
        ).fetchall()
        nd = len(spec.dimensions)
        b = {tuple(r[: 1 + nd]): r[1 + nd] for r in before}
        a = {tuple(r[: 1 + nd]): r[1 + nd] for r in after}
        rows: list[dict[str, Any]] = []
        for k in sorted(set(a) | set(b), key=lambda k: tuple(str(x) for x in k)):
            bv, av = _num(b.get(k)), _num(a.get(k))
            if bv == av and nd:
                continue
            rows.append(
                {
                    "interval": str(k[0]),
                    "dimensions": {d: _plain(k[1 + i]) for i, d in enumerate(spec.dimensions)},
                    "before": bv,
                    "after": av,
                    "delta": None if bv is None or av is None else round(av - bv, 6),
                    "changed": bv != av,
                }
            )
        changed = [r for r in rows if r["changed"]]
        out.append(
            {
                "name": spec.name,
                "node": spec.node_id,
                "value": spec.measures[0].label if spec.measures else None,
                "dimensions": spec.dimensions,
                "from": start.isoformat(),
                "through": str(last),
                "changed": bool(changed),
                "changed_intervals": len({r["interval"] for r in changed}),
                "rows": rows
                if not nd
                else sorted(changed, key=lambda r: -abs(r["delta"] or 0))[:20],
                "owner": spec.owner,
            }
        )
    return out


def _num(v: Any) -> float | None:
    if v is None:
        return None
    try:
        return round(float(v), 6)
    except (TypeError, ValueError):
        return None


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, (int, float, str)) else str(v)


def cleanup(rws: Any, head_ws: Any, rgraph: Any, report: Any) -> dict[str, Any]:
    """Delete the review environment: SQLMesh's (invalidated and deleted at once, its views
    and the tables only it used), and every relation dbt built in the review target."""
    from splice.capture import captured
    from splice.warehouse import connect

    done: dict[str, Any] = {"sqlmesh": [], "dbt": []}
    for spec in rws.config.projects:
        if spec.format != "sqlmesh":
            continue
        prov = rws.provider(spec.name)
        env = rws.environment(spec.name)
        with captured(
            rws.log_path, f"sqlmesh invalidate {env} ({spec.name})", cwd=prov.ctx.project_path
        ):
            prov.context.invalidate_environment(env, sync=True)
        done["sqlmesh"].append(f"{spec.name}:{env}")
    if rgraph is None or report is None:
        return done
    dbt_built = [
        rgraph.nodes[n]
        for n in report.nodes
        if n in rgraph.nodes and rgraph.nodes[n].tool == "dbt" and rgraph.nodes[n].writes
    ]
    if not dbt_built:
        return done
    from splice.providers.dbt import release_warehouse

    release_warehouse()  # dbt lets go of the warehouse before it is written here
    with connect(head_ws, "splice review cleanup") as con:
        for n in dbt_built:
            rel = n.writes
            kind = "VIEW" if (n.materialization or "") == "view" else "TABLE"
            drop = exp.Drop(
                this=exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True),
                kind=kind,
                exists=True,
            )
            con.execute(drop.sql(dialect=head_ws.dialect))
            done["dbt"].append(rel.key)
    return done
