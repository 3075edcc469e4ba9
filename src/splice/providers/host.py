"""What the providers read of a workspace, as a protocol: its projects besides what the warehouse
code reads (:class:`splice.warehouse.host.WarehouseHost`).

:mod:`splice.providers` sits below :mod:`splice.workspace` (:mod:`splice.layers`), so it names
no ``Workspace``; :class:`splice.workspace.core.Workspace` is a :class:`ProjectsHost` by its
shape, and mypy checks that wherever one is passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from splice.warehouse.host import HasWarehouse, WarehouseHost


class ProjectSettings(Protocol):
    """A ``[[projects]]`` entry (``splice.config.workspace.ProjectSection``)."""

    @property
    def name(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def path(self) -> str: ...


class ProjectsConfig(HasWarehouse, Protocol):
    """A configuration with projects and a warehouse (``WorkspaceConfig``)."""

    @property
    def projects(self) -> Sequence[ProjectSettings]: ...


class ProjectsHost(WarehouseHost, Protocol):
    """A workspace as the providers see it."""

    @property
    def config(self) -> ProjectsConfig: ...
