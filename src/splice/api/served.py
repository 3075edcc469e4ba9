"""One workspace served to many requests (``splice mcp`` and ``splice serve``).

A long-lived server must not hold anything a request opened: every call gets its own
:class:`~splice.workspace.core.Workspace` (its own warehouse connections, closed when the call
ends, so DuckDB's single-writer lock is never held between requests; a SQLite state's
connection is kept for the same thread's next call while the state file and its witness are
unchanged, :mod:`splice.state.pool`). What is expensive and safe to share is kept here: the joined graph, reused while
the files it was loaded from are unchanged (the graph cache's key,
:func:`splice.workspace.graph_cache.graph_key`, checked at most every ``recheck`` seconds) and
reloaded as soon as one changes.

>>> hub = Hub(".", recheck=0.5)
>>> hub.stats()["graph_loads"]
0
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from splice.state.pool import StatePool
from splice.workspace.core import Workspace

log = logging.getLogger("splice.api.served")


class Hub:
    """Opens a fresh Workspace per request and lends it the shared graph while it is current."""

    def __init__(self, root: Path | str, target: str | None = None, *, recheck: float = 1.0):
        self.root = Path(root).resolve()
        self.target = target
        self.recheck = recheck
        self._lock = threading.Lock()
        self._graph: Any = None
        self._key: str | None = None
        self._checked_at = 0.0
        self._checking = False
        self._loads = 0
        self._requests = 0
        self._notifying = False
        self._leader_file: Any = None
        self._notify_again = False
        self._config_stamp: Any = None
        self._config_cached: Any = None
        self._states = StatePool()  # state connections kept between requests, per thread

    @contextmanager
    def workspace(self, target: str | None = None, *, light: bool = False) -> Iterator[Workspace]:
        """A Workspace for one request, closed (state and warehouse released) when it ends. The
        request's session starts by recovering repair applies a killed process left half-done
        (:func:`splice.api.recovery.recover_killed_applies`). ``target``: another target than
        the server's (a schedule's); it is not lent the server's graph. ``light``: for work that
        reads the state and the config only (the operator's bookkeeping between ticks): the
        shared graph is not checked against the files (no hashing), nor lent."""
        from splice.api.recovery import recover_killed_applies

        other = light or (target is not None and target != self.target)
        ws = Workspace(self.root, self._config(), target or self.target)
        ws.state_pool = self._states
        try:
            if not other:
                self._lend(ws)
            recover_killed_applies(ws)
            yield ws
            if not other:
                self._keep(ws)
        finally:
            ws.close()

    def _config(self) -> Any:
        """splice.toml parsed once and again only when the file changes (its size and mtime)."""
        from splice.config.workspace import CONFIG_FILE, load_config

        if not self.root.is_dir():
            return load_config(self.root)  # the ConfigError saying so
        try:
            st = (self.root / CONFIG_FILE).stat()
            stamp: Any = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None  # a lone dbt or SQLMesh project: detected each time
        with self._lock:
            if stamp is not None and stamp == self._config_stamp:
                return self._config_cached
        cfg = load_config(self.root)
        with self._lock:
            self._config_stamp, self._config_cached = stamp, cfg
        return cfg

    def _lend(self, ws: Workspace) -> None:
        """Lend the shared graph while it is current. At most one request at a time checks
        (hashes the inputs) once ``recheck`` seconds have passed; the others lend the graph
        meanwhile, so a burst of requests does not hash the workspace once each."""
        with self._lock:
            self._requests += 1
            graph, key = self._graph, self._key
            fresh = time.monotonic() - self._checked_at < self.recheck
            check = graph is not None and not fresh and not self._checking
            self._checking = self._checking or check
        if graph is None:
            return
        if not check:  # current, or being checked by another request right now
            ws._graph, ws.graph_key = graph, key
            return
        try:
            current = ws.inputs_key()  # hashes the projects' files: milliseconds, no tool loaded
        finally:
            with self._lock:
                self._checking = False
        if current == key:
            ws._graph = graph
            with self._lock:
                self._checked_at = time.monotonic()

    def _keep(self, ws: Workspace) -> None:
        graph = ws._graph
        if graph is None or ws.graph_key is None:
            return
        with self._lock:
            if graph is not self._graph:  # loaded (or read from the cache) for a new key
                self._graph, self._key = graph, ws.graph_key
                self._loads += 1
                self._checked_at = time.monotonic()
            # a request lent the shared graph must not push the next check back: only a check
            # (in _lend) or a new graph counts as "checked"

    def notify_soon(self) -> None:
        """Send pending notifications in the background, now (after a decision): one sender at a
        time, and a decision made while it sends makes it run once more. Never raises."""
        with self._lock:
            if self._notifying:
                self._notify_again = True
                return
            self._notifying = True

        def send() -> None:
            from splice.notify.outbox import deliver

            while True:
                try:
                    with self.workspace() as ws:
                        deliver(ws)
                except Exception:  # noqa: BLE001 - telling others never fails anything
                    log.exception("sending notifications failed; the next pass retries")
                with self._lock:
                    if not self._notify_again:
                        self._notifying = False
                        return
                    self._notify_again = False

        threading.Thread(target=send, name="splice-notify", daemon=True).start()

    def scheduler_leader(self) -> bool:
        """Whether this process runs the workspace's scheduled housekeeping: the one holding
        ``.splice/serve-scheduler.lock`` (an exclusive ``flock``; with ``[serve] workers`` > 1
        one worker leads, and another takes over if it dies). Call it on every pass."""
        import fcntl

        if self._leader_file is not None:
            return True
        path = self.root / ".splice" / "serve-scheduler.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - held open while this process leads
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        self._leader_file = fh
        return True

    def close(self) -> None:
        """Give up leading the scheduler (the lock is released for another process)."""
        if self._leader_file is not None:
            self._leader_file.close()
            self._leader_file = None

    def stats(self) -> dict[str, Any]:
        """Requests served, graphs loaded and state connections opened since start (the
        health endpoint shows some)."""
        with self._lock:
            return {
                "workspace": str(self.root),
                "target": self.target,
                "requests": self._requests,
                "graph_loads": self._loads,
                "graph_key": self._key,
                "state_opens": self._states.opened,
            }
