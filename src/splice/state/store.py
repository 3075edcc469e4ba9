"""Splice's own state: a SQLite file with a versioned schema and forward migrations.

A newer Splice opens an older workspace's state (migrations run in one transaction); a state
whose schema is newer than this Splice knows is refused, never overwritten.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from splice.errors import StateError
from splice.state.migrations import MIGRATIONS

SCHEMA_VERSION = len(MIGRATIONS)


def read_audit_head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    """The audit log's head (seq, hash) as recorded in a state (``repair_policy.audit_head``)."""
    try:
        row = conn.execute("SELECT value FROM repair_policy WHERE key='audit_head'").fetchone()
    except sqlite3.OperationalError:  # a state from before the audit log
        return None
    if row is None:
        return None
    try:
        h = json.loads(row[0])
        return int(h["seq"]), str(h["hash"])
    except (ValueError, KeyError, TypeError):
        return None


def _open_error(path: Path, e: sqlite3.DatabaseError) -> StateError:
    """Why the state cannot be opened, told as what it is (a full disk is not a bad file)."""
    import shutil

    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    if free is not None and free < 1024 * 1024:
        return StateError(
            f"Splice state {path} cannot be opened: the disk is full ({free} bytes free; {e}).",
            fix="free space on that disk, then run the same command again",
            retry=True,
        )
    return StateError(
        f"Splice state {path} cannot be opened: {e}.",
        fix="check the disk and the file's permissions; if the file is not a Splice state, "
        "move it aside (a workspace that had state then needs --new-state to start anew)",
    )


class StateStore:
    """A thin wrapper over SQLite. Opened per command; closed at once.

    >>> import tempfile, pathlib
    >>> s = StateStore.open(pathlib.Path(tempfile.mkdtemp()) / "state.db")
    >>> s.schema_version == SCHEMA_VERSION
    True
    >>> s.close()
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: called after every COMMIT (the workspace keeps its witness up to date with it)
        self.after_commit: list[Callable[[StateStore], None]] = []

    @classmethod
    def open(cls, path: Path) -> StateStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as e:
            raise _open_error(path, e) from None
        store = cls(conn, path)
        store._migrate()
        return store

    @property
    def schema_version(self) -> int:
        try:
            row = self.conn.execute(
                "SELECT value FROM splice_meta WHERE key='schema_version'"
            ).fetchone()
        except sqlite3.OperationalError:
            return 0
        except sqlite3.DatabaseError as e:
            raise StateError(
                f"Splice state {self.path} is not a SQLite database ({e}).",
                fix="move the file aside; Splice will start a new state",
            ) from None
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        current = self.schema_version
        if current > SCHEMA_VERSION:
            self.conn.close()
            raise StateError(
                f"Splice state {self.path} has schema version {current}, newer than this Splice "
                f"understands ({SCHEMA_VERSION}); it was not changed.",
                fix="upgrade Splice (pip install -U splice) to open this workspace",
            )
        if current == SCHEMA_VERSION:
            return
        with self.transaction():
            # another process or thread may have migrated while this one waited for the lock
            current = self.schema_version
            for version, script in MIGRATIONS[current:]:
                for stmt in [s for s in script.split(";") if s.strip()]:
                    self.conn.execute(stmt)
                self.conn.execute(
                    "INSERT INTO splice_meta(key, value) VALUES('schema_version', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (str(version),),
                )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
            for hook in self.after_commit:
                hook(self)

    def state_id(self) -> str:
        """This state's id, made once when it is first asked for (see :mod:`splice.state.witness`)."""
        row = self.conn.execute("SELECT value FROM splice_meta WHERE key='state_id'").fetchone()
        if row:
            return str(row[0])
        import uuid

        sid = f"state-{uuid.uuid4().hex}"
        self.conn.execute(
            "INSERT INTO splice_meta(key, value) VALUES('state_id', ?) ON CONFLICT(key) DO NOTHING",
            (sid,),
        )
        row = self.conn.execute("SELECT value FROM splice_meta WHERE key='state_id'").fetchone()
        return str(row[0])

    def audit_head(self) -> tuple[int, str] | None:
        """The audit log's head (seq, hash) as recorded in this state, if any."""
        return read_audit_head(self.conn)

    # -- caches keyed by content hash --------------------------------------------------------
    def cache_get_many(self, kind: str, keys: Iterable[str]) -> dict[str, object]:
        keys = list(keys)
        out: dict[str, object] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = f"SELECT key, value FROM content_cache WHERE kind=? AND key IN ({','.join('?' * len(chunk))})"
            for k, v in self.conn.execute(q, [kind, *chunk]):
                out[k] = json.loads(v)
        return out

    def cache_put_many(self, kind: str, items: dict[str, object]) -> None:
        if not items:
            return
        now = time.time()
        with self.transaction():
            self.conn.executemany(
                "INSERT OR REPLACE INTO content_cache(kind, key, value, created_at) VALUES(?,?,?,?)",
                [(kind, k, json.dumps(v, separators=(",", ":")), now) for k, v in items.items()],
            )

    def close(self) -> None:
        self.conn.close()
