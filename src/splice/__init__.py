"""Splice: one graph, one plan and one production watch across dbt and SQLMesh.

The public surface, re-exported in one place::

    from splice import Workspace, SpliceError
    with Workspace.open("demo-workspace") as ws:
        graph = ws.graph()
"""

from __future__ import annotations

from splice.errors import (
    ConfigError,
    GrantError,
    NodeNotFoundError,
    OrchestratorError,
    ProjectError,
    ReviewError,
    SelectorError,
    SpliceError,
    StateError,
    WarehouseError,
)
from splice.version import __version__

__all__ = [
    "ConfigError",
    "GrantError",
    "NodeNotFoundError",
    "OrchestratorError",
    "ReviewError",
    "ProjectError",
    "SelectorError",
    "SpliceError",
    "StateError",
    "WarehouseError",
    "Workspace",
    "__version__",
]


def __getattr__(name: str) -> object:
    # Workspace pulls in the providers; import it lazily so `import splice` stays light.
    if name == "Workspace":
        from splice.workspace.core import Workspace

        return Workspace
    raise AttributeError(name)
