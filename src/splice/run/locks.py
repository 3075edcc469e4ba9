"""The run lock: one `splice run` per target (and per single-writer warehouse) at a time.

Two layers, because each alone is not enough:

- an OS lock, ``fcntl.flock`` on ``.splice/locks/NAME.lock``: the kernel drops it when its
  holder exits in any way, SIGKILL included, so a dead holder can never block a run;
- a row in Splice's state (table ``run_locks``) naming the holder (pid, host, command, run,
  since when), which is what a refused run prints. The same JSON is written into the lock
  file, so the holder can be named even when the state cannot be read.

A row whose flock is free belongs to a holder that died: the next run takes the lock over
and says so (:attr:`RunLock.notes`).

A flock belongs to the open file, which a forked child shares: SQLMesh forks worker processes
(model loading) that can outlive a SIGKILLed parent and would keep the lock. So every child
closes its copies of the lock files right after the fork (``os.register_at_fork``); closing a
copy never releases the parent's lock (only ``LOCK_UN`` or the last close does).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.errors import SpliceError
from splice.run.journal import Journal, this_host
from splice.state.sql import statement
from splice.support.procs import pid_alive
from splice.warehouse.locks import WAREHOUSE_LOCK, lock_file

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


_TAKE_LOCK = statement(
    "INSERT OR REPLACE INTO run_locks(name, run_id, pid, host, command, acquired_at)"
    " VALUES(:name, :run_id, :pid, :host, :command, :acquired_at)"
)
_LOCK_HOLDER = statement("SELECT * FROM run_locks WHERE name=?")
_RELEASE_LOCK = statement("DELETE FROM run_locks WHERE name=? AND pid=?")


class RunLockedError(SpliceError):
    """Another `splice run` holds the lock of this target (or of the warehouse)."""

    def __init__(self, message: str, *, holder: dict[str, Any], fix: str | None = None) -> None:
        super().__init__(message, fix=fix, retry=True)
        self.holder = holder


@dataclass
class _Held:
    name: str
    fd: int
    path: Path
    server: Any = None  # the warehouse's hold of the lock (PostgreSQL's advisory lock), if any


_HELD_FDS: set[int] = set()


def _close_in_child() -> None:
    for fd in list(_HELD_FDS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_FDS.clear()


os.register_at_fork(after_in_child=_close_in_child)


@dataclass
class RunLock:
    """Hold with ``with RunLock(...)`` or :meth:`acquire` / :meth:`release`."""

    lock_dir: Path
    journal: Journal
    names: list[str]
    run_id: str | None = None
    command: str | None = None
    #: seconds to wait for a lock another process holds before refusing (0: refuse at once)
    wait: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: a workspace whose warehouse holds runs' locks too (PostgreSQL): target locks are also
    #: taken there (its engine's ``locks.try_lock``, :mod:`splice.warehouse.postgres.locks`),
    #: so runs from other machines are refused too
    server_ws: Workspace | None = None
    _held: list[_Held] = field(default_factory=list)
    _stale: list[tuple[Any, list[str]]] = field(default_factory=list)
    _note_at: list[int] = field(default_factory=list)

    def acquire(self) -> RunLock:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        try:
            for name in self.names:
                self._acquire_one(name)
        except BaseException:
            self.release()
            raise
        return self

    def _acquire_one(self, name: str) -> None:
        path = lock_file(self.lock_dir, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        _HELD_FDS.add(fd)
        deadline = time.monotonic() + self.wait
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
        except BlockingIOError:
            holder = self._holder(name) or _read_file(fd) or {}
            _HELD_FDS.discard(fd)
            os.close(fd)
            raise _refusal(name, holder, waited=self.wait) from None
        except BaseException:
            _HELD_FDS.discard(fd)
            os.close(fd)
            raise
        server = None
        if self.server_ws is not None and name.startswith("target:"):
            from splice.warehouse.engines import engine_module

            locks = engine_module(self.server_ws.config.warehouse.type, "locks")
            try:
                server = locks.try_lock(self.server_ws, name)
            except BaseException:
                _release_fd(fd)
                raise
            if server is None:  # a run on another machine holds it
                holder = self._holder(name) or {}
                _release_fd(fd)
                raise _refusal(name, holder, waited=self.wait)
        # We hold the OS lock. A leftover row means its holder died without releasing.
        stale = self._holder(name)
        if stale:
            self._took_over(name, stale)
        info = {
            "name": name,
            "run_id": self.run_id,
            "pid": os.getpid(),
            "host": this_host(),
            "command": self.command,
            "acquired_at": time.time(),
        }
        with self.journal._lock:
            self.journal.conn.execute(_TAKE_LOCK, info)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._held.append(_Held(name, fd, path, server))

    def _took_over(self, name: str, stale: dict[str, Any]) -> None:
        """Note a takeover; the locks one dead holder left share one note."""
        key = (stale.get("pid"), stale.get("host"), stale.get("run_id"))
        for i, (k, labels) in enumerate(self._stale):
            if k == key:
                labels.append(_label(name))
                self.notes[self._note_at[i]] = self._stale_note(labels, stale)
                return
        self._stale.append((key, [_label(name)]))
        self._note_at.append(len(self.notes))
        self.notes.append(self._stale_note([_label(name)], stale))

    @staticmethod
    def _stale_note(labels: list[str], stale: dict[str, Any]) -> str:
        alive = stale.get("host") == this_host() and pid_alive(int(stale.get("pid") or 0))
        what = " and ".join(labels) + (" locks" if len(labels) > 1 else " lock")
        return (
            f"took over the {what} left by {_who(stale)} since "
            f"{_when(stale.get('acquired_at'))}: "
            + ("its process no longer holds it." if alive else "that process is gone.")
        )

    def _holder(self, name: str) -> dict[str, Any] | None:
        with self.journal._lock:
            cur = self.journal.conn.execute(_LOCK_HOLDER, (name,))
            row = cur.fetchone()
            cols = [c[0] for c in cur.description]
        return dict(zip(cols, row, strict=True)) if row else None

    def release(self) -> None:
        while self._held:
            h = self._held.pop()
            with contextlib.suppress(Exception), self.journal._lock:
                self.journal.conn.execute(_RELEASE_LOCK, (h.name, os.getpid()))
            with contextlib.suppress(OSError):
                os.ftruncate(h.fd, 0)
            if h.server is not None:  # the session ends: the server frees the advisory lock
                with contextlib.suppress(Exception):
                    h.server.close()
            _release_fd(h.fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _release_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    _HELD_FDS.discard(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def target_lock(target: str) -> str:
    return f"target:{target}"


def watch_lock(target: str) -> str:
    return f"watch:{target}"


def _label(name: str) -> str:
    if name.startswith("target:"):
        return f"target {name.split(':', 1)[1]!r}"
    if name.startswith("watch:"):
        return f"watch of target {name.split(':', 1)[1]!r}"
    return "warehouse" if name == WAREHOUSE_LOCK else name


def _who(h: dict[str, Any]) -> str:
    cmd = f" ({h['command']})" if h.get("command") else ""
    run = f", run {h['run_id']}" if h.get("run_id") else ""
    return f"pid {h.get('pid', '?')} on host {h.get('host', '?')}{cmd}{run}"


def _when(ts: Any) -> str:
    try:
        t = float(ts)
    except (TypeError, ValueError):
        return "an unknown time"
    ago = max(0.0, time.time() - t)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    return f"{stamp} ({ago:.0f} s ago)"


def _read_file(fd: int) -> dict[str, Any] | None:
    try:
        data = os.pread(fd, 65536, 0)
        return json.loads(data) if data.strip() else None
    except (OSError, ValueError):
        return None


def _refusal(name: str, holder: dict[str, Any], *, waited: float = 0.0) -> RunLockedError:
    what = _label(name)
    waiting = f" (waited {waited:.0f} s)" if waited >= 1 else ""
    if name.startswith("watch:"):
        return RunLockedError(
            f"another splice watch holds the {what} lock: {_who(holder)}, since "
            f"{_when(holder.get('acquired_at'))}{waiting}; one watch per target at a time, so "
            "no interval is measured twice.",
            holder=holder,
            fix="run splice watch again when that one has finished, or stop that process; a lock "
            "whose process has died is taken over automatically",
        )
    scope = (
        "the warehouse allows one writer process at a time"
        if name == WAREHOUSE_LOCK
        else "one run per target at a time"
    )
    return RunLockedError(
        f"another splice run holds the {what} lock: {_who(holder)}, since "
        f"{_when(holder.get('acquired_at'))}{waiting}; {scope}.",
        holder=holder,
        fix="wait for that run to finish (`splice runs` shows it), or stop that process; "
        "a lock whose process has died is taken over automatically",
    )
