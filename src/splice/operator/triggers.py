"""Production moved: the reasons to watch that the operator notices by itself.

- **Splice's runs** (the CLI's, a repair's, another server's): finished runs in the journal
  after the cursor ``journal``; the operator's own scheduled runs are watched by the schedule
  and not counted twice.
- **An orchestrator's runs** of an ``[[ingestion]]`` job (Dagster, Airflow): finished runs seen
  through the same API a reload uses, after a cursor per job (the end time of the last one
  seen, and its id), so each run is seen once, across restarts. A ``local`` orchestrator that
  is not running is not started to be asked.
- **OpenLineage events** (``POST /api/v1/lineage``): a COMPLETE event whose outputs are
  relations of the graph (:func:`from_lineage_event`).

Each becomes a row of ``operator_triggers``; the operator coalesces them into one watch per
target per quiet period (:func:`splice.operator.service.Operator.watch_triggered`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from splice.operator import store

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

log = logging.getLogger("splice.operator")

#: The commands of runs the operator started itself (their schedule watches after them).
OWN_COMMAND_PREFIX = "splice schedule "


def downstream(ws: Workspace, node_ids: list[str]) -> set[str]:
    """``node_ids`` that are in the graph, and every node downstream of them: what a watch
    after they moved measures (:func:`splice.watch.service.watch`'s ``nodes``)."""
    graph = ws.graph()
    reach: set[str] = set()
    for nid in node_ids:
        if nid in graph.nodes:
            reach.add(nid)
            reach |= set(graph.descendants(nid))
    return reach


def poll_journal(ws: Workspace, *, now: float) -> int:
    """Finished runs of this target since the cursor become triggers; returns how many."""
    from splice.run.journal import Journal

    name = f"journal:{ws.target}"
    raw = store.cursor(ws.state, name)
    with Journal.for_workspace(ws) as j:
        runs = j.runs(target=ws.target, limit=50)
    finished = [r for r in runs if r.status != "running" and r.finished_at is not None]
    if raw is None:  # first look: start after what is there (the past is not news)
        last = max(((r.finished_at or 0.0, r.run_id) for r in finished), default=(0.0, ""))
        store.set_cursor(ws.state, name, json.dumps(list(last)))
        return 0
    seen = tuple(json.loads(raw))
    new = sorted(((r.finished_at or 0.0, r.run_id, r) for r in finished
                  if (r.finished_at or 0.0, r.run_id) > seen), key=lambda t: t[:2])  # fmt: skip
    count = 0
    for _end, _rid, r in new:
        command = r.command or ""
        if command.startswith(OWN_COMMAND_PREFIX):
            continue
        store.add_trigger(ws.state, ws.target, "run", {"run_id": r.run_id, "status": r.status,
                                                      "command": command}, at=now)  # fmt: skip
        count += 1
    if new:
        store.set_cursor(ws.state, name, json.dumps([new[-1][0], new[-1][1]]))
    return count


def poll_orchestrators(ws: Workspace, *, now: float) -> int:
    """Finished runs of every orchestrated ``[[ingestion]]`` job since its cursor become
    triggers (of a watch of what the job writes, downstream); returns how many."""
    from splice.errors import SpliceError
    from splice.orchestrators import for_job
    from splice.orchestrators.local_server import answers

    count = 0
    for job in ws.config.ingestion:
        orch = for_job(job, ws.root)
        if orch is None:
            continue
        name = f"orchestrator:{job.name}"
        if job.orchestrator is not None and job.orchestrator.local:
            probe = orch.local_server().probe
            if not answers(job.orchestrator.url, probe, timeout=1.0):
                # a local server that is not running ran nothing since: on a first look, what
                # ends from now on (the orchestrator's own clock) is news
                if store.cursor(ws.state, name) is None:
                    store.set_cursor(ws.state, name, json.dumps([time.time(), ""]))
                continue
            orch._local_up = True  # it answers: do not start it  # noqa: SLF001
        try:
            runs = [r for r in orch.recent_runs(limit=25) if r.finished and r.ended]
        except SpliceError as e:
            log.warning("could not list the runs of %s: %s", job.name, e.one_line())
            continue
        raw = store.cursor(ws.state, name)
        if raw is None:
            last = max(((r.ended or 0.0, r.run_id) for r in runs), default=(0.0, ""))
            store.set_cursor(ws.state, name, json.dumps(list(last)))
            continue
        ended, rid = json.loads(raw)
        new = sorted(((r.ended or 0.0, r.run_id, r) for r in runs
                      if (r.ended or 0.0, r.run_id) > (ended, rid)), key=lambda t: t[:2])  # fmt: skip
        for _end, run_id, r in new:
            store.add_trigger(ws.state, ws.target, "orchestrator",
                              {"system": r.system, "job": job.name, "run_id": run_id,
                               "status": r.status, "url": r.url,
                               "nodes": [f"ingestion:{job.name}"]}, at=now)  # fmt: skip
            count += 1
        if new:
            store.set_cursor(ws.state, name, json.dumps([new[-1][0], new[-1][1]]))
    return count


def from_lineage_event(ws: Workspace, event: Any, node_ids: list[str], *,
                       now: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Record what an OpenLineage event means for the operator: a COMPLETE event whose
    outputs are nodes of the graph triggers a watch of the metrics downstream of them; a FAIL
    event is kept as run evidence. Returns what was done, for the HTTP answer."""
    now = time.time() if now is None else now
    own = splice_run_id(event)
    if own is not None and _in_journal(ws, own):
        # this workspace's own run, sent back to it: the journal has it (poll_journal)
        return {"kept": False, "watch": False, "own_run": own}
    detail = {"job": f"{event.job_namespace}/{event.job_name}", "run_id": str(event.run_id),
              "event_type": event.event_type, "nodes": node_ids}  # fmt: skip
    if event.event_type == "FAIL":
        detail["error"] = event.error_message
        store.log(ws.state, ws.target, "lineage-fail",
                  f"OpenLineage: {detail['job']} failed" +
                  (f": {event.error_message}" if event.error_message else ""),
                  at=now, **detail)  # fmt: skip
        return {"kept": True, "watch": False}
    if event.event_type != "COMPLETE" or not node_ids:
        return {"kept": False, "watch": False}
    store.add_trigger(ws.state, ws.target, "openlineage", detail, at=now)
    return {"kept": True, "watch": True, "nodes": node_ids}


def splice_run_id(event: Any) -> str | None:
    """The Splice run an event was emitted for (its ``splice.run_id`` tag), if Splice sent it.

    >>> from types import SimpleNamespace as E
    >>> splice_run_id(E(raw={"run": {"facets": {"tags": {"tags": [
    ...     {"key": "splice.run_id", "value": "r20260929-060100-abc123"}]}}}}))
    'r20260929-060100-abc123'
    >>> splice_run_id(E(raw={"run": {}})) is None
    True
    """
    raw = getattr(event, "raw", None) or {}
    tags = (((raw.get("run") or {}).get("facets") or {}).get("tags") or {}).get("tags") or []
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, dict) and tag.get("key") == "splice.run_id" and tag.get("value"):
            return str(tag["value"])
    return None


def _in_journal(ws: Workspace, run_id: str) -> bool:
    from splice.errors import SpliceError
    from splice.run.journal import Journal

    try:
        with Journal.for_workspace(ws) as j:
            return j.run(run_id).run_id == run_id
    except SpliceError:
        return False
