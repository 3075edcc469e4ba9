"""Splice's own state: a SQLite file with a versioned schema and forward migrations.

A newer Splice opens an older workspace's state (migrations run in one transaction); a state
whose schema is newer than this Splice knows is refused, never overwritten.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlglot import exp

from splice.errors import StateError
from splice.state.migrations import MIGRATIONS
from splice.state.sql import Statement, placeholders, script, statement, where_equal

SCHEMA_VERSION = len(MIGRATIONS)

_AUDIT_HEAD = statement("SELECT value FROM repair_policy WHERE key = 'audit_head'")
_PG_HAS_META = statement(
    "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
    "AND table_name = 'splice_meta'",
    backends=["postgres"],
)
_SCHEMA_VERSION = statement("SELECT value FROM splice_meta WHERE key = 'schema_version'")
_SET_SCHEMA_VERSION = statement(
    "INSERT INTO splice_meta(key, value) VALUES('schema_version', ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value"
)
_STATE_ID = statement("SELECT value FROM splice_meta WHERE key = 'state_id'")
_NEW_STATE_ID = statement(
    "INSERT INTO splice_meta(key, value) VALUES('state_id', ?) ON CONFLICT(key) DO NOTHING"
)
_CACHE_PUT = statement(
    "INSERT OR REPLACE INTO content_cache(kind, key, value, created_at) VALUES(?, ?, ?, ?)"
)


@functools.cache
def migration_statements(version: int) -> list[Statement]:
    """The statements of migration ``version`` (1-based), parsed once."""
    return script(MIGRATIONS[version - 1][1])


def read_audit_head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    """The audit log's head (seq, hash) as recorded in a state (``repair_policy.audit_head``)."""
    try:
        row = conn.execute(_AUDIT_HEAD).fetchone()
    except sqlite3.OperationalError:  # a state from before the audit log
        return None
    if row is None:
        return None
    try:
        h = json.loads(row[0])
        return int(h["seq"]), str(h["hash"])
    except (ValueError, KeyError, TypeError):
        return None


def next_id(conn: sqlite3.Connection, table: str, column: str, prefix: str) -> str:
    """The next free id ``PREFIX-N`` among ``table.column`` (``PR-1``, ``AG-1``, ``MG-1``, ...);
    ``table`` and ``column`` are Splice's own names, never a user's."""
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)$", re.IGNORECASE)
    top = 0
    for (value,) in conn.execute(Statement(exp.select(column).from_(table))):
        m = pattern.match(str(value))
        if m:
            top = max(top, int(m.group(1)))
    return f"{prefix}-{top + 1}"


def target_status_filter(
    target: str | None, statuses: Iterable[str] | None
) -> tuple[exp.Expr | None, list[str]] | None:
    """A condition (with its arguments) keeping the rows of ``target`` in ``statuses`` (either
    None: not filtered; no condition when neither is given); None when ``statuses`` is empty,
    so nothing can match.

    >>> cond, args = target_status_filter("prod", {"pending", "approved"})
    >>> cond.sql(), args
    ('target = ? AND status IN (?, ?)', ['prod', 'approved', 'pending'])
    >>> target_status_filter(None, None), target_status_filter(None, set())
    ((None, []), None)
    """
    if statuses is not None and not statuses:
        return None
    return where_equal(target=target, status=None if statuses is None else set(statuses))


def is_url(target: Path | str) -> bool:
    """True when ``target`` names a PostgreSQL state (a URL), not a SQLite file."""
    return isinstance(target, str) and target.split("://", 1)[0].split("+", 1)[0] in (
        "postgresql", "postgres")  # fmt: skip


def pg_connect(url: str, password: str | None = None) -> sqlite3.Connection:
    """A connection to a PostgreSQL state with the sqlite3 surface (:mod:`splice.state.pg`);
    a server that cannot be used is a one-line StateError naming ``[state] url``."""
    import psycopg

    from splice.state.pg import Connection

    plain = re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", url)
    info: dict[str, object] = {"conninfo": plain, "connect_timeout": 10,
                               "application_name": "splice-state"}  # fmt: skip
    if password is not None:
        info["password"] = password
    try:
        return Connection(url, info)  # type: ignore[return-value]
    except psycopg.OperationalError as e:
        raise _pg_error(url, e) from None


def _pg_error(url: str, e: Exception) -> StateError:
    where = redact(url)
    low = str(e).lower()
    text = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
    if "password authentication failed" in low or "no password supplied" in low:
        return StateError(f"Splice state {where}: the server refused the password ({text}).",
                          fix="correct the user in [state] url, or the password in the "
                              "variable [state] password_env names")  # fmt: skip
    if "does not exist" in low and "database" in low:
        return StateError(f"Splice state {where}: {text}.",
                          fix="create the database (createdb) or correct [state] url")  # fmt: skip
    return StateError(f"Splice state {where} cannot be reached: {text}.",
                      fix="start the server or correct [state] url", retry=True)  # fmt: skip


def redact(url: str) -> str:
    """A state URL without its password.

    >>> redact("postgresql+psycopg://me:secret@db:5432/splice")
    'postgresql+psycopg://me@db:5432/splice'
    """
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1@", url)


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

    def __init__(self, conn: sqlite3.Connection, path: Path | str) -> None:
        self.conn = conn
        self.path = path
        #: called after every COMMIT (the workspace keeps its witness up to date with it)
        self.after_commit: list[Callable[[StateStore], None]] = []
        #: called inside every transaction: right after BEGIN, and just before COMMIT (an
        #: exception there rolls the transaction back: the witness's guard refuses a commit
        #: on a log that no longer extends what it recorded)
        self.on_begin: list[Callable[[StateStore], None]] = []
        self.before_commit: list[Callable[[StateStore], None]] = []

    @property
    def on_postgres(self) -> bool:
        return not isinstance(self.path, Path)

    @property
    def where(self) -> str:
        """The state's file, or its URL without the password (for messages)."""
        return redact(self.path) if isinstance(self.path, str) else str(self.path)

    @classmethod
    def open(cls, path: Path | str, *, password: str | None = None) -> StateStore:
        """The state at ``path`` (a SQLite file), or in the PostgreSQL database a
        ``postgresql://`` URL names (:mod:`splice.state.pg`)."""
        if isinstance(path, str):
            store = cls(pg_connect(path, password), path)  # type: ignore[arg-type]
            try:
                store._migrate()
            except BaseException:
                store.conn.close()
                raise
            return store
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
        if self.on_postgres:  # a missing table would abort a PostgreSQL transaction: ask first
            found = self.conn.execute(_PG_HAS_META).fetchone()
            if not found:
                return 0
        try:
            row = self.conn.execute(_SCHEMA_VERSION).fetchone()
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
                f"Splice state {self.where} has schema version {current}, newer than this Splice "
                f"understands ({SCHEMA_VERSION}); it was not changed.",
                fix="upgrade Splice (pip install -U splice) to open this workspace",
            )
        if current == SCHEMA_VERSION:
            return
        with self.transaction():
            # another process or thread may have migrated while this one waited for the lock
            current = self.schema_version
            for version, _script in MIGRATIONS[current:]:
                for stmt in migration_statements(version):
                    self.conn.execute(stmt)
                self.conn.execute(_SET_SCHEMA_VERSION, (str(version),))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for hook in self.on_begin:
                hook(self)
            yield self.conn
            for hook in self.before_commit:
                hook(self)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
            for hook in self.after_commit:
                hook(self)

    def state_id(self) -> str:
        """This state's id, made once when it is first asked for (see :mod:`splice.state.witness`)."""
        row = self.conn.execute(_STATE_ID).fetchone()
        if row:
            return str(row[0])
        import uuid

        sid = f"state-{uuid.uuid4().hex}"
        self.conn.execute(_NEW_STATE_ID, (sid,))
        row = self.conn.execute(_STATE_ID).fetchone()
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
            q = Statement(
                exp.select("key", "value")
                .from_("content_cache")
                .where(exp.column("kind").eq(exp.Placeholder()))
                .where(exp.column("key").isin(*placeholders(len(chunk))))
            )
            for k, v in self.conn.execute(q, [kind, *chunk]):
                out[k] = json.loads(v)
        return out

    def cache_put_many(self, kind: str, items: dict[str, object]) -> None:
        if not items:
            return
        now = time.time()
        with self.transaction():
            self.conn.executemany(
                _CACHE_PUT,
                [(kind, k, json.dumps(v, separators=(",", ":")), now) for k, v in items.items()],
            )

    def close(self) -> None:
        self.conn.close()
