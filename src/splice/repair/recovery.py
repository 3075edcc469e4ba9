"""A repair whose apply was killed is never left stuck or half-done.

``splice apply`` moves a proposal to ``applying`` (recording its pid and host) before the run
starts. If that process dies (SIGKILL, a crash, the machine going down) the proposal would
stay ``applying`` forever and the warehouse could hold half a repair (the reload done, the
restatement not; or SQLMesh restated and dbt not rebuilt). The next command that reads
proposals or runs (:func:`recover_interrupted_applies`, from ``splice run``, ``splice
proposals``, ``propose``, ``apply``, ``approve``, ``reject`` and ``undo``) notices a dead
applier and, holding the run lock:

1. kills what is left of the dead run's child processes (an ingestion reload still running);
2. restores the undo (the checks of :func:`splice.repair.undo.check_as_requested`, then every
   relation in one warehouse transaction, checksums verified), so the warehouse equals the
   undo, never a mix;
3. marks the proposal ``interrupted`` and reopens its incident; propose again to repair.

If the undo cannot be restored, the proposal is still marked ``interrupted`` with the reason,
and ``splice undo`` may be tried again once the cause is fixed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from splice.repair import store
from splice.repair.model import Proposal

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def applier(ws: Workspace, p: Proposal) -> dict[str, Any]:
    """Who moved ``p`` to applying: {"pid", "host"} from its last apply decision's log entry."""
    from splice.approvals import auditlog

    for e in reversed(auditlog.entries(ws.state, p.proposal_id)):
        if e.kind == "apply":
            payload = e.as_dict()["payload"]
            return payload if isinstance(payload, dict) else {}
    return {}


def _alive(info: dict[str, Any]) -> bool:
    from splice.run.journal import this_host
    from splice.support.procs import pid_alive

    pid = int(info.get("pid") or 0)
    if not pid:
        return False
    if info.get("host") not in (None, this_host()):
        return True  # another machine's: it cannot be judged from here; leave it alone
    return pid == os.getpid() or pid_alive(pid)


def recover_interrupted_applies(ws: Workspace, *, lock_held: bool = False) -> list[str]:
    """Recover every proposal of the target stuck in ``applying`` by a dead process (see the
    module docstring); returns one note per proposal recovered. ``lock_held``: the caller
    holds the run lock already (a run session)."""
    stuck = [p for p in store.list_proposals(ws.state, target=ws.target, statuses={"applying"})
             if not _alive(applier(ws, p))]  # fmt: skip
    if not stuck:
        return []
    if lock_held:
        return [_recover(ws, p) for p in stuck]
    from splice.run.journal import Journal
    from splice.run.locks import RunLock, RunLockedError
    from splice.run.runner import lock_names, server_lock_ws

    with Journal.for_workspace(ws) as journal:
        lock = RunLock(ws.splice_dir / "locks", journal, lock_names(ws),
                       command="splice: recover an interrupted repair",
                       server_ws=server_lock_ws(ws))  # fmt: skip
        try:
            lock.acquire()
        except RunLockedError:
            return []  # a run holds the target: it recovers them itself when it starts
        try:
            return [_recover(ws, p) for p in stuck]
        finally:
            lock.release()


def recover_in_session(ws: Workspace) -> list[str]:
    """:func:`recover_interrupted_applies` from inside a run session, which holds the run lock:
    what :mod:`splice.api` and :func:`splice.repair.flow.apply` pass the runner as its
    ``recover`` (:data:`splice.run.runner.Recover`), so ``splice run`` recovers them first."""
    return recover_interrupted_applies(ws, lock_held=True)


def _recover(ws: Workspace, p: Proposal) -> str:
    from splice.repair import undo
    from splice.repair.remeasure import remeasure_after_undo
    from splice.run.children import kill_orphans
    from splice.support.principals import SYSTEM
    from splice.watch.incidents import reopen_incident

    who = applier(ws, p)
    killed = kill_orphans(ws.splice_dir)
    dead = f"the apply of {p.proposal_id} (pid {who.get('pid', '?')}) stopped without finishing"
    try:
        undo.check_as_requested(ws, p)
        after = undo.restore(ws, p.undo)
    except Exception as e:  # noqa: BLE001 - recorded on the proposal; a person acts on it
        message = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
        store.transition(
            ws.state, p.proposal_id, "interrupted", principal=SYSTEM,
            comment=f"{dead}; restoring its undo FAILED: {message}",
            payload={"restored": False, "error": message, "killed_children": killed},
        )  # fmt: skip
        return (f"{dead}; its undo could not be restored ({message}): the warehouse may hold "
                f"part of the repair; splice undo {p.proposal_id} retries")  # fmt: skip
    store.transition(
        ws.state, p.proposal_id, "interrupted", principal=SYSTEM,
        comment=f"{dead}; the warehouse was restored from its undo (checksums equal)",
        payload={"restored": [{"relation": e.relation, "checksum": c}
                              for e, c in zip(p.undo, after, strict=True)],
                 "killed_children": killed},
    )  # fmt: skip
    with ws.state.transaction() as conn:
        reopen_incident(conn, p.incident_id, f"reopened: {p.proposal_id} was interrupted")
    remeasure_after_undo(ws, p.incident_id)
    return (f"{dead}: the warehouse was restored from its undo (checksums equal) and "
            f"{p.proposal_id} is marked interrupted; propose again to repair {p.incident_id}")  # fmt: skip
