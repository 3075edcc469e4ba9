"""After an undo, the incident's metrics are measured again: the values Splice keeps must be
the restored ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def remeasure_after_undo(ws: Workspace, incident_id: str) -> str | None:
    """Measure the incident's metrics again: the values Splice keeps must be the restored ones
    (a later repair's verification compares against them), and the anomalies come back with
    the data. A failure here never undoes the undo: it is returned (and logged by the caller),
    and the next ``splice watch`` measures again."""
    from splice.errors import SpliceError
    from splice.repair.verify import incident_specs
    from splice.watch.incidents import get_incident, incident_anomalies
    from splice.watch.service import watch

    inc = get_incident(ws.state.conn, incident_id)
    specs = incident_specs(ws, inc, incident_anomalies(ws.state.conn, incident_id))
    if not specs:
        return None
    try:
        watch(ws, backfill=True, only=specs)
    except SpliceError as e:
        return e.message
    return None
