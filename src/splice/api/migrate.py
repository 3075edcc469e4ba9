"""Warehouse migrations (:mod:`splice.migrate`): plan, approve, run, check, complete. Each call
takes the workspace opened on the source target; the destination is opened beside it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from splice.support.principals import Principal
from splice.workspace.core import Workspace


@contextmanager
def _dest(ws: Workspace, target: str) -> Iterator[Workspace]:
    other = Workspace.open(ws.root, target, use_cache=ws.use_cache)
    try:
        yield other
    finally:
        other.close()


def migrate_plan(ws: Workspace, *, to: str, principal: Principal,
                 execution_time: str | None = None, tolerance: float = 0.0001,
                 relative_tolerance: float = 1e-6) -> dict[str, Any]:  # fmt: skip
    """Plan moving this target (``ws``'s) to target ``to`` in waves: raw relations copied,
    then each project rebuilt by its tool; stored as ``MG-n``."""
    from splice.migrate import plan

    with _dest(ws, to) as dest:
        return plan(ws, dest, principal=principal, execution_time=execution_time,
                    tolerance=tolerance, relative_tolerance=relative_tolerance).as_dict()  # fmt: skip


def migrate_approve(ws: Workspace, migration_id: str, *, wave: int | None = None,
                    principal: Principal, comment: str | None = None) -> dict[str, Any]:  # fmt: skip
    """An owner of the wave's domains approves it (default: the next wave not approved)."""
    from splice.migrate import approve

    return approve(ws, migration_id, wave, principal=principal, comment=comment).as_dict()


@contextmanager
def _pair(ws: Workspace, migration_id: str) -> Iterator[tuple[Workspace, Workspace]]:
    """The migration's source and destination workspaces (``ws`` itself when it is either)."""
    from splice.migrate import load

    m = load(ws.state, migration_id)
    opened: list[Workspace] = []

    def side(target: str) -> Workspace:
        if target == ws.target:
            return ws
        other = Workspace.open(ws.root, target, use_cache=ws.use_cache)
        opened.append(other)
        return other

    try:
        yield side(m.source), side(m.dest)
    finally:
        for other in opened:
            other.close()


def migrate_run(ws: Workspace, migration_id: str, *, wave: int | None = None,
                principal: Principal, progress: Any = None) -> dict[str, Any]:  # fmt: skip
    """Run the next wave (or ``wave``, to resume after a fix) and check it."""
    from splice.migrate import run
    from splice.repair.recovery import recover_in_session

    with _pair(ws, migration_id) as (source, dest):
        return run(source, dest, migration_id, wave, principal=principal, progress=progress,
                   recover=recover_in_session).as_dict()  # fmt: skip


def migrate_check(ws: Workspace, migration_id: str, *, wave: int, principal: Principal,
                  progress: Any = None) -> dict[str, Any]:  # fmt: skip
    """Run a wave's parity checks again."""
    from splice.migrate import check

    with _pair(ws, migration_id) as (source, dest):
        return check(source, dest, migration_id, wave, principal=principal,
                     progress=progress).as_dict()  # fmt: skip


def migrate_complete(ws: Workspace, migration_id: str, *, principal: Principal,
                     progress: Any = None) -> dict[str, Any]:  # fmt: skip
    """Every wave checked once more, then signed complete by an owner: the receipt."""
    from splice.migrate import complete

    with _pair(ws, migration_id) as (source, dest):
        return complete(source, dest, migration_id, principal=principal, progress=progress)


def migrate_status(ws: Workspace, migration_id: str | None = None) -> list[dict[str, Any]]:
    """One migration (or every one, newest first) with its waves and their checks."""
    from splice.migrate import list_migrations, load

    found = [load(ws.state, migration_id)] if migration_id else list_migrations(ws.state)
    return [m.as_dict() for m in found]
