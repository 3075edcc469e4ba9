"""Splice's layers, top-down, as data: a module may import its own layer, the layers below it
and the infrastructure, never a layer above it (``tests/test_layers.py`` checks every import,
module-level and inside functions).

::

    entry           python -m splice; the package root (`from splice import Workspace`)
      |
    interfaces      splice.cli, splice.mcp, splice.serve,  } facade-only: splice.api, the
                    splice.web                             } infrastructure, their own package
    demo            the demo workspace and its stories     } (and demo, for `splice demo`)
      |
    api             splice.api: every way in calls this and nothing below it; the hub and the
                    authenticator a long-lived server answers through
      |
    review          pull-request review: what changed, its reach, its data against prod
    grants          scoped, time-boxed read access, approved like a repair
    migrate         warehouse migrations in approved waves, with parity checks
    repair          proposals, approvals, apply, undo, receipts, recovery of killed applies
    watch           metrics, anomalies, incidents, diagnosis
    run             the runner, executors (dbt, SQLMesh, an ingestion reload), the journal
    plan            the planner, evidence, the no-op memo
    lineage         column lineage; the workspace's checks (doctor_service)
    providers       dbt, SQLMesh, ingestion and dashboards loaders; the Workspace
    graph           the joined graph, selectors, splice.toml (config), the graph cache, the
                    orchestrators that run ingestion jobs (Dagster)
    state           the SQLite state store and its witness

    infrastructure  small modules any layer may use: errors, names, principals, the clock,
                    captured tool output, fault points, environmental faults, the SQLMesh
                    import shim, the warehouse connection. They import only each other.

The facade-only layers (interfaces and demo) call Splice through :mod:`splice.api` only: the
demo is a scripted user of the api (it writes and builds a workspace and tells the incident
story through the same calls a person makes), and ``splice demo`` runs it, so it sits between
the interfaces and the api. Any module may read the package root's ``__version__``.

>>> layer_of("splice.repair.flow"), layer_of("splice.errors"), layer_of("splice.cli.main")
('repair', 'infrastructure', 'interfaces')
>>> rank("splice.run.runner") < rank("splice.plan.planner")  # 0 is the top
True
"""

from __future__ import annotations

ROOT = "splice"

#: Top-down: (layer, module prefixes). A prefix names a module or a package and what is under it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entry", ("splice.__main__", ROOT)),
    ("interfaces", ("splice.cli", "splice.mcp", "splice.serve", "splice.web")),
    ("demo", ("splice.demo",)),
    (
        "api",
        (
            "splice.api",
            "splice.hub",
            "splice.access",
            "splice.signin_oidc",
            "splice.reads",
            "splice.notify",
        ),
    ),
    ("review", ("splice.review",)),
    ("grants", ("splice.grants",)),
    ("migrate", ("splice.migrate",)),
    ("repair", ("splice.repair", "splice.keys")),
    ("watch", ("splice.watch",)),
    ("run", ("splice.run",)),
    ("plan", ("splice.plan",)),
    (
        "lineage",
        (
            "splice.lineage",
            "splice.lineage_service",
            "splice.lineage_query",
            "splice.lineage_explain",
            "splice.lineage_warm",
            "splice.doctor_service",
        ),
    ),
    ("providers", ("splice.providers", "splice.workspace")),
    (
        "graph",
        (
            "splice.graph",
            "splice.graph_cache",
            "splice.config",
            "splice.config_serve",
            "splice.config_notify",
            "splice.config_orchestrators",
            "splice.orchestrators",
            "splice.sqlrows",
        ),
    ),
    ("state", ("splice.state",)),
)

#: Usable from every layer; each imports only other infrastructure modules.
INFRASTRUCTURE: tuple[str, ...] = (
    "splice.errors",
    "splice.names",
    "splice.principals",
    "splice.clock",
    "splice.numbers",
    "splice.capture",
    "splice.faults",
    "splice.faults_env",
    "splice.sqlmesh_import",
    "splice.warehouse",
    "splice.warehouse_spark",
    "splice.pglocal",
    "splice.sparklocal",
    "splice.procs",
    "splice.layers",
)

#: Layers whose modules may import only splice.api, the infrastructure, their own package and
#: the modules of a facade-only layer at or below theirs (the CLI starts the MCP and HTTP servers).
FACADE_ONLY: tuple[str, ...] = ("interfaces", "demo")

#: What any module may import from the package root.
ROOT_NAMES = frozenset({"__version__"})

API = "splice.api"


def _matches(module: str, prefix: str) -> bool:
    if prefix == ROOT:
        return module == ROOT
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name ("infrastructure" included), or None if unplaced."""
    if any(_matches(module, p) for p in INFRASTRUCTURE):
        return "infrastructure"
    for name, prefixes in LAYERS:
        if any(_matches(module, p) for p in prefixes):
            return name
    return None


def package_of(module: str) -> str | None:
    """The prefix that places ``module`` (its own package: ``splice.cli`` for splice.cli.main)."""
    for p in INFRASTRUCTURE + tuple(p for _, ps in LAYERS for p in ps):
        if _matches(module, p):
            return p
    return None


def rank(module: str) -> int:
    """0 for the top layer, growing downwards; infrastructure ranks below every layer."""
    name = layer_of(module)
    if name is None:
        raise KeyError(module)
    names = [n for n, _ in LAYERS]
    return len(names) if name == "infrastructure" else names.index(name)
