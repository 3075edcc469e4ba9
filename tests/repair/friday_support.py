"""A demo story for the repair-scope tests: the rates vendor freezes on a Friday.

The clean quarter is built through Thursday 2026-09-24 and baselined; on Friday 2026-09-25 the
vendor re-serves Thursday's rates (as-of 2026-09-24); production then runs on to 2026-09-30
and is watched.  Friday's bad rate converts Friday's, Saturday's and Sunday's bookings (the
as-of join takes the latest business-day rate), and every later day of the quarter-to-date
running total.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

CLEAN_THROUGH = date(2026, 9, 24)
FRIDAY = date(2026, 9, 25)
FREEZE = {"incident": "friday-freeze",
          "freeze": {"from": "2026-09-25", "to": "2026-09-25", "serve_as_of": "2026-09-24"}}  # fmt: skip


@dataclass
class FridayStory:
    workspace: Path
    run: Any
    watch: Any


def tell_friday_freeze(directory: Path) -> FridayStory:
    """Build through Thursday, baseline, freeze Friday, run on to the quarter's end, watch."""
    from splice import api
    from splice.demo.bookings import load_bookings
    from splice.demo.build import build_demo
    from splice.demo.ingest import ingest_fx_rates
    from splice.demo.layout import EXECUTION_TIME, Q3_END, RECORD_FILE
    from splice.demo.vendor import settings_path

    built = build_demo(directory, through=CLEAN_THROUGH)
    ws_dir = built.workspace
    with api.open_workspace(ws_dir) as ws:
        api.watch(ws, backfill=True)
    path = settings_path(ws_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(FREEZE, indent=2) + "\n")
    ingest_fx_rates(ws_dir, FRIDAY, Q3_END)
    load_bookings(ws_dir, FRIDAY, Q3_END)
    record = ws_dir / RECORD_FILE  # the clock now says the quarter is loaded (as the story's)
    data = json.loads(record.read_text())
    data.update({"end": Q3_END.isoformat(), "execution_time": EXECUTION_TIME.isoformat()})
    record.write_text(json.dumps(data, indent=2) + "\n")
    with api.open_workspace(ws_dir) as ws:
        report = api.run(ws, execution_time=EXECUTION_TIME)
        assert report.ok, report.summary()
        found = api.watch(ws)
    return FridayStory(ws_dir, report, found)


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
    import json

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
    import json

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
