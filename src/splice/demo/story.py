"""The demo's incident story, told with Splice's own library (what ``make demo`` shows).

1. the clean quarter up to Sunday 2026-09-27 (the demo build, ``through=``);
2. ``splice watch --backfill``: every metric and monitor baselined; no anomaly;
3. Monday 2026-09-28: the vendor freezes (re-serves Friday's rates for Monday and Tuesday);
   production runs on: the ingestion jobs load 2026-09-28..30, ``splice run`` builds SQLMesh's
   missing intervals and the dbt models downstream; every audit and test passes;
4. ``splice watch``: one incident on Monday's data, diagnosed;
5. (:func:`tell_repair`) the vendor is fixed; the agent proposes the repair (undo captured
   first), maria (an owner of the pricing domain) approves it, and lee for finance (whose dbt
   models it rebuilds: every domain a repair touches decides), it applies as one journaled
   run, the verification passes, and the receipt is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from splice.demo.layout import EXECUTION_TIME, Q3_END, DemoError

#: The clean part of the story ends on the Sunday before the freeze.
CLEAN_THROUGH = date(2026, 9, 27)
FREEZE_FROM = date(2026, 9, 28)


@dataclass
class StoryResult:
    build: Any  # DemoResult of the clean part
    baseline_points: int
    baseline_anomalies: int
    run: Any  # RunReport of production running on
    watch: Any  # WatchResult of the watch that found it
    incidents: list[Any] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "build": self.build.as_dict(),
            "baseline": {"points": self.baseline_points, "anomalies": self.baseline_anomalies},
            "run": {
                "run_id": self.run.run_id,
                "status": self.run.status,
                "counts": self.run.counts(),
            },
            "watch": {"points": self.watch.points, "anomalies": len(self.watch.anomalies)},
            "incidents": [i.as_dict() for i in self.incidents],
        }


def tell_stale_rates(
    directory: Path,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    start: date | None = None,
    warehouse: str = "duckdb",
    warehouse_url: str | None = None,
    state_url: str | None = None,
    orchestrator: str | None = None,
    bookings_scale: int = 1,
    bi: str | None = None,
) -> StoryResult:
    """Build the clean quarter (from ``start``: a longer history), baseline it, let the
    vendor freeze, run on, and watch (on DuckDB, or on PostgreSQL: see :func:`build_demo`).
    ``orchestrator="dagster"`` (or ``"airflow"``): the rates feed runs there; production's
    load of the frozen days is a run of its job there.  ``bookings_scale`` and ``bi``: see
    :func:`build_demo` (with a BI tool, the incident is written onto its charts as the
    commands that notify write it)."""
    from splice import api
    from splice.demo.bookings import load_bookings
    from splice.demo.build import build_demo
    from splice.demo.ingest import ingest_fx_rates
    from splice.demo.vendor import set_incident

    say = progress or (lambda _m: None)
    from splice.demo.layout import Q3_START

    built = build_demo(
        directory,
        force=force,
        progress=progress,
        through=CLEAN_THROUGH,
        start=start or Q3_START,
        warehouse=warehouse,
        warehouse_url=warehouse_url,
        state_url=state_url,
        orchestrator=orchestrator,
        bookings_scale=bookings_scale,
        bi=bi,
    )
    ws_dir = built.workspace
    with api.open_workspace(ws_dir) as ws:
        say("Baselining every metric and monitor (splice watch --backfill)")
        base = api.watch(ws, backfill=True)
    say(
        f"Monday {FREEZE_FROM}: the rates vendor freezes (it re-serves Friday's rates); "
        "production runs on"
    )
    set_incident(ws_dir, "stale-rates")
    if orchestrator is not None:
        rates = _load_in_orchestrator(ws_dir, orchestrator, say)
    else:
        rates = ingest_fx_rates(ws_dir, FREEZE_FROM, Q3_END)
    load_bookings(ws_dir, FREEZE_FROM, Q3_END)
    _record_clock(ws_dir, rates)
    with api.open_workspace(ws_dir) as ws:
        say("splice run: SQLMesh's missing intervals, then the dbt models downstream")
        report = api.run(ws, execution_time=EXECUTION_TIME)
        if not report.ok:
            raise DemoError(
                f"the demo's production run {report.run_id} did not succeed: {report.summary()}",
                fix=f"splice runs show {report.run_id}; the tools' output is in {ws.log_path}",
            )
        counts = report.counts()
        say(
            f"Every check passed: {counts.get('checks_pass', 0) + counts.get('checks_success', 0)}"
            f" audits and tests, {counts.get('success', 0)} nodes built"
        )
        say("splice watch: measuring the new days")
        found = api.watch(ws)
        if bi is not None:  # as `splice watch` does after it: told, and shown on the charts
            api.notify_pending(ws)
    return StoryResult(
        build=built,
        baseline_points=base.points,
        baseline_anomalies=len(base.anomalies),
        run=report,
        watch=found,
        incidents=list(found.incidents),
    )


def _load_in_orchestrator(ws_dir: Path, system: str, say: Callable[[str], None]) -> Any:
    """Production's morning load of the frozen days, as a run of the job in the orchestrator
    (it succeeds: the vendor answers, with Friday's rates)."""
    from types import SimpleNamespace

    from splice import api
    from splice.demo.ingest import IngestResult
    from splice.demo.layout import days_between
    from splice.demo.vendor import frozen_as_of, read_settings

    say(f"{system} runs fx_rates_ingest for the new days (starting the local {system} first)")
    with api.open_workspace(ws_dir) as ws:
        runs = api.queue_ingestion(ws, "fx_rates_ingest", FREEZE_FROM, Q3_END,
                                   tags={"splice/reason": "demo: the morning load"})  # fmt: skip
    bad = [r for r in runs if not r.ok]
    if bad:
        raise DemoError(f"{system} run {bad[0].run_id} of fx_rates_ingest {bad[0].status}: "
                        f"{bad[0].message}.", fix=f"open {bad[0].url}")  # fmt: skip
    say(f"{system} run {runs[0].run_id} succeeded ({runs[0].url})")
    settings = read_settings(ws_dir)
    result = IngestResult(FREEZE_FROM, Q3_END)
    for day in days_between(FREEZE_FROM, Q3_END):
        as_of = frozen_as_of(day, settings)
        if as_of is not None:
            result.stale_days[day] = as_of
    return SimpleNamespace(stale_days=result.stale_days)


def _record_clock(
    workspace: Path,
    rates: Any,
    *,
    incident: str = "stale-rates",
    freeze_from: date = FREEZE_FROM,
    clean_through: date = CLEAN_THROUGH,
) -> None:
    """The demo record now says the quarter is loaded and the clock is 2026-10-01."""
    import json

    from splice.demo.layout import RECORD_FILE

    path = workspace / RECORD_FILE
    record = json.loads(path.read_text())
    record.update(
        {
            "end": Q3_END.isoformat(),
            "execution_time": EXECUTION_TIME.isoformat(),
            "incident": incident,
            "story": {
                "clean_through": clean_through.isoformat(),
                "freeze_from": freeze_from.isoformat(),
            },  # fmt: skip
        }
    )
    stale = dict(record.get("stale_rate_days") or {})
    stale.update({d.isoformat(): a.isoformat() for d, a in sorted(rates.stale_days.items())})
    record["stale_rate_days"] = stale
    path.write_text(json.dumps(record, indent=2) + "\n")


#: Who plays which part in the demo's repair (the demo's splice.toml names them as owners).
DEMO_AGENT = "splice-agent"
DEMO_OWNER = "maria"


@dataclass
class RepairStory:
    proposal: Any
    applied: Any

    def as_dict(self) -> dict[str, Any]:
        return {"proposal": self.proposal.as_dict(), "applied": self.applied.as_dict()}


def tell_repair(
    workspace: Path, incident_id: str, *, progress: Callable[[str], None] | None = None
) -> RepairStory:
    """The vendor is fixed; propose, approve (a demo owner), apply, verify, receipt."""
    from splice import api
    from splice.demo.vendor import set_incident
    from splice.support.principals import Principal

    say = progress or (lambda _m: None)
    set_incident(workspace, None)
    # the demo plays both parts on one machine: names given as --as would (auth cli-as)
    agent = Principal.of(DEMO_AGENT, kind="agent", auth="cli-as", scopes="read,propose")
    owner = Principal.of(DEMO_OWNER, kind="person", auth="cli-as")
    say("The vendor fixes its feed; the agent proposes the repair")
    with api.open_workspace(workspace) as ws:
        p = api.propose(ws, incident_id, principal=agent, progress=say)
        first = next((w for w in api.approval_status(ws, p)["waiting_for"]
                      if w["domain"] == p.domain), None)  # fmt: skip
        if first is not None and DEMO_OWNER not in first["owners"]:
            # a repair the demo's owner does not decide (a finance seed): its own owner does
            owner = Principal.of(first["owners"][0], kind="person", auth="cli-as")
        say(f"{owner.name} (owner of domain {p.domain}) approves {p.proposal_id}")
        p = api.approve(ws, p.proposal_id, principal=owner, comment="vendor confirmed the fix")
        # every domain the repair rewrites decides: finance's owner approves its rebuilt models
        for waiting in api.approval_status(ws, p)["waiting_for"]:
            other = Principal.of(waiting["owners"][0], kind="person", auth="cli-as")
            say(f"{other.name} (owner of domain {waiting['domain']}) approves {p.proposal_id}")
            p = api.approve(ws, p.proposal_id, principal=other,
                            comment=f"the {waiting['domain']} models it rebuilds checked")  # fmt: skip
        say(f"Applying {p.proposal_id}: reload, restatement, dbt rebuild")
        applied = api.apply(ws, p.proposal_id, principal=owner, progress=say)
    return RepairStory(p, applied)


#: The Friday story: clean through Thursday, the vendor frozen on Friday 2026-09-25.
FRIDAY = date(2026, 9, 25)


@dataclass
class FridayStory:
    workspace: Path
    run: Any  # RunReport of production running on from Friday
    watch: Any  # WatchResult of the watch that found it


def tell_friday_freeze(
    directory: Path,
    *,
    before_run: Callable[[Path], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> FridayStory:
    """Build through Thursday 2026-09-24, baseline, let the vendor re-serve Thursday's rates
    for Friday (``friday-freeze``), run on to the quarter's end and watch.

    Friday's bad rate converts Friday's, Saturday's and Sunday's bookings (the as-of join takes
    the latest business-day rate) and every later day of the quarter-to-date running total.
    ``before_run(workspace)`` may change the raw data the production run reads (the run may
    then fail, as a blocking audit makes it)."""
    from splice import api
    from splice.demo.bookings import load_bookings
    from splice.demo.build import build_demo
    from splice.demo.ingest import ingest_fx_rates
    from splice.demo.layout import Q3_END
    from splice.demo.vendor import set_incident

    say = progress or (lambda _m: None)
    built = build_demo(directory, through=FRIDAY - timedelta(days=1), progress=progress)
    ws_dir = built.workspace
    with api.open_workspace(ws_dir) as ws:
        say("Baselining every metric and monitor (splice watch --backfill)")
        api.watch(ws, backfill=True)
    say(f"Friday {FRIDAY}: the rates vendor re-serves Thursday's rates; production runs on")
    set_incident(ws_dir, "friday-freeze")
    rates = ingest_fx_rates(ws_dir, FRIDAY, Q3_END)
    load_bookings(ws_dir, FRIDAY, Q3_END)
    _record_clock(ws_dir, rates, incident="friday-freeze", freeze_from=FRIDAY,
                  clean_through=FRIDAY - timedelta(days=1))  # fmt: skip
    if before_run is not None:
        before_run(ws_dir)
    with api.open_workspace(ws_dir) as ws:
        report = api.run(ws, execution_time=EXECUTION_TIME)
        if not report.ok and before_run is None:
            raise DemoError(
                f"the Friday story's production run {report.run_id} did not succeed: "
                f"{report.summary()}",
                fix=f"splice runs show {report.run_id}; the tools' output is in {ws.log_path}",
            )
        found = api.watch(ws)
    return FridayStory(ws_dir, report, found)


def tell(
    directory: Path,
    *,
    incident: str | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    warehouse: str = "duckdb",
    warehouse_url: str | None = None,
    state_url: str | None = None,
    orchestrator: str | None = None,
    bi: str | None = None,
) -> tuple[Any, RepairStory | None]:
    """What ``splice demo`` does: the build (no incident), or the whole stale-rates story and
    its repair (see :func:`throwaway_server` for the PostgreSQL and the Dagster Splice starts
    itself)."""
    from splice.demo.build import build_demo

    workspace = Path(directory).expanduser().resolve()
    if incident != "stale-rates":
        built = build_demo(workspace, incident=incident, force=force, progress=progress,
                           warehouse=warehouse, warehouse_url=warehouse_url,
                           state_url=state_url, orchestrator=orchestrator, bi=bi)  # fmt: skip
        return built, None
    story = tell_stale_rates(workspace, force=force, progress=progress, warehouse=warehouse,
                             warehouse_url=warehouse_url, state_url=state_url,
                             orchestrator=orchestrator, bi=bi)  # fmt: skip
    fixed = tell_repair(story.build.workspace, story.incidents[0].incident_id, progress=progress)
    if bi is not None:
        from splice import api

        with api.open_workspace(story.build.workspace) as ws:  # the verified repair, shown
            api.notify_pending(ws)
    return story, fixed


@contextmanager
def throwaway_server(directory: Path, warehouse: str, warehouse_url: str | None) -> Iterator[None]:
    """Around ``splice demo``: a PostgreSQL or Spark Splice started in the workspace (no URL given) and
    the local orchestrator (Dagster, Airflow) are stopped when the block ends, whatever happened (a later command that
    needs either starts it again)."""
    from splice.demo import orchestration
    from splice.demo.pg import stop_local
    from splice.support.procs import quiet_local_starts

    workspace = Path(directory).expanduser().resolve()
    try:
        with quiet_local_starts():  # stopped below: nothing is left running to announce
            yield
    finally:
        if warehouse == "postgres" and not warehouse_url and (workspace / "splice.toml").exists():
            stop_local(workspace)
        if warehouse == "spark" and not warehouse_url and (workspace / "splice.toml").exists():
            from splice.demo import spark

            spark.stop_local(workspace)
        if (workspace / "splice.toml").exists():
            orchestration.stop(workspace)
