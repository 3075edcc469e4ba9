"""Runs: the journal, newest first; one run as a timeline of segments, one lane per project,
with every failure's error and every skip's reason.

:func:`timeline` turns a run's journal (:func:`splice.api.run_journal`) into what the page
draws: lanes (a project each, in the order they first ran) of segments (the tool, its method,
environment, status and span) of nodes (status, duration, span and why: the tool's error for a
failure, the failed node upstream for a skip, "nothing to do" for a no-op). Spans are in
thousandths of the run's length, for the SVG bars (``x`` and ``w`` out of 1000).
"""

from __future__ import annotations

from typing import Any

from splice import api
from splice.support import numbers
from splice.web.core import Ctx, Web
from splice.web.lists import POLL_MS, filtered, partial, poll_url

#: The runs read from the journal for the list (newest first), and how many are shown.
RUNS_READ, RUNS_SHOWN = 500, 50
#: Checks (dbt tests, SQLMesh audits) are summed per segment, not drawn as lanes of their own.
CHECK_KINDS = ("test", "audit")
SCALE = 1000.0
#: The narrowest bar drawn (a node that took no time still shows where it ran).
MIN_W = 4.0


def run_kind(r: dict[str, Any]) -> str:
    """What started a run: a repair applied, a review's build, or ``splice run``.

    >>> run_kind({"selector": "repair:PR-1"}), run_kind({"command": "splice run -s x"})
    ('repair', 'run')
    """
    if str(r.get("selector") or "").startswith("repair:") or "apply" in str(r.get("command")):
        return "repair"
    if "review" in str(r.get("command") or "") or r.get("target") == "review":
        return "review"
    return "run"


def run_list(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    every = api.list_runs(ctx.ws, limit=RUNS_READ)
    for r in every:
        s = r.get("summary") or {}
        counts = s.get("counts") or {}
        r["built"] = counts.get("success", 0)
        r["up_to_date"] = counts.get("noop", 0)
        r["failed"] = counts.get("failed", 0) + counts.get("interrupted", 0)
        r["skipped"] = counts.get("skipped", 0)
        r["kind"] = run_kind(r)
        r["projects"] = sorted((s.get("environments") or {}).keys())
    runs, filters = filtered(ctx, every, [
        ("status", "Status", lambda r: r["status"]),
        ("kind", "Kind", lambda r: r["kind"]),
        ("project", "Project", lambda r: r["projects"]),
    ])  # fmt: skip
    data = {
        "title": "Runs",
        "runs": runs[:RUNS_SHOWN],
        "filters": filters,
        "filtered_out": bool(every) and not runs,
        "poll": poll_url(ctx, "/runs", any(r["status"] == "running" for r in runs)),
        "poll_ms": POLL_MS,
    }
    return ("runs_list.html" if partial(ctx) else "runs.html"), data


def run_page(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    j = api.run_journal(ctx.ws, ctx.params["run_id"])  # an unknown run: NodeNotFoundError, 404
    run = j["run"]
    return "run.html", {
        "title": f"Run {run['run_id']}",
        "run": run,
        "t": timeline(run, j["events"]),
        "events": j["events"],
    }


# -- the timeline ---------------------------------------------------------------------------------
def _span(start: float, end: float, t0: float, length: float) -> dict[str, float]:
    """A span as SVG x/w out of 1000 (at least :data:`MIN_W` wide, never past the end).

    >>> _span(10.0, 15.0, 10.0, 10.0)
    {'x': 0.0, 'w': 500.0}
    >>> _span(20.0, 20.0, 10.0, 10.0)
    {'x': 996.0, 'w': 4.0}
    """
    x = max(0.0, min(SCALE, (start - t0) / length * SCALE))
    w = max(MIN_W, (max(end, start) - start) / length * SCALE)
    x = min(x, SCALE - MIN_W)
    return {"x": round(x, 1), "w": round(min(w, SCALE - x), 1)}


#: Durations and counts as everywhere else (splice.support.numbers).
seconds = numbers.duration
count = numbers.count


def why(status: str | None, data: dict[str, Any]) -> str:
    """What a node's status means for this node, in words.

    >>> why("skipped", {"skipped_because": "finance:stg"})
    'skipped: finance:stg failed upstream'
    >>> why("noop", {})
    'up to date: the tool had nothing to do (no interval missing)'
    """
    msg = str(data.get("message") or "")
    if status == "skipped":
        cause = data.get("skipped_because")
        return f"skipped: {cause} failed upstream" if cause else (msg or "skipped")
    if status == "noop":
        return "up to date: " + (msg or "the tool had nothing to do (no interval missing)")
    if status == "ephemeral":
        return "ephemeral: dbt inlines it into the models that read it; nothing is built"
    if status == "interrupted":
        return msg or "interrupted: the run died while it was being built"
    if status == "failed":
        failed = data.get("checks_failed") or []
        if failed and not msg:
            return f"a blocking check failed: {', '.join(failed)}"
        return msg or "failed (the tool gave no message)"
    return msg


def timeline(run: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's journal as lanes of segments of nodes, with its failures and skips explained.

    Returns ``{"lanes", "length", "ticks", "failures", "skips", "segment_errors", "plan",
    "planning", "planned_segments"}`` (``planning``: seconds from the run's start to its plan;
    the bars span ``length`` seconds from there): ``failures`` are the failed nodes and checks with the tool's error, ``skips``
    the skipped nodes grouped by the failed node they wait on.
    """
    started = float(run["started_at"])
    # the bars start when the plan was made (the tools' loading and planning come before)
    t0 = next((float(e["ts"]) for e in events if e["kind"] == "run_started"), started)
    last = max([float(e["ts"]) for e in events] + [float(run.get("finished_at") or t0), t0])
    length = max(last - t0, 1e-3)
    plan: dict[str, Any] = {}
    segs: dict[str, dict[str, Any]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for e in events:
        d = e.get("data") or {}
        kind, sid, ts = e["kind"], e.get("segment_id"), float(e["ts"])
        if kind == "run_started":
            plan = d
        elif kind == "segment_started" and sid:
            segs[sid] = {
                "id": sid,
                "project": e.get("project"),
                "format": d.get("format"),
                "environment": d.get("environment"),
                "planned": list(d.get("node_ids") or []),
                "depends_on": list(d.get("depends_on") or []),
                "start": ts,
                "end": None,
                "status": "running",
                "method": None,
                "duration": None,
                "error": None,
                "notes": [],
                "nodes": [],
                "checks": [],
                "log": [],
                "log_lines": 0,
            }
            order.append(sid)
        elif kind == "segment_finished" and sid in segs:
            s = segs[sid]
            s.update(
                end=ts,
                status=e.get("status") or "finished",
                duration=e.get("duration"),
                method=d.get("method"),
                error=d.get("error"),
                notes=list(d.get("notes") or []),
                log=[str(x) for x in d.get("log") or []],
                log_lines=int(d.get("log_lines") or 0),
            )
        elif kind == "node_started" and e.get("node_id"):
            nodes[e["node_id"]] = {"started": ts}
        elif kind in ("node_finished", "check_finished") and e.get("node_id") and sid in segs:
            nid = e["node_id"]
            dur = e.get("duration")
            begun = nodes.get(nid, {}).get("started")
            if begun is None:
                begun = ts - float(dur) if dur else ts
            row = {
                "id": nid,
                "kind": d.get("kind") or ("check" if kind == "check_finished" else None),
                "status": e.get("status") or "",
                "duration": dur,
                "rows": e.get("rows"),
                "version": d.get("version"),
                "start": begun,
                "end": ts,
                "why": why(e.get("status"), d),
                "message": d.get("message"),
                "skipped_because": _ids(d.get("skipped_because")),
                "of": list(d.get("of") or []),
                "failures": d.get("failures"),
                "blocking": d.get("blocking", True),
                **_span(begun, ts, t0, length),
            }
            nodes[nid] = row
            target = "checks" if kind == "check_finished" else "nodes"
            segs[sid][target].append(row)
    lanes: dict[str, dict[str, Any]] = {}
    for sid in order:
        s = segs[sid]
        end = s["end"] if s["end"] is not None else last
        s.update(_span(s["start"], end, t0, length))
        seen = {r["id"] for r in s["nodes"] + s["checks"]}
        s["not_run"] = [n for n in s["planned"] if n not in seen]
        s["check_counts"] = _counts(s["checks"])
        s["failed_checks"] = [c for c in s["checks"] if c["status"] in ("fail", "error")]
        s["nodes"].sort(key=lambda r: (r["start"], r["id"]))
        lane = lanes.setdefault(
            str(s["project"]), {"project": s["project"], "format": s["format"], "segments": []}
        )
        lane["segments"].append(s)
    failures: list[dict[str, Any]] = []
    skips: dict[str, list[str]] = {}
    for s in (segs[sid] for sid in order):
        for r in s["nodes"]:
            if r["status"] in ("failed", "interrupted"):
                failures.append({**r, "segment": s})
            elif r["status"] == "skipped":
                cause = ", ".join(r["skipped_because"]) or "an upstream failure"
                skips.setdefault(cause, []).append(r["id"])
        for c in s["failed_checks"]:
            failures.append({**c, "segment": s})
    return {
        "lanes": list(lanes.values()),
        "length": length,
        "ticks": [
            {"x": round(f * SCALE), "label": seconds(f * length) if f else "0"}
            for f in (0.0, 0.25, 0.5, 0.75, 1.0)
        ],
        "failures": failures,
        "skips": [{"cause": c, "nodes": ns} for c, ns in skips.items()],
        "segment_errors": [s for s in segs.values() if s["error"]],
        "plan": plan,
        "planning": t0 - started,
        "planned_segments": len(plan.get("segments") or []),
    }


def _ids(text: Any) -> list[str]:
    """The node ids in a ``skipped_because`` ("a, b").

    >>> _ids("finance:a, finance:b"), _ids(None)
    (['finance:a', 'finance:b'], [])
    """
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


def _counts(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return sorted(out.items())


def routes(web: Web) -> list[Any]:
    from starlette.routing import Route

    from splice.web.pages.graph import register_filters

    register_filters(web)
    return [
        Route("/runs", web.page(run_list), methods=["GET"]),
        Route("/runs/{run_id}", web.page(run_page), methods=["GET"]),
    ]
