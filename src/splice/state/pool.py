"""A long-lived server's SQLite state connections, kept between its requests.

Opening the state is most of what a quick read costs ``splice serve`` (a connection, its
pragmas, the schema and identity checks: about 0.6 ms, against 0.2 ms for the read itself).
:class:`StatePool` keeps one open connection per thread and lends it to that thread's next
request, as long as nothing it was checked against has changed:

- the state file is the same file (device and inode: a file moved aside or restored from a
  backup is a new one, opened and checked again);
- the witness file is unchanged (its size and modification time; it moves whenever the audit
  log's head does, so a connection is reopened after another process's decisions too, which
  is rare next to reads);
- the connection is not inside a transaction (a request that failed half-way hands back
  nothing: its connection is closed).

A connection is only ever used by the thread that opened it (SQLite's rule). Only SQLite
state is kept: a PostgreSQL state is opened per request as before.

>>> import tempfile, pathlib
>>> from splice.state.store import StateStore
>>> db = pathlib.Path(tempfile.mkdtemp()) / "state.db"
>>> pool = StatePool()
>>> a = pool.borrow(db, db.with_suffix(".witness"), lambda: StateStore.open(db))
>>> pool.give_back(a)
>>> pool.borrow(db, db.with_suffix(".witness"), lambda: StateStore.open(db)) is a
True
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from splice.state.store import StateStore


def _stamp(state: Path, witness: Path) -> tuple[Any, ...] | None:
    """What a kept connection was checked against: the state file's identity and the
    witness's size and time; None when the state file is not there."""
    try:
        st = os.stat(state)
    except OSError:
        return None
    try:
        w = os.stat(witness)
        seen: tuple[Any, ...] = (w.st_size, w.st_mtime_ns)
    except OSError:
        seen = ()
    return (st.st_dev, st.st_ino, *seen)


class StatePool:
    """One kept state connection per thread (see the module's docstring)."""

    def __init__(self) -> None:
        # per thread: ``kept`` (store, stamp) waiting for the next request, ``lent`` the one
        # a request of this thread holds; a store given back that this thread did not borrow
        # (another thread's, or a state that is not pooled) is closed
        self._local = threading.local()
        self.opened = 0  # connections opened (Hub.stats: "state_opens")

    def borrow(self, state: Path, witness: Path, opener: Callable[[], StateStore]) -> StateStore:
        """This thread's kept connection to ``state`` if still good, else ``opener()``."""
        kept: tuple[StateStore, Any] | None = getattr(self._local, "kept", None)
        self._local.kept = None
        if kept is not None and kept[1] is not None and kept[1] == _stamp(state, witness):
            store, stamp = kept
        else:
            if kept is not None:
                kept[0].close()
            store = opener()
            self.opened += 1
            # the stamp is taken after the open: what the open checked is what was current
            stamp = _stamp(state, witness)
        self._local.lent = (store, stamp)
        return store

    def give_back(self, store: StateStore) -> None:
        """Keep ``store`` for this thread's next request, or close it if it cannot be kept."""
        lent: tuple[StateStore, Any] | None = getattr(self._local, "lent", None)
        if lent is None or lent[0] is not store or store.conn.in_transaction:
            store.close()
            return
        self._local.lent = None
        self._local.kept = lent
