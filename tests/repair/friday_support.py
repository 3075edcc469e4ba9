"""Helpers for the repair-scope tests on the Friday story (:func:`splice.demo.story.tell_friday_freeze`):
the damage it does, and a per-node scope given to or taken from an incident."""

from __future__ import annotations

import json
from typing import Any

from splice.demo.story import FRIDAY, FridayStory, tell_friday_freeze

__all__ = ["FRIDAY", "FridayStory", "tell_friday_freeze"]


def damage_of_the_friday_freeze() -> dict[str, Any]:
    """The per-node scope the diagnosis gives the Friday freeze (contract 2 of issue 15): what
    the tests write into an incident whose diagnosis does not list it (yet)."""
    fri, sat, sun = "2026-09-25", "2026-09-26", "2026-09-27"
    weekend = {"time_column": "booking_date", "intervals": [fri, sat, sun],
               "ranges": [[fri, sun]], "full": False,
               "why": "reads fx.daily_rates.rate_date 2026-09-25 (as-of join)"}  # fmt: skip
    qtd = [f"2026-09-{d}" for d in range(25, 31)]
    return {
        "nodes": [
            {
                "node": "pricing:fx.daily_rates",
                "time_column": "rate_date",
                "intervals": [fri],
                "ranges": [[fri, fri]],
                "full": False,
                "why": "the origin",
            },
            {"node": "pricing:marts.fct_bookings_usd", **weekend},
            {"node": "pricing:marts.agg_gmv_daily", **weekend},
            {
                "node": "finance:fct_gmv_qtd",
                "time_column": "booking_date",
                "intervals": qtd,
                "ranges": [[fri, qtd[-1]]],
                "full": True,
                "why": "a running total over the quarter",
            },
        ],
        "blocked": [],
    }


def give_node_scope(ws: Any, incident_id: str, *, force: bool = False) -> None:
    """Write the Friday freeze's per-node scope into the incident's diagnosis when the
    diagnosis does not list one (``force``: replace it)."""

    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
    diag = dict(inc.diagnosis)
    scope = dict(diag.get("scope") or {})
    if scope.get("nodes") and not force:
        return
    scope.update(damage_of_the_friday_freeze())
    diag["scope"] = scope
    with ws.state.transaction() as conn:
        conn.execute("UPDATE incidents SET diagnosis = ? WHERE incident_id = ?",
                     (json.dumps(diag), incident_id))  # fmt: skip


def strip_node_scope(ws: Any, incident_id: str) -> dict[str, Any]:
    """Remove the per-node scope from the diagnosis (an older incident); returns it."""

    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
    diag = dict(inc.diagnosis)
    scope = dict(diag.get("scope") or {})
    removed = {"nodes": scope.pop("nodes", None), "blocked": scope.pop("blocked", None)}
    diag["scope"] = scope
    with ws.state.transaction() as conn:
        conn.execute("UPDATE incidents SET diagnosis = ? WHERE incident_id = ?",
                     (json.dumps(diag), incident_id))  # fmt: skip
    return removed
