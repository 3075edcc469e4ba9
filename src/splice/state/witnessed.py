"""Open Splice's state under its witness (see :mod:`splice.state.witness`)."""

from __future__ import annotations

import time
from pathlib import Path

from splice.errors import StateError
from splice.state import witness
from splice.state.store import StateStore

FIX_MISSING = (
    "restore {state} from a backup; or, to start a new, empty state on purpose (its history, "
    "audit log included, is then gone), rerun with --new-state"
)


def open_witnessed(path: Path | str, witness_path: Path, *, new_state: bool = False) -> StateStore:
    """The state at ``path`` (a SQLite file, or a PostgreSQL URL), refused when the witness
    says this workspace had another one.

    A first open (no witness) makes the witness; ``new_state`` starts afresh on purpose and
    makes a new witness. Every commit that moves the audit log's head rewrites the witness.
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
    except BaseException:
        store.close()
        raise
    if w is None or new_state:
        head = store.audit_head()
        w = witness.Witness(sid, time.time(), *(head or (0, None)))
        witness.write(witness_path, w)
    store.after_commit.append(_keeper(witness_path, w))
    return store


def _keeper(witness_path: Path, w: witness.Witness):  # type: ignore[no-untyped-def]
    last = {"seq": w.audit_seq, "hash": w.audit_hash}
    base = w

    def keep(store: StateStore) -> None:
        # after commit, several threads or processes may be here at once: they take turns,
        # and each reads the log's head inside the lock, so the file only ever moves forward
        with witness.writing(witness_path):
            head = store.audit_head()
            if head is None or (head[0], head[1]) == (last["seq"], last["hash"]):
                return
            last["seq"], last["hash"] = head
            witness.write(
                witness_path,
                witness.Witness(base.state_id, base.created_at, head[0], head[1]),
            )

    return keep
