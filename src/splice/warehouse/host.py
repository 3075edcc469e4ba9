"""What Splice's warehouse code reads of a workspace, as a protocol: the ``[warehouse]`` settings,
the warehouse file's path, the dialect and the root.

:mod:`splice.warehouse` sits below :mod:`splice.workspace` (:mod:`splice.layers`), so it names
no ``Workspace``; :class:`splice.workspace.core.Workspace` is a :class:`WarehouseHost` by its
shape, and mypy checks that wherever one is passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class WarehouseSettings(Protocol):
    """``[warehouse]`` as the connections read it (``splice.config.workspace.WarehouseSection``)."""

    @property
    def type(self) -> str: ...

    @property
    def remote(self) -> str | None: ...

    @property
    def url(self) -> str | None: ...

    @property
    def password_env(self) -> str | None: ...

    def pg_fields(self) -> dict[str, Any]: ...


class HasWarehouse(Protocol):
    """A configuration with a ``[warehouse]`` section (``splice.config.workspace.WorkspaceConfig``)."""

    @property
    def warehouse(self) -> WarehouseSettings: ...


class WarehouseHost(Protocol):
    """A workspace as the warehouse code sees it."""

    @property
    def root(self) -> Path: ...

    @property
    def config(self) -> HasWarehouse: ...

    @property
    def dialect(self) -> str: ...

    @property
    def warehouse_path(self) -> Path: ...

    def ensure_warehouse(self) -> None:
        """Start the workspace's own warehouse server (``[warehouse] local``) if it is not
        running; nothing for any other warehouse. Called before the first connection."""
        ...
