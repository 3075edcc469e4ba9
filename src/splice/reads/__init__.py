"""Read-only views for people and agents: what watch measures and found (:mod:`.quality`), the
ingestion jobs and dashboards at both ends of the graph (:mod:`.connectors`), and finding and
describing nodes (:mod:`.nodes`), and what the incident page draws: a chart per anomalous metric
(:mod:`.incident_charts`) and the lineage from the ingestion job to the dashboards
(:mod:`.incident_lineage`).

Every function takes an open Workspace and returns plain JSON-ready data (dates as ISO text);
:mod:`splice.api` re-exports them for the CLI and the MCP tools. None of them writes: Splice's
state is read only when it exists, and the warehouse through a read-only connection closed
before the call returns.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def state_conn(ws: Workspace) -> sqlite3.Connection | None:
    """The state's connection, or None when the workspace has no state yet (a read never
    creates one)."""
    if ws._state is None and not ws.state_exists:
        return None
    return ws.state.conn


def iso_time(ts: float | None) -> str | None:
    """A Unix time as ISO 8601 text in UTC.

    >>> iso_time(0.0), iso_time(None)
    ('1970-01-01T00:00:00+00:00', None)
    """
    if ts is None:
        return None
    return datetime.fromtimestamp(float(ts), tz=UTC).isoformat()
