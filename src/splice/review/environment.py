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
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.review.data import compare_model, metric_query, plain, review_keys
from splice.warehouse.rows import table

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

Progress = Callable[[str], None]
#: Run outcomes after which a node's relation in the review environment is not the head's.
NOT_BUILT = frozenset({"failed", "skipped", "interrupted", "pending", "cancelled"})


def build_and_compare(
    root: Path,
    head_ws: Workspace,
    target: str,
    ids: list[str],
    *,
    defer: dict[str, Path],
    metrics: list[Any],
    keep: bool,
    execution_time: Any = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    from splice.run.runner import run
    from splice.warehouse.connect import connect
    from splice.workspace.core import Workspace

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
        out["copied"] = virtual_copies(rws, graph, ids, execution_time, progress)
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
        with connect(head_ws, "splice review") as con:
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
                    [],
                    dialect=head_ws.dialect,
                    max_rows=rcfg.max_rows,
                    examples=rcfg.examples,
                    keys=review_keys(graph, hn),
                )
                out["models"].append(d.to_dict())
            out["metrics"] = _metrics(con, head_ws, metrics, rgraph, built)
    finally:
        if not keep:
            out["cleaned"] = cleanup(rws, head_ws, rgraph, report)
        else:
            out["cleaned"] = None
        for prov in shared:  # the head's Context: closed with the head's workspace
            prov._context = None
        rws.close()
    return out


def virtual_copies(
    rws: Workspace, graph: Any, ids: list[str], execution_time: Any, progress: Progress | None
) -> list[str]:
    """Create the review environment of each SQLMesh project that the build reads but does not
    change, as a virtual copy of prod: views over prod's own tables (``include_unmodified``, no
    backfill: nothing is written but views).  A dbt model built in the review target reads
    its sources from the review environment's schemas (``marts__review``): without the copy a
    change to dbt models alone finds none of them (a model read through a ``ref`` that is not
    built is deferred to prod).  Returns ``project:environment`` of each."""
    from splice.support.capture import captured

    wanted = set(ids)
    # what the built models read themselves: their parents, and the writers of the sources
    # among them (a dbt source over another project's view); a model they read through a ref
    # they do not build is deferred to prod and needs no copy
    upstream: set[str] = set()
    for nid in ids:
        for p in graph.parents(nid) - wanted:
            upstream.add(p)
            if p in graph.nodes and graph.nodes[p].kind == "source":
                upstream |= graph.parents(p)
    prod = rws.config.workspace.default_target
    out = []
    for spec in rws.config.projects:
        if spec.format != "sqlmesh":
            continue
        mine = {n.id for n in graph.nodes.values() if n.project == spec.name}
        if mine & wanted or not mine & upstream:
            continue  # the run plans it (a change of its own), or nothing built reads it
        prov = rws.provider(spec.name)
        env = rws.environment(spec.name)
        source = rws.config.environment_for(spec.name, prod)
        if progress:
            progress(f"making {spec.name}'s environment {env!r} a virtual copy of {source!r}")
        with captured(
            rws.log_path,
            f"sqlmesh plan {env} (virtual copy of {source}, {spec.name})",
            cwd=prov.ctx.project_path,
        ):
            prov.context.plan(
                env,
                create_from=source,
                include_unmodified=True,
                skip_backfill=True,  # unchanged snapshots share prod's tables: never write them
                no_prompts=True,
                auto_apply=True,
                execution_time=execution_time,
            )
        prov.release()
        out.append(f"{spec.name}:{env}")
    return out


def _share_sqlmesh(head_ws: Workspace, rws: Workspace) -> list[Any]:
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


def _metrics(
    con: Any, ws: Workspace, specs: list[Any], rgraph: Any, built: set[str]
) -> list[dict[str, Any]]:
    """Each declared metric (``specs``: :class:`splice.watch.metrics.MetricSpec`) on a built
    model, before (prod) and after (the head), for the recent intervals (``[review]
    metric_intervals``, ending at the last one prod has)."""
    out = []
    for spec in specs:
        if not spec.declared or spec.node_id not in built:
            continue
        rnode = rgraph.nodes.get(spec.node_id)
        if rnode is None or rnode.writes is None:
            continue
        last_q = exp.select(
            exp.Max(this=exp.cast(exp.column(spec.time, quoted=True), exp.DataType.build("DATE")))
        ).from_(table(spec.relation, ws.dialect))
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
                    "dimensions": {d: plain(k[1 + i]) for i, d in enumerate(spec.dimensions)},
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


def cleanup(rws: Workspace, head_ws: Workspace, rgraph: Any, report: Any) -> dict[str, Any]:
    """Delete the review environment: SQLMesh's (invalidated and deleted at once: its views;
    the tables of snapshots only it used go with SQLMesh's janitor, after their TTL), and every
    relation dbt built in the review target."""
    from splice.support.capture import captured
    from splice.warehouse.connect import connect

    done: dict[str, Any] = {"sqlmesh": [], "dbt": []}
    for spec in rws.config.projects:
        if spec.format != "sqlmesh":
            continue
        prov = rws.provider(spec.name)
        env = rws.environment(spec.name)
        with captured(rws.log_path, f"sqlmesh invalidate {env} ({spec.name})", cwd=prov.run_dir):
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
            drop = exp.Drop(this=table(rel, head_ws.dialect), kind=kind, exists=True)
            con.execute(drop.sql(dialect=head_ws.dialect))
            done["dbt"].append(rel.key)
    return done


def recent_start(last: date, intervals: int, grain: str) -> date:
    """The first day of the last ``intervals`` intervals ending at ``last``.

    >>> recent_start(date(2026, 9, 30), 14, "day")
    datetime.date(2026, 9, 17)
    """
    days = {"day": 1, "week": 7, "month": 31, "quarter": 92, "year": 366}.get(grain, 1)
    return last - timedelta(days=days * intervals - 1)
