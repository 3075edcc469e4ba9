"""A run's lock as the warehouse holds it, beside the file lock of :mod:`splice.run.locks`:
what every engine's ``try_lock`` (``splice/warehouse/<engine>/locks.py``) returns.

>>> NoServerLock().close()  # an engine without locks of its own: nothing to release
"""

from __future__ import annotations

from typing import Protocol


class ServerLock(Protocol):
    """A lock held in the warehouse for as long as it is open: closing it releases the lock."""

    def close(self) -> None: ...


class NoServerLock:
    """The lock of an engine that holds none of its own (the file lock is all there is)."""

    def close(self) -> None:
        """Nothing to release."""
