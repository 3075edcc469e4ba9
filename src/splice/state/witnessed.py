"""Open Splice's state under its witness (see :mod:`splice.state.witness`), and guard it.

The witness only ever moves forward. Every transaction on a witnessed state passes a guard
just before it commits:

- the witness must be there when the state records that it has one (``splice_meta.witness``):
  a deleted witness is an error for every command that writes, until an owner re-creates it
  (``splice audit-log rewitness``, recorded);
- the audit log in the state must *extend* the head the witness recorded: the same entries up
  to it, each still hashing to what it records. If it does not (an entry changed, entries cut
  from the end, the state rolled back to an older copy), nothing is committed and the command
  stops: no ordinary command can make a tampered log verify again. Only an owner's
  ``splice audit-log accept-divergence`` moves the witness over a divergence, recorded in
  the log and in the witness file;
- the entries this transaction appended are signed by the process's key
  (:mod:`splice.state.signing`).

After the commit the witness is rewritten to the new head (only forward), and the head is
appended to every anchor outside the workspace (:mod:`splice.state.anchors`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from splice.errors import StateError
from splice.state import witness
from splice.state.chain import divergence
from splice.state.signing import Signer, message
from splice.state.sql import statement
from splice.state.store import StateStore

_RECORD_WITNESS_INSERT = statement(
    "INSERT INTO splice_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
)
_RECORDED_WITNESS_SELECT = statement("SELECT value FROM splice_meta WHERE key = ?")
_SIGN_NEW_UPDATE = statement("UPDATE repair_audit_log SET signer = ?, signature = ? WHERE seq = ?")
_SIGN_NEW_SELECT = statement(
    "SELECT seq, hash FROM repair_audit_log WHERE seq > ? AND signature IS NULL ORDER BY seq"
)
_CHECK_SELECT = statement("SELECT hash FROM repair_audit_log WHERE seq = ?")

FIX_MISSING = (
    "restore {state} from a backup; or, to start a new, empty state on purpose (its history, "
    "audit log included, is then gone), rerun with --new-state"
)
FIX_DIVERGED = (
    "restore the state from a backup, or `splice audit-log accept-divergence --as OWNER "
    "--reason ...` (recorded in both)"
)
FIX_NO_WITNESS = (
    "restore {path} from a backup, or `splice audit-log rewitness --as OWNER --reason ...` "
    "(recorded in the log)"
)
WITNESS_KEY = "witness"
#: The state schema whose audit log carries signatures (migration 13).
SIGNED_SINCE = 13


def recorded_witness(conn: Any) -> dict[str, Any] | None:
    """What the state records of its witness (``{"path", "since"}``), None when nothing."""
    row = conn.execute(_RECORDED_WITNESS_SELECT, (WITNESS_KEY,)).fetchone()
    if row is None:
        return None
    try:
        d = json.loads(row[0])
        return d if isinstance(d, dict) else None
    except ValueError:
        return None


def _record_witness(conn: Any, path: Path) -> None:
    conn.execute(
        _RECORD_WITNESS_INSERT,
        (WITNESS_KEY, json.dumps({"path": str(path), "since": time.time()})),
    )


def diverged_message(path: Path, w: witness.Witness, reason: str) -> str:
    return (
        f"the audit log no longer extends what the witness recorded ({reason}; {path} "
        f"recorded entry {w.audit_seq}, hash {str(w.audit_hash)[:12]}): nothing was written"
    )


class Guard:
    """The witness's guard on one open state (see the module docstring)."""

    def __init__(
        self,
        witness_path: Path,
        anchors: Sequence[Any],
        signer: Callable[[], Signer] | None,
    ) -> None:
        self.witness_path = witness_path
        self.anchors = list(anchors)
        self.signer = signer
        #: a head whose whole chain this guard walked (the next walk starts after it)
        self.trusted: tuple[int, str] | None = None
        self._begin_seq = 0
        #: set by accept-divergence / rewitness: the next commit may move the witness anyway
        self.override: dict[str, Any] | None = None
        self.anchor_errors: list[str] = []

    # -- hooks -------------------------------------------------------------------------------
    def on_begin(self, store: StateStore) -> None:
        head = store.audit_head()
        self._begin_seq = head[0] if head else 0

    def before_commit(self, store: StateStore) -> None:
        self._sign_new(store)
        if self.override is not None:
            return
        w = witness.read(self.witness_path)
        if w is None:
            if recorded_witness(store.conn) is not None:
                raise StateError(
                    f"Splice's audit-log witness {self.witness_path} is missing, but the state "
                    "records that it has one: nothing was written.",
                    fix=FIX_NO_WITNESS.format(path=self.witness_path),
                )
            return
        head = store.audit_head()
        if head is None or (head[0], head[1]) == (w.audit_seq, w.audit_hash) == self.trusted:
            if head is None and w.audit_seq:
                raise StateError(
                    diverged_message(self.witness_path, w, "the log's head record is gone"),
                    fix=FIX_DIVERGED,
                )
            return
        reason = self.check(store, w, head)
        if reason:
            raise StateError(diverged_message(self.witness_path, w, reason), fix=FIX_DIVERGED)

    def check(self, store: StateStore, w: witness.Witness, head: tuple[int, str]) -> str | None:
        """Why the chain up to ``head`` is not a whole chain extending the witness, or None."""
        reason = divergence(store.conn, head[0], head[1], trusted=self.trusted)
        if reason is None and w.audit_seq:
            if w.audit_seq > head[0]:
                reason = (
                    f"entries {head[0] + 1}..{w.audit_seq} are gone (the log ends at {head[0]})"
                )
                if w.audit_seq == head[0] + 1:
                    reason = f"entry {w.audit_seq} is gone (the log ends at {head[0]})"
            else:
                row = store.conn.execute(_CHECK_SELECT, (w.audit_seq,)).fetchone()
                if row is None or str(row[0]) != w.audit_hash:
                    reason = (
                        f"entry {w.audit_seq} changed: entries up to {w.audit_seq} were "
                        "rewritten together with their hashes"
                    )
        if reason is None:
            self.trusted = (head[0], head[1])
        return reason

    def _sign_new(self, store: StateStore) -> None:
        if self.signer is None:
            return
        rows = store.conn.execute(
            _SIGN_NEW_SELECT,
            (self._begin_seq,),
        ).fetchall()
        if not rows:
            return
        signer = self.signer()
        for seq, h in rows:
            store.conn.execute(
                _SIGN_NEW_UPDATE,
                (signer.key_id, signer.sign(message(str(h))), int(seq)),
            )

    def after_commit(self, store: StateStore) -> None:
        # several threads or processes may be here at once: they take turns, and each reads
        # the log's head inside the lock, so the file only ever moves forward
        override, self.override = self.override, None
        with witness.writing(self.witness_path):
            head = store.audit_head()
            w = witness.read(self.witness_path)
            if head is None:
                return
            if override is None:
                if w is None:
                    return  # refused before the commit when it matters
                if (head[0], head[1]) == (w.audit_seq, w.audit_hash):
                    return
                if w.audit_seq > head[0] or self.check(store, w, head):
                    return  # another writer is ahead, or the guard refused it already
                new = witness.Witness(w.state_id, w.created_at, head[0], head[1],
                                      divergences=w.divergences)  # fmt: skip
            else:
                base = w or witness.Witness(store.state_id(), time.time())
                found = list(base.divergences)
                if override.get("record"):
                    found.append({**override["record"], "to_seq": head[0], "to_hash": head[1]})
                new = witness.Witness(base.state_id, base.created_at, head[0], head[1],
                                      divergences=found)  # fmt: skip
                self.trusted = (head[0], head[1])
            witness.write(self.witness_path, new)
        self.send_to_anchors(store.state_id(), head, divergence=override is not None)

    def send_to_anchors(self, state_id: str, head: tuple[int, str], *, divergence: bool) -> None:
        """Append ``head`` to every anchor; an anchor that does not take it is an error after
        the commit (what was committed stays; ``splice audit-log anchor`` sends it again)."""
        failed = []
        for a in self.anchors:
            try:
                a.append(state_id, head[0], head[1], divergence=divergence)
            except StateError as e:
                failed.append(f"{a.name}: {e.message}")
        if failed:
            raise StateError(
                f"the change was committed and the witness records entry {head[0]}, but "
                f"{len(failed)} audit anchor(s) did not take the head: {'; '.join(failed)}.",
                fix="`splice audit-log anchor` sends the head again once the anchor answers",
                retry=True,
            )

    @contextmanager
    def overriding(self, record: dict[str, Any] | None) -> Iterator[None]:
        """The next commit moves the witness (and the anchors) to the log's head even though
        it does not extend the recorded one (accept-divergence, rewitness)."""
        self.override = {"record": record}
        try:
            yield
        finally:
            self.override = None


def guard_of(store: StateStore) -> Guard | None:
    return getattr(store, "guard", None)


def open_witnessed(
    path: Path | str,
    witness_path: Path,
    *,
    new_state: bool = False,
    anchors: Sequence[Any] = (),
    signer: Callable[[], Signer] | None = None,
) -> StateStore:
    """The state at ``path`` (a SQLite file, or a PostgreSQL URL), refused when the witness
    says this workspace had another one.

    A first open (no witness, and a state that records none) makes the witness; ``new_state``
    starts afresh on purpose and makes a new witness. The returned store carries the
    :class:`Guard` (``store.guard``).
    """
    from splice.state.store import pg_connect, redact

    w = witness.read(witness_path)
    where = redact(path) if isinstance(path, str) else str(path)
    if w is not None and not new_state:
        if isinstance(path, str):  # PostgreSQL: a database with no schema is a state never made
            probe = StateStore(pg_connect(path), path)
            try:
                lost = "empty" if probe.schema_version == 0 else None
            finally:
                probe.close()
        else:
            lost = "missing" if not path.exists() else "empty" if path.stat().st_size == 0 else None
        if lost:
            raise StateError(
                f"Splice's state {where} is {lost}, but this workspace has had state: "
                f"{witness_path} records {w.state_id} with {w.audit_seq} audit-log entries.",
                fix=FIX_MISSING.format(state=where),
            )
    store = StateStore.open(path)
    try:
        sid = store.state_id()
        if w is not None and not new_state and w.state_id != sid:
            raise StateError(
                f"Splice's state {where} is not this workspace's: it is {sid}, but {witness_path} "
                f"records {w.state_id}.",
                fix=FIX_MISSING.format(state=where),
            )
        recorded = recorded_witness(store.conn)
        if w is None and recorded is not None and not new_state:
            try:  # a witness that is gone must at least be restorable where it is configured
                witness_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise witness.unusable(witness_path, "written", e) from None
        if new_state or (w is None and recorded is None):
            head = store.audit_head()
            w = witness.Witness(sid, time.time(), *(head or (0, None)))
            witness.write(witness_path, w)
        if w is not None and recorded is None:
            with store.transaction() as conn:
                _record_witness(conn, witness_path)
    except BaseException:
        store.close()
        raise
    # a state kept at an older schema (an older Splice in this process) has no signatures
    guard = Guard(witness_path, anchors, signer if store.schema_version >= SIGNED_SINCE else None)
    store.guard = guard  # type: ignore[attr-defined]
    store.on_begin.append(guard.on_begin)
    store.before_commit.append(guard.before_commit)
    store.after_commit.append(guard.after_commit)
    return store


def record_witness(store: StateStore, path: Path) -> None:
    """Record in the state that it has a witness at ``path`` (inside a transaction)."""
    _record_witness(store.conn, path)
