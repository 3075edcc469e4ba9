"""A run's locks as a reader sees them, and as the warehouse holds them.

- The OS lock files of :mod:`splice.run.locks` (``.splice/locks/NAME.lock``): probing one
  never blocks (:func:`is_held`), and :func:`held_elsewhere` says whether another process
  holds it, which is what a reader of a single-writer warehouse asks before it opens the file:
  DuckDB lets one process in at a time, so a reader opening it between two segments of a run
  would make the run's next segment fail on the lock.
- ``ServerLock``: what every engine's ``try_lock`` (``splice/warehouse/<engine>/locks.py``)
  returns.

>>> NoServerLock().close()  # an engine without locks of its own: nothing to release
>>> lock_file(Path("/w/.splice/locks"), "target:prod").name
'target-prod.lock'
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

#: The lock a run of a single-writer warehouse (DuckDB) holds for as long as it runs.
WAREHOUSE_LOCK = "warehouse"


def lock_file(lock_dir: Path, name: str) -> Path:
    """The file of the OS lock ``name`` (a lock name made a file name)."""
    return lock_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "-", name) + ".lock")


def is_held(lock_dir: Path, name: str) -> bool:
    """True when some process (this one included) holds the OS lock ``name`` right now
    (probing never blocks)."""
    path = lock_file(lock_dir, name)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def held_elsewhere(lock_dir: Path, name: str = WAREHOUSE_LOCK) -> dict[str, Any] | None:
    """Who holds the OS lock ``name`` when another process does (a run writing the warehouse):
    what it wrote into the lock file (pid, run id; ``{}`` when it has not written it yet),
    else None.

    The holder writes its pid into the file once it holds the lock; a held lock whose file
    does not name this process yet is taken as another's (the safe answer for a reader)."""
    if not is_held(lock_dir, name):
        return None
    try:
        holder = json.loads(lock_file(lock_dir, name).read_text() or "{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(holder, dict):
        return {}
    return None if holder.get("pid") == os.getpid() else holder


class ServerLock(Protocol):
    """A lock held in the warehouse for as long as it is open: closing it releases the lock."""

    def close(self) -> None: ...


class NoServerLock:
    """The lock of an engine that holds none of its own (the file lock is all there is)."""

    def close(self) -> None:
        """Nothing to release."""
