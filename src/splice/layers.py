"""Splice's layers, as the folder tree: the packages of ``src/splice``, top-down.

A package may import its own modules and the packages listed after it, never one listed before
it; ``tests/test_layers.py`` checks every import (module-level and inside functions), by
folder, and that no modules import each other in a circle. The ways in (:data:`FACADE_ONLY`)
call Splice through :mod:`splice.api` only. The modules at the top of ``src/splice``
(:data:`GROUND`: the errors, the version, this list) may be imported by any package. Where a
new module goes, and why this order: ``docs/internals.md``.

>>> PACKAGES.index("repair") < PACKAGES.index("watch") < PACKAGES.index("run")
True
>>> max(PACKAGES.index(p) for p in ("grants", "migrate", "auth", "repair")) < PACKAGES.index("approvals")
True
>>> [p for p in PACKAGES if p in FACADE_ONLY]
['cli', 'serve', 'mcp', 'web', 'demo']
"""

from __future__ import annotations

ROOT = "splice"

#: Top-down. Each line is one package of ``src/splice``.
PACKAGES: tuple[str, ...] = (
    "cli",  # the splice command
    "serve",  # splice serve: the shared server (mounts web and mcp)
    "mcp",  # the MCP tools for coding agents
    "web",  # the web page
    "demo",  # the demo workspace and its stories: a scripted user of splice.api
    "api",  # the one facade every way in calls; the hub a long-lived server answers through
    "operator",  # splice serve running production by itself: schedules, triggers, the ladder
    "reads",  # what the pages and tools read: nodes, incidents, charts, neighbourhoods
    "notify",  # notifications: events, the outbox, channels
    "review",  # pull-request review: what changed, its reach, its data against prod
    "grants",  # scoped, time-boxed read access, approved like a repair
    "migrate",  # warehouse migrations in approved waves, with parity checks
    "auth",  # API keys, bearer tokens, sign-in through the identity provider
    "repair",  # proposals, approvals, apply, undo, verification, receipts, recovery
    "approvals",  # owners and domains, who may decide, expiry and escalation, autonomy and the stop, the audit log
    "watch",  # metrics, detectors, incidents, diagnosis
    "run",  # the runner, executors (dbt, SQLMesh, an ingestion reload), the journal, locks
    "openlineage",  # OpenLineage run events: emitted for every run, received from other tools
    "plan",  # the planner, evidence, the no-op memo
    "doctor",  # the workspace's checks
    "lineage",  # column lineage: engine, walk, the workspace's pass, queries, the warm cache
    "workspace",  # the Workspace, the joined graph's bindings, the graph cache
    "providers",  # dbt, SQLMesh, ingestion and dashboards loaders
    "bi",  # BI tools (Superset, ...): their dashboards read, incidents annotated, local servers
    "orchestrators",  # Dagster and Airflow, which run the ingestion jobs
    "semantic",  # the semantic layers metrics are declared in (dbt MetricFlow), compiled
    "config",  # splice.toml
    "warehouse",  # Splice's own queries; one folder per engine
    "graph",  # the joined graph's model, relations, selectors, serialisation
    "state",  # the state store (SQLite or PostgreSQL), signing, the witness
    "support",  # small modules any package may use: clock, names, numbers, principals, ...
)

#: The ways in, and the demo: they import splice.api, support, their own package and the
#: facade-only packages listed after them (the CLI starts the MCP and HTTP servers).
FACADE_ONLY: frozenset[str] = frozenset({"cli", "serve", "mcp", "web", "demo"})

#: Modules at the top of src/splice that any package may import.
GROUND: tuple[str, ...] = ("splice.errors", "splice.version", "splice.layers")

#: The entry points above every package: the package root and ``python -m splice``.
ENTRY: tuple[str, ...] = (ROOT, "splice.__main__")
