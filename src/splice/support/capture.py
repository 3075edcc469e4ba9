"""Capture the tools' own chatter (dbt, SQLMesh, dlt) into a log file.

Shown to the user only when something fails, or with ``-v``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path


class _Tee(io.TextIOBase):
    """Writes to every stream still open. A tool may keep a handle on it after the captured
    block ended (a logging handler made inside it); in a long-lived process (``splice mcp``,
    ``splice serve``) those late writes are dropped, never raised into the next call."""

    def __init__(self, *streams: io.TextIOBase) -> None:
        self._streams = streams

    def write(self, s: str) -> int:
        for st in self._streams:
            if not st.closed:
                st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self._streams:
            if not st.closed:
                st.flush()


_VERBOSE = False


def set_verbose(value: bool) -> None:
    global _VERBOSE
    _VERBOSE = value


@contextlib.contextmanager
def captured(log_path: Path | None, label: str, cwd: Path | None = None) -> Iterator[io.StringIO]:
    """Send stdout, stderr and logging of the block to ``log_path`` (and a buffer).

    With verbose on (``-v``) the chatter is also shown on stderr.  ``cwd``: run the block in
    that directory (the project's), so a relative warehouse path in a dbt profile or a SQLMesh
    config means what it means when the tool is run by hand there.

    The working directory, the root logger and ``sys.stdout`` belong to the whole process, and
    dbt and SQLMesh keep process-wide state of their own (dbt's flags, SQLMesh's import of a
    project's config.py), so one captured block runs at a time per process: a long-lived
    server's concurrent requests take turns here (and only here; reads that need no tool run
    in parallel). The lock is re-entrant, so a block may nest another.
    """
    with _TOOLS_LOCK:
        yield from _captured(log_path, label, cwd)


#: One tool call at a time per process (see :func:`captured`).
_TOOLS_LOCK = threading.RLock()


def _captured(log_path: Path | None, label: str, cwd: Path | None) -> Iterator[io.StringIO]:
    import os

    old_cwd = os.getcwd() if cwd is not None else None
    buf = io.StringIO()
    fh = None
    streams: list[io.TextIOBase] = [buf]
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        fh.write(f"\n===== {label} =====\n")
        streams.append(fh)  # type: ignore[arg-type]
    if _VERBOSE:
        streams.append(sys.__stderr__)  # type: ignore[arg-type]
    tee = _Tee(*streams)
    handler = logging.StreamHandler(tee)
    handler.setLevel(logging.DEBUG if _VERBOSE else logging.INFO)
    root = logging.getLogger()
    old_handlers = root.handlers[:]
    old_level = root.level
    root.handlers = [handler]
    root.setLevel(min(old_level or logging.WARNING, logging.INFO))
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(tee), contextlib.redirect_stderr(tee):  # type: ignore[type-var]
            yield buf
    finally:
        if old_cwd is not None:
            os.chdir(old_cwd)
        root.handlers = old_handlers
        root.setLevel(old_level)
        if fh is not None:
            fh.close()
