"""A session's start: the repair applies a killed process left half-done are recovered once,
when a workspace is opened for a command (:func:`splice.api.open_workspace`) or for a request
(:meth:`splice.api.served.Hub.workspace`), so that no operation has to remember to.

What recovering one means (the undo restored, the proposal marked ``interrupted``, its
incident reopened) is :mod:`splice.repair.recovery`'s; a run that starts under its run lock
recovers again what died since (:func:`splice.api.run`), and says in its report what the
session's start recovered.
"""

from __future__ import annotations

import logging

from splice.errors import SpliceError
from splice.workspace.core import Workspace

log = logging.getLogger("splice.api")


def recover_killed_applies(ws: Workspace) -> list[str]:
    """Recover every repair apply of ``ws``'s target whose process died, once, as a session
    starts: one line per apply recovered, kept in ``ws.recovered`` and ``ws.notices``. Nothing
    before the workspace has a state. A recovery that cannot run now for a passing reason (an
    error that says a retry may help: the state busy, say) is a notice, and the next session
    tries again; any other error is the user's to fix (a witness path Splice cannot use, a
    state it does not understand) and stops the command with its own one line."""
    if not ws.state_exists:
        return []
    from splice.repair.recovery import recover_interrupted_applies

    try:
        notes = recover_interrupted_applies(ws)
    except SpliceError as e:
        if not e.retry:
            raise
        # the command goes on; the next session tries again
        log.warning("recovering killed repair applies failed: %s", e.one_line())
        ws.notices.append(f"a killed repair apply was not recovered yet: {e.one_line()}")
        return []
    ws.recovered.extend(notes)
    ws.notices.extend(notes)
    return notes


def recovered_then_in_session(ws: Workspace) -> list[str]:
    """What a run session recovers under its run lock (:data:`splice.run.runner.Recover`): the
    applies the session's start recovered (told once, in the run's report), then any that died
    since (:func:`splice.repair.recovery.recover_in_session`)."""
    from splice.repair.recovery import recover_in_session

    told, ws.recovered[:] = list(ws.recovered), []
    return told + recover_in_session(ws)
