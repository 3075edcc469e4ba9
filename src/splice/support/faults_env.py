"""Faults of the machine, not of Splice: a warehouse locked by another process, a full disk, a
file Splice may not write. Wherever one surfaces (inside dbt, SQLMesh, DuckDB or SQLite), it is
told as what it is, with what to do and whether a retry can help, never as a bug.

>>> import errno
>>> e = environmental_error(OSError(errno.ENOSPC, "No space left on device", "/w/x.db"))
>>> e.message, e.retry
('the disk is full: /w/x.db could not be written (No space left on device).', True)
>>> environmental_error(ValueError("a real bug")) is None
True
"""

from __future__ import annotations

import errno
import re
import sqlite3

from splice.errors import SpliceError, WarehouseError

_FULL = re.compile(r"no space left on device|database or disk is full|disk is full", re.I)
_READ_ONLY = re.compile(
    r"read-only file system|readonly database|read-only mode|permission denied|"
    r"cannot open file .* for writing|attempt to write a readonly",
    re.I,
)
_PATH = re.compile(r"""(?:file|database)\s+["']([^"']+)["']""", re.I)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 20:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def locked_error(exc: BaseException, where: str) -> WarehouseError | None:
    """A WarehouseError naming the file and the holder, when ``exc`` is DuckDB's lock conflict.

    >>> e = locked_error(IOError('IO Error: Could not set lock on file "/w/warehouse.duckdb": '
    ...     'Conflicting lock is held in /usr/bin/python3 (PID 42). See also https://duckdb.org'), "x")
    >>> e.message
    'x: the warehouse file /w/warehouse.duckdb is locked by another process (PID 42).'
    """
    text = str(exc)
    if "Could not set lock" in text or "Conflicting lock" in text:
        file = re.search(r'on file "([^"]+)"', text)
        pid = re.search(r"\(PID (\d+)\)", text)
        holder = f" (PID {pid.group(1)})" if pid else ""
        return WarehouseError(
            f"{where}: the warehouse file {file.group(1) + ' ' if file else ''}is locked by another process{holder}.",
            fix="wait for the other process (dbt, sqlmesh, a notebook) to finish or close it; "
            "DuckDB allows one writer process at a time",
            retry=True,
        )
    return None


def environmental_error(exc: BaseException) -> SpliceError | None:
    """A SpliceError for a fault of the environment anywhere in ``exc``'s chain, else None."""
    for e in _chain(exc):
        if isinstance(e, SpliceError):
            return e
        lock = locked_error(e, "Splice could not open the warehouse")
        if lock is not None:
            return lock
        text = str(e)
        where = getattr(e, "filename", None)
        if where is None:
            m = _PATH.search(text)
            where = m.group(1) if m else None
        full = (
            (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT))
            or (isinstance(e, sqlite3.OperationalError | OSError) or "IO Error" in text)
            and bool(_FULL.search(text))
        )
        if full:
            what = f"{where} could not be written" if where else "a file could not be written"
            reason = getattr(e, "strerror", None) or text.splitlines()[0][:200]
            return WarehouseError(
                f"the disk is full: {what} ({reason}).",
                fix="free space on that disk, then run the same command again; what the failed "
                "command wrote was rolled back",
                retry=True,
            )
        read_only = (isinstance(e, OSError) and e.errno in (errno.EROFS, errno.EACCES)) or (
            (isinstance(e, sqlite3.OperationalError) or "IO Error" in text or "Permission" in text)
            and bool(_READ_ONLY.search(text))
        )
        if read_only:
            what = where or "a file Splice must write"
            return WarehouseError(
                f"cannot write {what}: {text.splitlines()[0][:200]}.",
                fix="give this user write access to it (or to its directory), or point the "
                "workspace at a writable copy",
            )
    return None
