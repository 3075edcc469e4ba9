"""Processes on this host: whether one is still alive (infrastructure; no Splice imports)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


def pid_alive(pid: int) -> bool:
    """True when a process with ``pid`` exists on this host (zombies count as dead).

    >>> pid_alive(os.getpid())
    True
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped by its parent) holds nothing
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# -- servers Splice starts and leaves running (a local PostgreSQL, dagster-webserver) -------------
_quiet_starts = False


@contextlib.contextmanager
def quiet_local_starts() -> Iterator[None]:
    """Inside the block, a local server started is not announced (``splice demo`` stops the
    servers it started itself when it is done)."""
    global _quiet_starts
    before, _quiet_starts = _quiet_starts, True
    try:
        yield
    finally:
        _quiet_starts = before


def local_stop_command(root: str | os.PathLike[str] | None) -> str:
    """``splice local stop``, naming the workspace when it is not the working directory.

    >>> local_stop_command(os.getcwd())
    'splice local stop'
    >>> local_stop_command("/nowhere/travel")
    'splice --workspace /nowhere/travel local stop'
    """
    here = os.path.realpath(os.getcwd())
    if root is None or os.path.realpath(root) == here:
        return "splice local stop"
    return f"splice --workspace {root} local stop"


def announce_started(what: str, root: str | os.PathLike[str] | None) -> None:
    """Say once, on stderr, that this command started ``what`` (a server that keeps running
    after the command ends) and how to stop it."""
    if _quiet_starts:
        return
    sys.stderr.write(
        f"Splice started {what}; it keeps running after this command "
        f"(`{local_stop_command(root)}` stops it).\n"
    )
    sys.stderr.flush()
