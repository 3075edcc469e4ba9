"""A demo story for the scope tests: the rates vendor freezes on a Friday.

The clean quarter is built through Thursday 2026-09-24 and baselined; on Friday 2026-09-25 the
vendor re-serves Thursday's rates (as-of 2026-09-24); production then runs on to 2026-09-30
and is watched.  Friday's bad rate converts Friday's, Saturday's and Sunday's bookings, and
every later day of the quarter-to-date running total.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


def tell_friday_freeze(
    directory: Path, *, before_run: Callable[[Path], None] | None = None
) -> FridayStory:
    """Build through Thursday, baseline, freeze Friday, run on to the quarter's end, watch.

    ``before_run(workspace)`` may change the raw data the production run reads (then the run
    may fail, as a blocking audit makes it)."""
    from splice import api
    from splice.demo.bookings import load_bookings
    from splice.demo.build import build_demo
    from splice.demo.ingest import ingest_fx_rates
    from splice.demo.layout import EXECUTION_TIME, Q3_END
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
    if before_run is not None:
        before_run(ws_dir)
    with api.open_workspace(ws_dir) as ws:
        report = api.run(ws, execution_time=EXECUTION_TIME)
        assert report.ok or before_run is not None, report.summary()
        found = api.watch(ws)
    return FridayStory(ws_dir, report, found)


def inflate_rate(workspace: Path, day: str = "2026-09-29", currency: str = "JPY") -> None:
    """One raw rate 100,000 times too large: fx.daily_rates' accepted_range audit (below 10)
    fails and blocks the models downstream."""
    import duckdb

    con = duckdb.connect(str(workspace / "warehouse.duckdb"))
    try:
        con.execute(
            "UPDATE raw.fx_rates SET rate_to_usd = rate_to_usd * 100000 "
            "WHERE rate_date = CAST(? AS DATE) AND currency = ?",
            [day, currency],
        )
    finally:
        con.close()
