"""Production running on in a demo workspace, with a fault of the bookings feed if asked.

The rates vendor's faults are switched on in ``vendor/vendor.json``
(:func:`splice.demo.vendor.set_incident`); the bookings' faults are the loader's:

- ``duplicate``: the first day's bookings are loaded twice (the second load appends the same
  rows);
- ``late``: 60% of the first day's bookings are loaded, the first day is processed
  (``splice run``), and the other 40% arrive in a later load, after it was processed;
- ``late-few``: the same with 5% arriving late (too few for the volume monitors to notice);
- ``drop-channel``: from the first day on, the bookings of one channel (``partner``, about a
  tenth of them) stop arriving: the day's total drops by that share.

:func:`run_on` loads the rates and bookings of ``start .. end`` and runs ``splice run`` (as the
story's production run does), and returns the run report without raising on a failed run (a
fault that fails an audit is part of what is measured).  With ``daily=True`` it runs as a daily
schedule would: each day's rates loaded by a journaled ingestion run (``splice ingest``: a load
that fails is on record, with the vendor's answer), the day's bookings, and ``splice run``.

A fault of the workspace itself (:data:`WORKSPACE_FAULTS`, :func:`apply_workspace_fault`):

- ``seed-duplicate``: a row of the finance project's seed ``currency_regions`` twice (its
  ``unique`` test fails at every run until the seed is fixed);
- ``seed-region``: a teammate moves EUR to the Americas in that seed (a change inside the
  project: every test passes, the regions of every month already published change).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from splice.errors import ConfigError

BOOKINGS_FAULTS = ("duplicate", "late", "late-few", "drop-channel")
#: The channel whose bookings stop arriving in the ``drop-channel`` fault.
DROPPED_CHANNEL = "partner"
#: The share of the day's bookings that arrives on time in the ``late`` faults.
ON_TIME_SHARE = {"late": 0.6, "late-few": 0.95}


@dataclass
class RunOn:
    report: Any  # the RunReport of the last splice run
    loads: list[str] = field(default_factory=list)  # the bookings load ids, in order
    runs: list[str] = field(default_factory=list)  # the run ids, in order
    ingestions: list[str] = field(default_factory=list)  # the ingestion runs' ids (daily)


def _run(workspace: Path, through: date) -> Any:
    from splice import api

    clock = datetime.combine(through + timedelta(days=1), datetime.min.time())
    with api.open_workspace(workspace) as ws:
        return api.run(ws, execution_time=clock)


def run_on(workspace: Path, start: date, end: date, *, bookings: str | None = None,
           daily: bool = False) -> RunOn:  # fmt: skip
    """Load the rates and bookings of ``start .. end`` and run production up to ``end``.

    ``bookings``: one of :data:`BOOKINGS_FAULTS` (on the first day), or None.  ``daily``: one
    journaled ingestion run, one bookings load and one ``splice run`` per day.
    """
    if daily:
        if bookings is not None:
            raise ConfigError("a bookings fault runs on one load, not day by day.",
                              fix="pass daily=False with a bookings fault")  # fmt: skip
        return _daily(workspace, start, end)
    from splice.demo.bookings import load_bookings
    from splice.demo.ingest import ingest_fx_rates

    if bookings is not None and bookings not in BOOKINGS_FAULTS:
        raise ConfigError(
            f"unknown bookings fault {bookings!r}.", fix=f"use one of {', '.join(BOOKINGS_FAULTS)}"
        )
    out = RunOn(report=None)
    rates = ingest_fx_rates(workspace, start, end)
    _record_clock(workspace, end, rates.stale_days, bookings)
    if bookings in ON_TIME_SHARE:
        share = ON_TIME_SHARE[bookings]
        out.loads.append(load_bookings(workspace, start, start, part=(0.0, share)).load_id or "")
        first = _run(workspace, start)
        out.runs.append(first.run_id)
        time.sleep(1.0)  # the late rows are loaded visibly after the interval was processed
        out.loads.append(
            load_bookings(workspace, start, start, append=True, part=(share, 1.0)).load_id or ""
        )
        if end > start:
            out.loads.append(load_bookings(workspace, start + timedelta(days=1), end).load_id or "")
    else:
        drop = DROPPED_CHANNEL if bookings == "drop-channel" else None
        out.loads.append(load_bookings(workspace, start, end, drop_channel=drop).load_id or "")
        if bookings == "duplicate":
            out.loads.append(load_bookings(workspace, start, start, append=True).load_id or "")
    out.report = _run(workspace, end)
    out.runs.append(out.report.run_id)
    return out


def _daily(workspace: Path, start: date, end: date) -> RunOn:
    from splice import api
    from splice.demo.bookings import load_bookings
    from splice.demo.ingest import PIPELINE_NAME

    out = RunOn(report=None)
    day = start
    while day <= end:
        with api.open_workspace(workspace) as ws:
            rates = api.ingest(ws, PIPELINE_NAME, day, day)  # a failed load is journaled
        out.ingestions.append(rates.run_id)
        out.loads.append(load_bookings(workspace, day, day).load_id or "")
        _record_clock(workspace, day, {}, None)
        out.report = _run(workspace, day)
        out.runs.append(out.report.run_id)
        day += timedelta(days=1)
    return out


def duplicate_seed_row(workspace: Path, seed: str = "finance/seeds/currency_regions.csv") -> Path:
    """Append a copy of the seed's first row (its ``unique`` test fails from now on)."""
    path = Path(workspace) / seed
    lines = path.read_text().splitlines()
    if len(lines) < 2:
        raise ConfigError(f"{path} has no row to duplicate.", fix="pass a seed with rows")
    path.write_text("\n".join([*lines, lines[1]]) + "\n")
    return path


def move_seed_region(workspace: Path, seed: str = "finance/seeds/currency_regions.csv",
                     currency: str = "EUR", region: str = "Americas") -> Path:  # fmt: skip
    """A teammate's edit: ``currency`` moves to ``region`` in the seed (every test still
    passes; every month finance published by region changes)."""
    path = Path(workspace) / seed
    lines = path.read_text().splitlines()
    rows = [ln.split(",") for ln in lines]
    hit = [i for i, r in enumerate(rows) if i and r and r[0] == currency]
    if not hit:
        raise ConfigError(f"{path} has no row for {currency}.", fix="name a currency it lists")
    rows[hit[0]][-1] = region
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    return path


#: Faults of the workspace itself, switched on before production runs on.
WORKSPACE_FAULTS: dict[str, Any] = {
    "seed-duplicate": duplicate_seed_row,
    "seed-region": move_seed_region,
}


def apply_workspace_fault(workspace: Path, name: str) -> Path:
    """Switch on workspace fault ``name`` (:data:`WORKSPACE_FAULTS`); the file it changed."""
    if name not in WORKSPACE_FAULTS:
        raise ConfigError(f"unknown workspace fault {name!r}.",
                          fix=f"use one of {', '.join(sorted(WORKSPACE_FAULTS))}")  # fmt: skip
    return Path(WORKSPACE_FAULTS[name](workspace))


def _record_clock(
    workspace: Path, end: date, stale: dict[date, date], bookings: str | None
) -> None:
    """The demo record now says the data is loaded to ``end`` and the clock is the next day
    (what a repair's plan runs with)."""
    import json

    from splice.demo.layout import RECORD_FILE
    from splice.demo.vendor import read_settings

    path = Path(workspace) / RECORD_FILE
    record = json.loads(path.read_text())
    record.update({
        "end": end.isoformat(),
        "execution_time": datetime.combine(end + timedelta(days=1), datetime.min.time()).isoformat(),
        "incident": read_settings(workspace).get("incident"),
        "bookings_fault": bookings,
    })  # fmt: skip
    days = dict(record.get("stale_rate_days") or {})
    days.update({d.isoformat(): a.isoformat() for d, a in sorted(stale.items())})
    record["stale_rate_days"] = days
    path.write_text(json.dumps(record, indent=2) + "\n")
