"""Processes on this host: whether one is still alive (infrastructure; no Splice imports)."""

from __future__ import annotations

import os


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
