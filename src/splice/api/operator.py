"""The operator through the facade: the pass ``splice serve`` runs, the schedules and activity
the CLI, the page and the MCP tools read, and the OpenLineage events the server receives.

The operator (:mod:`splice.operator`) sits below this facade; it is handed the facade's own
compositions (a run that keeps access grants, an apply that does too), so an autonomous step
does exactly what the same command typed by a person does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.api.served import Hub
    from splice.operator.clock import Clock
    from splice.operator.service import Operator
    from splice.workspace.core import Workspace


def _operations() -> Any:
    from splice.api.core import run
    from splice.api.repair import apply
    from splice.notify.outbox import deliver
    from splice.operator.ladder import Actions
    from splice.operator.service import Operations
    from splice.repair.flow import propose
    from splice.watch.service import watch

    return Operations(run=run, watch=watch,
                      ladder=Actions(propose=propose, apply=apply, notify=deliver))  # fmt: skip


def operator_for_hub(hub: Hub, clock: Clock | None = None) -> Operator:
    """The operator ``splice serve``'s scheduler leader runs (the clock: ``SPLICE_OPERATOR_CLOCK``
    or the system's)."""
    from splice.operator.clock import from_env
    from splice.operator.service import Operator

    return Operator(hub.workspace, _operations(), clock or from_env())


def operator_for_root(
    root: Path | str, target: str | None = None, *, clock: Clock | None = None
) -> Operator:
    """An operator for one command (``splice schedule run``), opening its own workspaces (the
    clock: ``clock``, else ``SPLICE_OPERATOR_CLOCK`` or the system's)."""
    from splice.api.session import open_workspace
    from splice.operator.clock import from_env
    from splice.operator.service import Operator

    @contextmanager
    def opened(t: str | None, *, light: bool = False) -> Iterator[Workspace]:
        with open_workspace(root, t or target) as ws:
            yield ws

    return Operator(opened, _operations(), clock or from_env())


def schedule_run(root: Path | str, name: str, *, target: str | None = None) -> dict[str, Any]:
    """Run the ``[[schedule]]`` ``name`` now, as the server would at its tick."""
    return operator_for_root(root, target).run_schedule(name)


def operator_status(ws: Workspace) -> dict[str, Any]:
    """The schedules (next tick, last outcome), the triggers waiting, each domain's level, the
    stop."""
    from splice.operator.clock import from_env
    from splice.operator.service import status

    return status(ws, from_env())


def receive_lineage(hub: Hub, body: bytes) -> dict[str, Any]:
    """An OpenLineage run event posted to ``/api/v1/lineage``: validated (an
    :class:`~splice.errors.InputError` for a bad body, nothing stored), its outputs mapped onto
    the graph, and a COMPLETE event on graph relations queued as a watch of the metrics
    downstream; a FAIL kept as run evidence."""
    from splice.openlineage.receive import parse, relations
    from splice.operator.clock import from_env
    from splice.operator.triggers import from_lineage_event

    event = parse(body)
    with hub.workspace() as ws:
        nodes = relations(event, ws.graph())
        done = from_lineage_event(ws, event, nodes, now=from_env().now().timestamp())
    return {"event_type": event.event_type, "run_id": str(event.run_id), **done}
