"""Metrics of a semantic layer (dbt's MetricFlow, SQLMesh's ``METRIC``), watched as declared
metrics are.

``[[metrics]] semantic = "gmv"`` (with ``group_by`` and ``grain``) is measured by the query the
metric's own tool compiles (:mod:`splice.semantic.compile`), wrapped so that it returns
what every spec returns (``interval_start``, ``d0``.., ``m0``) from a start day. The spec is
about the dbt model the metric's semantic model reads (its node, relation and time column),
so blast radius, diagnosis and repair treat it as any metric on that model; a review or
another target swaps that model's relation in the compiled SQL
(:meth:`SemanticSpec.query`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.config.workspace import CONFIG_FILE, MetricSection
from splice.errors import ConfigError
from splice.graph.model import Graph, Relation
from splice.semantic.compile import compile_semantic, manifest_path
from splice.semantic.declared import declaring_projects, metric_model
from splice.watch.specs import INTERVAL, MetricSpec, declared_fields, relation_of

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


@dataclass
class SemanticSpec(MetricSpec):
    """A declared metric whose per-interval SQL its semantic layer compiled (MetricFlow,
    SQLMesh's metric rewriter)."""

    compiled: exp.Select = field(default_factory=exp.Select, compare=False)
    compiled_relation: Relation | None = None  # the model's relation as the compiled SQL names it
    time_alias: str = "metric_time__day"
    dimension_aliases: tuple[str, ...] = ()
    value_alias: str = ""
    semantic: str = ""  # the semantic layer's metric name

    def query(self, start: date | None = None) -> exp.Select:
        inner = self.compiled.copy()
        if self.compiled_relation is not None and self.compiled_relation != self.relation:
            inner = _swap(inner, self.compiled_relation, self.relation)
        t = exp.column(self.time_alias, quoted=True)
        selects: list[exp.Expr] = [exp.alias_(exp.cast(t, exp.DataType.build("DATE")), INTERVAL,
                                              quoted=True)]  # fmt: skip
        selects += [exp.alias_(exp.column(a, quoted=True), f"d{i}", quoted=True)
                    for i, a in enumerate(self.dimension_aliases)]  # fmt: skip
        selects.append(exp.alias_(exp.column(self.value_alias, quoted=True), "m0", quoted=True))
        q = exp.select(*selects).from_(exp.Subquery(this=inner, alias=exp.to_identifier("mf")))
        if start is not None:
            since = exp.cast(exp.Literal.string(start.isoformat()), exp.DataType.build("DATE"))
            q = q.where(exp.GTE(this=exp.cast(t.copy(), exp.DataType.build("DATE")),
                                expression=since))  # fmt: skip
        return q


def _swap(q: exp.Select, old: Relation, new: Relation) -> exp.Select:
    """``q`` reading ``new`` wherever it read ``old`` (matched by schema and name)."""

    def visit(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Table)
            and node.name.lower() == old.name.lower()
            and (node.db or "").lower() == (old.schema or "").lower()
        ):
            t = exp.table_(new.name, db=new.schema, catalog=new.catalog, quoted=True)
            if node.alias:
                t.set("alias", node.args["alias"].copy())
            return t
        return node

    return q.transform(visit)  # type: ignore[return-value]


def semantic_metric(
    index: int, m: MetricSection, ws: Workspace, graph: Graph, *, sensitivity: str,
    calendar: str | None,
) -> SemanticSpec:  # fmt: skip
    """Validate one ``[[metrics]] semantic = ...`` entry and build its spec."""
    assert m.semantic is not None
    where = f"{CONFIG_FILE}: metric {m.name!r} (metrics[{index}])"
    projects = declaring_projects(graph, m)
    if not projects:
        declared = sorted({f"{n.project}:{n.name.split(':', 1)[1]}" for n in graph.nodes.values()
                           if n.kind == "metric"})  # fmt: skip
        raise ConfigError(
            f"{where}: no dbt or SQLMesh project"
            + (f" named {m.project!r}" if m.project else "")
            + f" declares a semantic metric {m.semantic!r}"
            + (f" (declared: {', '.join(declared)})" if declared else " (no project declares any)")
            + ".",
            fix=f"set metrics[{index}].semantic to one `splice metrics discover` lists",
        )
    if len(projects) > 1:
        raise ConfigError(
            f"{where}: projects {', '.join(projects)} each declare {m.semantic!r}.",
            fix=f"set metrics[{index}].project to the one to watch",
        )
    project = projects[0]
    node = metric_model(graph, project, m.semantic)
    if node is None or (relation := relation_of(node)) is None:
        raise ConfigError(
            f"{where}: semantic metric {project}:{m.semantic} reads no model Splice can measure.",
            fix="check the model its semantic model (dbt) or measure (SQLMesh) reads",
        )
    try:
        c = compile_semantic(ws, project, m.semantic, list(m.group_by), m.grain, node)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e.message}", fix=e.fix) from None
    compiled = c.query
    outputs = {p.alias_or_name: p for p in compiled.selects}
    value = next(
        (
            a
            for a in compiled.find_all(exp.Alias)
            if a.alias == c.value_alias and a.this.find(exp.AggFunc)
        ),
        outputs[c.value_alias],
    )  # the aggregate itself, where the query computes it
    value_expr = value.this.copy() if isinstance(value, exp.Alias) else value.copy()
    time_cols = list(outputs[c.time_alias].find_all(exp.Column))
    time = time_cols[0].name.lower() if time_cols else (node.time_column or "")
    read = next((t for t in compiled.find_all(exp.Table)
                 if t.name.lower() == relation.name.lower()), None)  # fmt: skip
    compiled_relation = (
        Relation(read.catalog or relation.catalog, read.db or relation.schema, read.name)
        if read is not None
        else relation
    )
    fields = declared_fields(m, where, f"semantic {project}:{m.semantic}", value_expr,
                             sensitivity=sensitivity, calendar=calendar)  # fmt: skip
    return SemanticSpec(
        node_id=node.id,
        relation=relation,
        time=time,
        time_type="DATE",
        dimensions=list(c.dimension_aliases),
        **fields,
        compiled=compiled,
        compiled_relation=compiled_relation,
        time_alias=c.time_alias,
        dimension_aliases=c.dimension_aliases,
        value_alias=c.value_alias,
        semantic=m.semantic,
    )


def discover(ws: Workspace) -> list[dict[str, Any]]:
    """Every metric the workspace's projects declare in their semantic layer (dbt's MetricFlow
    metrics, SQLMesh's ``METRIC`` definitions): what it is,
    the dimensions it may be grouped by, whether a ``[[metrics]]`` entry watches it, and the
    entry that would (``watch``, to paste into splice.toml)."""
    from splice.semantic.metricflow import metrics as declared_metrics

    graph = ws.graph()
    watched: dict[tuple[str, str], list[str]] = {}
    for m in ws.config.metrics:
        if m.semantic is None:
            continue
        for p in declaring_projects(graph, m):
            watched.setdefault((p, m.semantic), []).append(m.name)
    out: list[dict[str, Any]] = []
    projects = sorted({n.project for n in graph.nodes.values() if n.kind == "metric"})
    formats = {p.name: p.format for p in ws.config.projects}
    for project in projects:
        found = (_sqlmesh_metrics(graph, project) if formats.get(project) == "sqlmesh"
                 else declared_metrics(manifest_path(ws, project), ws.dialect))  # fmt: skip
        for sm in found:
            node = metric_model(graph, project, sm.name)
            entry = [f'name = "{sm.name}"', f'semantic = "{sm.name}"']
            if len(projects) > 1:
                entry.append(f'project = "{project}"')
            out.append({
                "project": project, "name": sm.name, "label": sm.label,
                "description": sm.description, "type": sm.type,
                "dimensions": list(sm.dimensions), "semantic_models": list(sm.models),
                "node": node.id if node is not None else None,
                "watched_by": watched.get((project, sm.name), []),
                "watch": "[[metrics]]\n" + "\n".join(entry),
            })  # fmt: skip
    return out


def _sqlmesh_metrics(graph: Graph, project: str) -> list[Any]:
    """A SQLMesh project's metrics as :func:`discover` lists them (from the graph: no SQLMesh
    load); the dimensions are its measure model's columns but the time column."""
    from splice.semantic.metricflow import SemanticMetric

    out = []
    for n in sorted(graph.nodes.values(), key=lambda n: n.id):
        if n.project != project or n.kind != "metric":
            continue
        name = n.name.split(":", 1)[1]
        model = metric_model(graph, project, name)
        dims = sorted(c for c in (model.columns if model else {})
                      if c != (model.time_column if model else None))  # fmt: skip
        out.append(
            SemanticMetric(
                name=name,
                label=None,
                description=n.description,
                type="sqlmesh",
                dimensions=tuple(dims),
                models=tuple(str(x) for x in n.meta.get("measures") or ()),  # type: ignore[attr-defined]
            )
        )
    return out
