"""Migrations: plan the waves, approve each, run each with its parity checks, sign the end.

- ``plan``: the waves from the source target's graph (:mod:`splice.migrate.waves`), with the
  rows of each relation in the source; stored, and logged (``migrate-plan``).
- ``approve``: a person with the approve scope who is a named owner of one of the wave's
  domains, never whoever planned the migration, and never during an org-wide stop.
- ``run``: the next wave that has not passed (or the one named, to resume after a fix), once
  approved and every wave before it passed: raw relations copied, a project's models rebuilt
  in the destination by their own tool (one journaled ``splice run`` of the wave's nodes);
  then its checks (:mod:`splice.migrate.parity`). A failed check stops the migration there,
  with the difference; running that wave again after a fix resumes it.
- ``check``: a wave's checks again, without moving anything.
- ``complete``: every wave's checks run once more; all green, an owner signs the migration
  complete and its receipt (every wave, check and approver) goes to the audit log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from splice.approvals import auditlog
from splice.approvals.domains import domain_named
from splice.approvals.rules import is_owner, may_decide, refuse_during_stop, refuse_own
from splice.errors import ApprovalError, InputError, NodeNotFoundError, RepairError
from splice.migrate.model import Check, Migration, Wave
from splice.state.sql import statement
from splice.state.store import next_id
from splice.support.names import name_key
from splice.support.principals import Principal

if TYPE_CHECKING:
    from splice.run.runner import Recover
    from splice.workspace.core import Workspace

Progress = Callable[[str], None] | None

_MIGRATION = statement("SELECT payload FROM migrations WHERE migration_id = ? COLLATE NOCASE")
_RECENT_IDS = statement("SELECT migration_id FROM migrations ORDER BY created_at DESC LIMIT 10")
_MIGRATIONS = statement("SELECT payload FROM migrations ORDER BY created_at DESC")
_SAVE = statement(
    "INSERT INTO migrations(migration_id, source, dest, status, payload, created_at, "
    "updated_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT(migration_id) DO UPDATE SET "
    "status=excluded.status, payload=excluded.payload, updated_at=excluded.updated_at"
)


def _say(progress: Progress, text: str) -> None:
    if progress is not None:
        progress(text)


# -- state ------------------------------------------------------------------------------------------
def load(state: Any, migration_id: str) -> Migration:
    row = state.conn.execute(_MIGRATION, (migration_id.strip(),)).fetchone()
    if row is None:
        known = [r[0] for r in state.conn.execute(_RECENT_IDS)]
        raise NodeNotFoundError(
            f"no migration {migration_id!r}"
            + (f" (known: {', '.join(known)})." if known else "; none was planned yet."),
            fix="splice migrate plan --from TARGET --to TARGET plans one",
        )
    return Migration.from_dict(json.loads(row[0]))


def list_migrations(state: Any) -> list[Migration]:
    rows = state.conn.execute(_MIGRATIONS)
    return [Migration.from_dict(json.loads(r[0])) for r in rows]


def _write(state: Any, m: Migration, kind: str, principal: Principal,
           payload: dict[str, Any]) -> None:  # fmt: skip
    """Store ``m`` and log ``kind`` in one transaction."""
    now = time.time()
    body = auditlog.canonical(m.as_dict())
    with state.transaction() as conn:
        conn.execute(
            _SAVE,
            (m.migration_id, m.source, m.dest, m.status, body, m.created_at, now),
        )
        auditlog.append(conn, kind=kind, principal=principal, proposal_id=m.migration_id,
                        payload={"status": m.status, **payload}, at=now)  # fmt: skip


# -- plan -------------------------------------------------------------------------------------------
def _time_column(cols: list[tuple[str, str]], dialect: str) -> str | None:
    """A raw relation's interval column when no node names one: its first date column, else
    its first timestamp (columns starting with ``_``, a loader's bookkeeping, skipped)."""
    from splice.migrate.parity import kind_of

    kinds = [(c, kind_of(t, dialect)) for c, t in cols if not c.startswith("_")]
    for wanted in ("date", "time"):
        found = next((c for c, k in kinds if k == wanted), None)
        if found:
            return found
    return None


def _count(ws: Workspace, relations: list[Any]) -> None:
    """Rows of each relation in the source (None: not built there), and a raw relation's
    interval column."""
    from splice.migrate.copy import columns
    from splice.warehouse.connect import connect
    from splice.warehouse.rows import count_query

    with connect(ws, "splice migrate plan", read_only=True) as con:
        for r in relations:
            cols = columns(con, r.source, ws.dialect)
            if not cols:
                r.rows = None
                continue
            if r.time_column is None and not r.extra:
                r.time_column = _time_column(cols, ws.dialect)
            catalog = ws.default_catalog
            rel = f"{catalog}.{r.source}" if catalog else r.source
            r.rows = int(con.execute(count_query(rel, None, None, None, ws.dialect)).fetchone()[0])


def _where_it_lives(ws: Workspace) -> str:
    """The warehouse a workspace's target writes, as one comparable text."""
    from splice.warehouse.engines import engine_module

    return str(engine_module(ws.config.warehouse.type, "connect").address(ws))


def plan(source: Any, dest: Any, *, principal: Principal, execution_time: str | None = None,
         tolerance: float = 0.0001, relative_tolerance: float = 1e-6) -> Migration:  # fmt: skip
    """Plan moving ``source``'s target to ``dest``'s (two open workspaces of one root)."""
    from splice.migrate.waves import waves

    may_decide(source, principal, "propose")
    if source.target == dest.target:
        raise InputError(f"--from and --to are both {source.target!r}.",
                         fix="migrate to another target ([targets.NAME] in splice.toml)")  # fmt: skip
    if _where_it_lives(source) == _where_it_lives(dest):
        raise InputError(
            f"targets {source.target!r} and {dest.target!r} use the same warehouse "
            f"({_where_it_lives(source)}): a migration moves relations between two warehouses, "
            "and copying a relation onto itself would drop it.",
            fix=f"give the destination a warehouse of its own: [targets.{dest.target}.warehouse] "
            "in splice.toml",
        )
    if not (tolerance >= 0 and relative_tolerance >= 0):
        raise InputError(f"a tolerance is negative ({tolerance}, {relative_tolerance}).",
                         fix="pass --tolerance and --relative-tolerance of 0 or more")  # fmt: skip
    ws_waves = waves(source, dest)
    for w in ws_waves:
        _count(source, w.relations)
        w.relations = [r for r in w.relations if not (r.extra and r.rows is None)]
    m = Migration(next_id(source.state.conn, "migrations", "migration_id", "MG"), source.target, dest.target, ws_waves, principal.name,
                  time.time(), requester=principal.record(), execution_time=execution_time,
                  tolerance=tolerance, relative_tolerance=relative_tolerance)  # fmt: skip
    _write(source.state, m, "migrate-plan", principal,
           {"source": m.source, "dest": m.dest,
            "waves": [{"index": w.index, "name": w.name, "kind": w.kind,
                       "relations": [r.relation for r in w.relations]} for w in m.waves]})  # fmt: skip
    return m


# -- approve ----------------------------------------------------------------------------------------
def approve(ws: Workspace, migration_id: str, wave: int | None, *, principal: Principal,
            comment: str | None = None) -> Migration:  # fmt: skip
    """An owner of one of the wave's domains (not the planner) approves the wave (default:
    the next one not yet approved)."""
    name = may_decide(ws, principal, "approve").name
    refuse_during_stop(ws, "approved")
    m = load(ws.state, migration_id)
    w = m.wave(wave) if wave is not None else next(
        (x for x in m.waves if x.status == "planned"), None)  # fmt: skip
    if w is None:
        raise ApprovalError(f"every wave of {m.migration_id} is approved already.",
                            fix=f"splice migrate run {m.migration_id}")  # fmt: skip
    if name_key(name) == name_key(m.created_by):
        refuse_own(name, f"planned {m.migration_id}", it="its waves",
                   fix="an owner of the wave's domains approves it")  # fmt: skip
    doms = [d for n in w.domains if (d := domain_named(ws.config, n)) is not None]
    if not doms:
        raise ApprovalError(
            f"wave {w.index} ({w.name}) covers no declared domain, so nobody may approve it.",
            fix="add [[domains]] covering its nodes in splice.toml, then plan again",
        )
    if not any(is_owner(name, d) for d in doms):
        owners = sorted({o for d in doms for o in d.owners})
        raise ApprovalError(
            f"{name} owns none of wave {w.index}'s domains ({', '.join(w.domains)}); its owners "
            f"are {', '.join(owners)}.",
            fix=f"one of them runs splice migrate approve {m.migration_id} --wave {w.index}",
        )
    if w.status != "planned":
        raise ApprovalError(f"wave {w.index} of {m.migration_id} is {w.status}, not planned.",
                            fix=f"splice migrate status {m.migration_id}")  # fmt: skip
    w.status, w.approved_by, w.approved_at = "approved", principal.record(), time.time()
    _write(ws.state, m, "migrate-approve", principal,
           {"wave": w.index, "name": w.name, "comment": comment})  # fmt: skip
    return m


# -- run and check ----------------------------------------------------------------------------------
def _checks(source: Any, dest: Any, m: Migration, w: Wave, progress: Progress) -> list[Check]:
    from splice.migrate.parity import compare_metric, compare_relation
    from splice.warehouse.connect import connect
    from splice.watch.metrics import watch_specs
    from splice.watch.service import measure

    out: list[Check] = []
    with connect(source, "splice migrate check", read_only=True) as a, \
            connect(dest, "splice migrate check") as b:  # fmt: skip
        for r in w.relations:
            if r.extra:
                continue
            _say(progress, f"  checking {r.relation}")
            out += compare_relation(
                a, source.dialect, b, dest.dialect, r, m.tolerance, m.relative_tolerance
            )
    specs = {s.name: s for s in watch_specs(source, lineage=False) if s.declared}
    dest_specs = {s.name: s for s in watch_specs(dest, lineage=False) if s.declared}
    for name in w.metrics:
        if name not in specs or name not in dest_specs:
            out.append(Check("metric", name, None, False, "not declared in both targets"))
            continue
        _say(progress, f"  measuring {name} in both targets")
        (here,) = measure(source, [(specs[name], None)])
        (there,) = measure(dest, [(dest_specs[name], None)])
        out.append(compare_metric(specs[name], here, there, m.relative_tolerance))
    return out


def _move(source: Any, dest: Any, m: Migration, w: Wave, progress: Progress,
          recover: Recover | None) -> str | None:  # fmt: skip
    """Copy or rebuild the wave; returns the run's id for a rebuild."""
    if w.kind == "copy":
        from splice.migrate.copy import copy_relation
        from splice.warehouse.connect import connect

        with connect(source, "splice migrate run", read_only=True) as a, \
                connect(dest, "splice migrate run") as b:  # fmt: skip
            for r in w.relations:
                _say(
                    progress, f"  copying {r.source} ({r.rows if r.rows is not None else '?'} rows)"
                )
                copy_relation(a, source.dialect, b, dest.dialect, r.source, r.relation)
        return None
    from splice.run.runner import run as run_nodes

    _say(progress, f"  building {len(w.nodes)} node(s) of {w.project} in target {dest.target}")
    report = run_nodes(dest, " ".join(w.nodes), execution_time=m.execution_time, full=True,
                       command=f"splice migrate run {m.migration_id} --wave {w.index}",
                       recover=recover)  # fmt: skip
    if not report.ok:
        failed = (
            ", ".join(report.failed_nodes[:5])
            if getattr(report, "failed_nodes", None)
            else "see the run"
        )
        raise RepairError(
            f"wave {w.index} ({w.name}): the build in target {dest.target} failed ({failed}).",
            fix=f"splice -t {dest.target} runs show {report.run_id}; fix it, then splice migrate "
            f"run {m.migration_id} --wave {w.index}",
        )
    return str(report.run_id)


def _status(m: Migration) -> str:
    if any(w.status == "failed" for w in m.waves):
        return "failed"
    if all(w.status == "passed" for w in m.waves):
        return "checked"
    return "in progress"


def _record(ws: Workspace, m: Migration, w: Wave, checks: list[Check], kind: str,
            principal: Principal) -> None:  # fmt: skip
    w.checks = [c.__dict__ for c in checks]
    w.status = "passed" if all(c.ok for c in checks) else "failed"
    w.error = None if w.status == "passed" else "; ".join(
        f"{c.kind} {c.subject}: {c.detail}" for c in checks if not c.ok)[:2000]  # fmt: skip
    m.status = _status(m)
    _write(ws.state, m, kind, principal,
           {"wave": w.index, "name": w.name, "result": w.status, "run_id": w.run_id,
            "failed": [c.__dict__ for c in checks if not c.ok][:20],
            "checks": len(checks)})  # fmt: skip


def run(ws: Workspace, dest: Any, migration_id: str, wave: int | None, *, principal: Principal,
        progress: Progress = None, recover: Recover | None = None) -> Migration:  # fmt: skip
    """Run one wave (default: the next that has not passed) and check it. ``recover``: what
    the rebuild's run session also recovers (:data:`splice.run.runner.Recover`; the facade
    passes the recovery of killed repair applies)."""
    may_decide(ws, principal, "apply")
    refuse_during_stop(ws, "applied")
    m = load(ws.state, migration_id)
    if m.status == "complete":
        raise RepairError(f"{m.migration_id} is complete; nothing is left to run.",
                          fix=f"splice migrate status {m.migration_id}")  # fmt: skip
    w = m.wave(wave) if wave is not None else m.next_wave()
    if w is None:
        raise RepairError(f"every wave of {m.migration_id} passed.",
                          fix=f"an owner signs it: splice migrate complete {m.migration_id}")  # fmt: skip
    before = [x for x in m.waves if x.index < w.index and x.status != "passed"]
    if before:
        raise RepairError(
            f"wave {w.index} ({w.name}) runs after wave {before[0].index} ({before[0].name}), "
            f"which is {before[0].status}.",
            fix=f"run wave {before[0].index} first: splice migrate run {m.migration_id} "
            f"--wave {before[0].index}",
        )
    if w.approved_by is None:
        raise ApprovalError(
            f"wave {w.index} ({w.name}) of {m.migration_id} is not approved.",
            fix=f"an owner of {', '.join(w.domains) or 'its domains'} runs splice migrate "
            f"approve {m.migration_id} --wave {w.index}",
        )
    _say(progress, f"wave {w.index} ({w.name}): {w.kind} {len(w.relations)} relation(s)")
    w.ran_at = time.time()
    try:
        w.run_id = _move(ws, dest, m, w, progress, recover)
    except Exception as e:
        from splice.errors import SpliceError

        w.status, w.error = "failed", (e.message if isinstance(e, SpliceError) else str(e))[:2000]
        m.status = _status(m)
        _write(ws.state, m, "migrate-wave", principal,
               {"wave": w.index, "name": w.name, "result": "failed", "error": w.error})  # fmt: skip
        raise
    _record(ws, m, w, _checks(ws, dest, m, w, progress), "migrate-wave", principal)
    return m


def check(ws: Workspace, dest: Any, migration_id: str, wave: int, *, principal: Principal,
          progress: Progress = None) -> Migration:  # fmt: skip
    """A wave's checks again (the wave must have run)."""
    may_decide(ws, principal, "propose")
    m = load(ws.state, migration_id)
    w = m.wave(wave)
    if w.ran_at is None:
        raise RepairError(f"wave {w.index} ({w.name}) has not run, so it has nothing to check.",
                          fix=f"splice migrate run {m.migration_id} --wave {w.index}")  # fmt: skip
    _record(ws, m, w, _checks(ws, dest, m, w, progress), "migrate-check", principal)
    return m


def complete(ws: Workspace, dest: Any, migration_id: str, *, principal: Principal,
             progress: Progress = None) -> dict[str, Any]:  # fmt: skip
    """Check every wave once more; all green, an owner signs the migration complete. Returns
    its receipt."""
    name = may_decide(ws, principal, "approve").name
    m = load(ws.state, migration_id)
    if m.status == "complete":
        return receipt(ws, m)
    doms = [d for w in m.waves for n in w.domains if (d := domain_named(ws.config, n)) is not None]
    if not any(is_owner(name, d) for d in doms):
        raise ApprovalError(f"{name} owns none of the domains {m.migration_id} moved.",
                            fix="an owner of one of them signs it")  # fmt: skip
    left = [w for w in m.waves if w.status != "passed"]
    if left:
        raise RepairError(
            f"wave {left[0].index} ({left[0].name}) of {m.migration_id} is {left[0].status}: "
            "a migration is signed complete only when every wave passed.",
            fix=f"splice migrate run {m.migration_id} --wave {left[0].index}",
        )
    for w in m.waves:
        _say(progress, f"wave {w.index} ({w.name}): checking again")
        _record(ws, m, w, _checks(ws, dest, m, w, progress), "migrate-check", principal)
    if m.status != "checked":
        bad = next(w for w in m.waves if w.status == "failed")
        raise RepairError(
            f"{m.migration_id} is not complete: wave {bad.index} ({bad.name}) no longer passes: "
            f"{bad.error}",
            fix=f"fix it, then splice migrate run {m.migration_id} --wave {bad.index}",
        )
    m.status, m.completed_by, m.completed_at = "complete", principal.record(), time.time()
    data = receipt(ws, m)
    _write(ws.state, m, "migrate-complete", principal, {"receipt": data})
    return receipt(ws, m)


def receipt(ws: Workspace, m: Migration) -> dict[str, Any]:
    """Every wave, check and approver of a migration, with the audit log's head."""
    from splice.state.store import read_audit_head

    top = read_audit_head(ws.state.conn)
    return {
        "migration": m.migration_id, "from": m.source, "to": m.dest, "status": m.status,
        "planned_by": m.requester or {"name": m.created_by},
        "completed_by": m.completed_by, "completed_at": m.completed_at,
        "tolerance": m.tolerance, "relative_tolerance": m.relative_tolerance,
        "waves": [{"index": w.index, "name": w.name, "kind": w.kind, "status": w.status,
                   "approved_by": w.approved_by, "run_id": w.run_id,
                   "relations": [{"relation": r.relation, "rows": r.rows} for r in w.relations],
                   "checks": w.checks} for w in m.waves],
        "audit_head": {"seq": top[0], "hash": top[1]} if top else None,
    }  # fmt: skip
