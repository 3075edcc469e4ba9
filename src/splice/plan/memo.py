"""The plan memo: a plan whose SQLMesh models build nothing is kept, and given again while
nothing it rests on can have changed, without loading dbt or SQLMesh.

Such a plan (it may build dbt models: the demo's first plan builds finance, which Splice has
never seen built) rests on four things; the memo keeps a mark of each and is used only while
all four are the same and the clock has not reached a new interval:

1. **the code**: the graph key (:mod:`splice.graph_cache`: splice.toml, every file of every
   project, the dbt profiles, the environment variables the projects read, the tools' and
   Splice's versions, the target), with the selector and exclusion;
2. **Splice's evidence**: the newest relation version and attempt of the target (a run, an
   ingestion, a failure all move it);
3. **SQLMesh's state**: an order-independent checksum of its ``_intervals`` and
   ``_environments`` tables in the warehouse (a ``sqlmesh run`` or restatement by hand moves
   it); a project with its own ``state_connection`` is never memoised;
4. **the clock**: the execution time is before the earliest moment a SQLMesh model can have a
   new interval due (the end of its last interval plus one interval unit).

A plan in which a SQLMesh model builds is never kept: SQLMesh's own plan of what is due moves
with the clock.  What the graph key cannot see (see :mod:`splice.graph_cache`) is not seen
here either: ``splice plan --fresh`` / ``splice run --fresh`` always plans from scratch.

>>> key_of({"a": 1}) == key_of({"a": 1}), key_of({"a": 1}) == key_of({"a": 2})
(True, False)
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from typing import Any

from splice.plan.model import NodeDecision, Plan, Reason, Segment
from splice.sqlrows import checksum_query

KIND = "noop_plan"
REUSED = "nothing changed since the plan of"  # how the memo's note begins
STATE_TABLES = ("_intervals", "_environments")


def key_of(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def code_key(ws: Any, selector: str | None, exclude: str | None) -> str:
    """The SHA-256 of everything the plan's code side reads (see the module docstring)."""
    return key_of([ws.inputs_key(), ws.target, selector, exclude])


def evidence_mark(ws: Any) -> list[Any]:
    conn = ws.state.conn
    v = conn.execute(
        "SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM evidence_versions WHERE target = ?",
        (ws.target,),
    ).fetchone()
    a = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(COALESCE(finished_at, started_at)), 0), "
        "GROUP_CONCAT(status) FROM evidence_attempts WHERE target = ?",
        (ws.target,),
    ).fetchone()
    return [list(v), list(a)]


def _own_state_connection(ws: Any, spec: Any) -> bool:
    base = ws.root / spec.path
    for name in ("config.yaml", "config.yml", "config.py"):
        f = base / name
        if f.exists() and "state_connection" in f.read_text(errors="replace"):
            return True
    return False


def state_probe(ws: Any) -> list[str] | None:
    """A checksum of SQLMesh's interval and environment state, or None when it cannot be read
    cheaply (then nothing is memoised)."""
    specs = [s for s in ws.config.projects if s.format == "sqlmesh"]
    if not specs:
        return []
    kind = ws.config.warehouse.type
    if kind not in ("duckdb", "postgres") or any(_own_state_connection(ws, s) for s in specs):
        return None
    from splice.errors import WarehouseError
    from splice.warehouse import connect

    if kind == "duckdb":
        import duckdb

        errors: tuple[type[BaseException], ...] = (duckdb.Error, WarehouseError)
    else:
        import psycopg

        errors = (psycopg.Error, WarehouseError)
    out: list[str] = []
    try:
        with connect(ws, "the plan memo", read_only=True) as con:
            for t in STATE_TABLES:
                n, total = con.execute(
                    checksum_query(f"sqlmesh.{t}", None, None, None, ws.dialect)
                ).fetchone()
                out.append(f"{t}:{n}:{total}")
    except errors:
        return None
    return out


def _now_ms(execution_time: datetime | None) -> int:
    if execution_time is None:
        return int(time.time() * 1000)
    t = execution_time if execution_time.tzinfo else execution_time.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def marks(ws: Any, code: str) -> dict[str, Any] | None:
    """The marks a remembered plan rests on, ``code`` being :func:`code_key`'s."""
    probe = state_probe(ws)
    if probe is None:
        return None
    return {
        "code": code,
        "evidence": evidence_mark(ws),
        "sqlmesh_state": probe,
    }


def lookup(
    ws: Any,
    selector: str | None,
    exclude: str | None,
    execution_time: datetime | None,
    code: str,
) -> Plan | None:
    """The memoised no-op plan, if every mark is unchanged and no interval fell due."""
    t0 = time.perf_counter()
    now = marks(ws, code)
    if now is None:
        return None
    key = key_of([ws.target, selector, exclude])
    hit = ws.state.cache_get_many(KIND, [key]).get(key)
    if not isinstance(hit, dict) or hit.get("marks") != now:
        return None
    due = hit.get("valid_until")
    if due is not None and _now_ms(execution_time) >= int(due):
        return None
    plan = plan_from_dict(hit["plan"])
    made = datetime.fromtimestamp(float(hit["made_at"]), tz=UTC)
    until = (
        f"; no SQLMesh interval falls due before "
        f"{datetime.fromtimestamp(int(due) / 1000, tz=UTC):%Y-%m-%d %H:%M} UTC"
        if due is not None
        else ""
    )
    plan.warnings = [
        *plan.warnings,
        f"{REUSED} {made:%Y-%m-%d %H:%M:%S} UTC (project files, "
        f"Splice's evidence and SQLMesh's state are the same{until}): that plan is reused "
        "without loading the tools (--fresh plans from scratch)",
    ]
    plan.timings = {"memo": round(time.perf_counter() - t0, 4)}
    if execution_time is not None:
        plan.execution_time = execution_time.isoformat()
    plan.memo = {"code": code, "exclude": exclude}  # a run of it remembers what follows
    plan.created_at = time.time()
    return plan


def remember(
    ws: Any,
    plan: Plan,
    selector: str | None,
    exclude: str | None,
    next_due: list[int | None],
    code: str,
) -> bool:
    """Keep ``plan`` when no SQLMesh model builds in it and every SQLMesh model's next due
    time is known;
    ``code`` is the :func:`code_key` taken before the plan read the projects."""
    if any(d is None for d in next_due):
        return False
    formats = {p.name: p.format for p in ws.config.projects}
    if any(formats.get(plan.decisions[n].project) == "sqlmesh" for n in plan.to_build):
        return False
    now = marks(ws, code)
    if now is None:
        return False
    key = key_of([ws.target, selector, exclude])
    ws.state.cache_put_many(KIND, {key: {
        "marks": now,
        "valid_until": min(next_due) if next_due else None,  # type: ignore[type-var]
        "made_at": time.time(),
        "plan": plan.to_dict(),
    }})  # fmt: skip
    return True


def remember_after_run(ws: Any, plan: Plan, execution_time: datetime | str | None = None) -> bool:
    """After ``plan`` ran cleanly, plan once more with the graph already loaded (a fraction of a
    second) so that the next ``splice run`` with nothing new finds that no-op plan in the memo
    and loads neither tool. True when a no-op plan was remembered.

    The memo rests on the code key taken before ``plan`` read the projects: a file edited
    while the run went on no longer matches it, so that edit is never hidden.
    """
    if not plan.memo or not plan.to_build:
        return False
    from splice.plan.planner import make_plan

    again = make_plan(
        ws,
        plan.selector,
        exclude=plan.memo.get("exclude"),
        execution_time=execution_time,
        fresh=True,
        code=str(plan.memo["code"]),
    )
    return not again.to_build


def plan_from_dict(d: dict[str, Any]) -> Plan:
    """The inverse of :meth:`Plan.to_dict`."""
    decisions = {
        nid: NodeDecision(
            node_id=v["node_id"],
            project=v["project"],
            action=v["action"],
            reasons=[
                Reason(
                    r["code"],
                    r["text"],
                    r.get("upstream"),
                    tuple(r.get("components") or ()),
                    dict(r.get("data") or {}),
                )  # fmt: skip
                for r in v.get("reasons") or []
            ],
            fingerprint=dict(v.get("fingerprint") or {}),
            tool_view=dict(v.get("tool_view") or {}),
            inputs=list(v.get("inputs") or []),
        )
        for nid, v in d["decisions"].items()
    }
    return Plan(
        target=d["target"],
        environments=dict(d["environments"]),
        decisions=decisions,
        segments=[Segment(**s) for s in d.get("segments") or []],
        selector=d.get("selector"),
        created_at=float(d.get("created_at") or 0.0),
        warnings=list(d.get("warnings") or []),
        execution_time=d.get("execution_time"),
        timings={},
    )
