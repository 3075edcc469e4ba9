"""`splice doctor`: typed checks with stable codes, about where the join of projects is weak.

=======  ========  =================================================================
code     severity  what it finds
=======  ========  =================================================================
SPL101   error     a relation read across projects has several writers (no edge made)
SPL102   warning   a source / external input has no writer in the workspace
SPL103   warning   an unbound source looks like another project's output
SPL104   warning   a source reads SQLMesh's versioned physical table, not its view
SPL201   error     in this target, a node would read another project's prod relation
SPL202   error     a declared binding reads a relation its writer does not write here
SPL301   warning   an input has no column types: column lineage is weaker
SPL302   warning   a model's SQL is opaque to column lineage (with the reason)
SPL303   info      some columns of a model could not be resolved
SPL501   error     a watched semantic-layer metric no longer compiles (MetricFlow)
SPL511   warning   a BI tool ([[bi]]) does not answer or refuses the sign-in (last read kept)
SPL512   warning   a BI chart reads a relation no node of the workspace writes
=======  ========  =================================================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from splice.graph.model import Graph

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Check:
    code: str
    severity: Severity
    node: str | None
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CODES = {
    "SPL101": "ambiguous-writers",
    "SPL102": "unbound-input",
    "SPL103": "looks-like-other-project",
    "SPL104": "reads-physical-table",
    "SPL201": "dev-reads-prod",
    "SPL202": "declared-binding-mismatch",
    "SPL301": "missing-column-types",
    "SPL302": "opaque-query",
    "SPL303": "opaque-columns",
    "SPL501": "semantic-metric-broken",
    "SPL511": "bi-unreachable",
    "SPL512": "bi-unknown-relation",
}


def graph_checks(
    graph: Graph,
    *,
    prod_relations: dict[str, str] | None = None,
    non_prod_projects: set[str] | None = None,
) -> list[Check]:
    """Checks that need only the joined graph.

    ``prod_relations`` maps a relation key to the node that writes it in *prod* when this
    target runs that node's project in another environment (for SPL201).
    """
    checks: list[Check] = []
    prod_relations = prod_relations or {}
    by_table: dict[str, list[str]] = {}
    for n in graph.nodes.values():
        for r in n.all_writes:
            by_table.setdefault(r.name, []).append(n.id)

    for a in graph.ambiguities:
        node = graph.nodes[a.reader]
        rel = a.relation.key
        if len(a.writers) > 1:
            checks.append(
                Check(
                    "SPL101",
                    "error",
                    a.reader,
                    f"{a.reader} reads {rel}, which {len(a.writers)} nodes write: {', '.join(a.writers)}; no edge was made.",
                    "declare the writer with a [[bindings]] entry in splice.toml, or make only one node write it",
                )
            )
            continue
        if rel in prod_relations:
            checks.append(
                Check(
                    "SPL201",
                    "error",
                    a.reader,
                    f"{a.reader} would read {rel}, the prod relation of {prod_relations[rel]}, while this target builds {prod_relations[rel].split(':', 1)[0]} in another environment.",
                    "make the source follow the environment (for example a var in its schema) or map both projects to the same environment under [targets.NAME.environments]",
                )
            )
            continue
        if a.relation.schema.startswith("sqlmesh__"):
            checks.append(
                Check(
                    "SPL104",
                    "warning",
                    a.reader,
                    f"{a.reader} reads {rel}, a versioned physical table of SQLMesh that changes name with every breaking change.",
                    "point it at the model's view (schema without the sqlmesh__ prefix) so the binding follows SQLMesh's environments",
                )
            )
            continue
        look = [
            w for w in by_table.get(a.relation.name, []) if graph.nodes[w].project != node.project
        ]
        if look:
            checks.append(
                Check(
                    "SPL103",
                    "warning",
                    a.reader,
                    f"{a.reader} reads {rel}, which nothing writes, but {', '.join(sorted(look))} writes a relation of the same name ({', '.join(sorted({r.key for w in look for r in graph.nodes[w].all_writes if r.name == a.relation.name}))}).",
                    "point the source at that relation, or declare the binding in splice.toml if it is the same data",
                )
            )
            continue
        if node.kind in ("source", "external"):
            checks.append(
                Check(
                    "SPL102",
                    "warning",
                    a.reader,
                    f"{a.reader} reads {rel}, which no node of the workspace writes; it counts as an external input.",
                    'declare the job that loads it as [[ingestion]] in splice.toml (with writes = ["'
                    + a.relation.schema
                    + "."
                    + a.relation.name
                    + '"]) to see it in lineage and blast radius',
                )
            )

    for e in graph.bindings:
        if e.evidence != "declared":
            continue
        wnode, rnode = graph.nodes[e.upstream], graph.nodes[e.downstream]
        if rnode.kind == "dashboard" or not rnode.reads or not wnode.all_writes:
            continue
        if not set(rnode.reads) & set(wnode.all_writes):
            checks.append(
                Check(
                    "SPL202",
                    "error",
                    rnode.id,
                    f"declared binding {wnode.id} -> {rnode.id}: {rnode.id} reads {', '.join(x.key for x in rnode.reads)} but {wnode.id} writes {', '.join(x.key for x in wnode.all_writes)} in this target.",
                    "correct the binding in splice.toml, or make the reader follow the writer's environment",
                )
            )

    for n in graph.nodes.values():
        if n.kind not in ("source", "external", "ingestion", "seed"):
            continue
        if not graph.children(n.id):
            continue
        if n.kind == "ingestion" and all(
            graph.nodes[c].columns and all(graph.nodes[c].columns.values())
            for c in graph.children(n.id)
        ):
            continue  # every reader of what the job loads declares its column types
        if not n.columns:
            checks.append(
                Check(
                    "SPL301",
                    "warning",
                    n.id,
                    f"{n.id} declares no columns, so column lineage through it is weaker (SELECT * cannot expand, unqualified columns may be opaque).",
                    _column_fix(n.tool, n.kind),
                )
            )
        elif any(not t for t in n.columns.values()):
            missing = [c for c, t in n.columns.items() if not t]
            checks.append(
                Check(
                    "SPL301",
                    "warning",
                    n.id,
                    f"{n.id} has columns without a type: {', '.join(missing[:5])}{'...' if len(missing) > 5 else ''}.",
                    _column_fix(n.tool, n.kind),
                )
            )
    return checks


def _column_fix(tool: str, kind: str) -> str:
    if tool == "sqlmesh":
        return "run `sqlmesh create_external_models` or add the columns to external_models.yaml"
    if tool == "dbt" and kind == "seed":
        return "give the seed's columns types with +column_types in dbt_project.yml (or column_types in its config)"
    if tool == "dbt":
        return "add columns with data_type to the source's YAML"
    if tool == "dlt":
        return "let the pipeline run once so its schema is known, or declare the columns where its tables are read (external_models.yaml, a dbt source's YAML)"
    return "declare the columns where the job's tables are read (external_models.yaml in SQLMesh, data_type in a dbt source's YAML)"


def lineage_checks(results: dict[str, Any]) -> list[Check]:
    """Checks on column lineage results (node id -> ModelLineage)."""
    checks: list[Check] = []
    for nid in sorted(results):
        ml = results[nid]
        reason = getattr(ml, "opaque_reason", None)
        if reason:
            checks.append(
                Check(
                    "SPL302",
                    "warning",
                    nid,
                    f"{nid} is opaque to column lineage: {reason}",
                    "lineage stops here; for a Python model declare its columns, for SQL fix what the reason names",
                )
            )
            continue
        cols = getattr(ml, "columns", {}) or {}
        bad = sorted(c for c, cl in cols.items() if getattr(cl, "opaque_reason", None))
        if bad:
            first = cols[bad[0]].opaque_reason
            checks.append(
                Check(
                    "SPL303",
                    "info",
                    nid,
                    f"{nid}: {len(bad)} column(s) could not be resolved ({', '.join(bad[:5])}): {first}",
                    "declare the column types of the tables it reads",
                )
            )
    return checks


def exit_status(checks: list[Check]) -> int:
    return 1 if any(c.severity == "error" for c in checks) else 0
