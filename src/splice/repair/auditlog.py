"""The append-only audit log of repairs: every decision, stop and resume, apply, undo and receipt.

Each entry carries the hash of the one before it::

    hash = sha256(prev_hash + canonical JSON of {seq, at, kind, actor, proposal_id, payload})

(the first entry's ``prev_hash`` is 64 zeros), and the latest (seq, hash) is kept apart as the
head (``repair_policy`` key ``audit_head``).  :func:`verify` walks the chain and reports the
first entry that was edited, deleted or moved, and a log cut short at its end.  Appending chains
from the head, so an entry deleted at the end stays a visible gap.

The chain proves the log is intact against its own head; someone who can rewrite the whole
state file can rewrite both.  So the head is also kept outside the state, in the workspace's
witness file (:mod:`splice.state.witness`, rewritten after every append), and every receipt
carries the head at its time: :func:`verify` given the witness checks that the chain still
holds the witnessed entry with the witnessed hash (a chain cut short, or rewritten together
with its head, fails).

>>> canonical({"b": 1, "a": [1.5, "é"]})
'{"a":[1.5,"é"],"b":1}'
>>> entry_hash(GENESIS, {"seq": 1, "at": 0.0, "kind": "stop", "actor": "maria",
...                      "proposal_id": None, "payload": "{}"})[:12]
'a6c33f6a5c6f'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import Any

from splice.principals import Principal
from splice.state.store import StateStore, read_audit_head

GENESIS = "0" * 64
HEAD_KEY = "audit_head"
#: What the log records (``kind``).
KINDS = (
    "propose", "request", "approve", "reject", "escalate", "expire", "stop", "resume",
    "apply", "applied", "failed", "interrupted", "verify", "undo", "receipt", "status",
    "key-create", "key-revoke", "accept-level",
    # access grants (splice.grants): the grant's id stands where a proposal's would
    "access-request", "access-approve", "access-reject", "access-escalate", "access-expire",
    "access-grant", "access-failed", "access-revoke", "access-receipt",
    # warehouse migrations (splice.migrate): the migration's id stands where a proposal's would
    "migrate-plan", "migrate-approve", "migrate-wave", "migrate-check", "migrate-complete",
)  # fmt: skip


def canonical(data: Any) -> str:
    """JSON with sorted keys and no spaces: one text for one value."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_hash(prev_hash: str, content: dict[str, Any]) -> str:
    return hashlib.sha256((prev_hash + canonical(content)).encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    seq: int
    at: float
    kind: str
    actor: str
    proposal_id: str | None
    payload: str  # canonical JSON, exactly as hashed
    prev_hash: str
    hash: str

    def content(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at, "kind": self.kind, "actor": self.actor,
                "proposal_id": self.proposal_id, "payload": self.payload}  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        with contextlib.suppress(ValueError):
            d["payload"] = json.loads(self.payload)
        return d


def _head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    return read_audit_head(conn)


def append(
    conn: sqlite3.Connection,
    *,
    kind: str,
    principal: Principal,
    proposal_id: str | None,
    payload: dict[str, Any],
    at: float | None = None,
) -> Entry:
    """Append one entry; ``conn`` must be inside a transaction (``StateStore.transaction()``),
    so the entry is written with the change it records or not at all.  The entry's ``actor``
    is the principal's name; its payload carries the principal (name, kind, how it was
    authenticated, credential) under ``principal``, so the chain covers it."""
    actor = principal.name
    payload = {**payload, "principal": principal.record()}
    head = _head(conn)
    if head is None:
        last = conn.execute(
            "SELECT seq, hash FROM repair_audit_log ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        head = (int(last[0]), str(last[1])) if last else (0, GENESIS)
    seq, prev = head[0] + 1, head[1]
    body = canonical(payload)
    at = time.time() if at is None else float(at)
    content = {"seq": seq, "at": at, "kind": kind, "actor": actor, "proposal_id": proposal_id,
               "payload": body}  # fmt: skip
    h = entry_hash(prev, content)
    conn.execute(
        "INSERT INTO repair_audit_log(seq, at, kind, actor, proposal_id, payload, prev_hash, hash) "
        "VALUES (?,?,?,?,?,?,?,?)",
        (seq, at, kind, actor, proposal_id, body, prev, h),
    )
    conn.execute(
        "INSERT INTO repair_policy(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (HEAD_KEY, canonical({"seq": seq, "hash": h})),
    )
    return Entry(seq, at, kind, actor, proposal_id, body, prev, h)


def record(
    state: StateStore,
    *,
    kind: str,
    principal: Principal,
    proposal_id: str | None,
    payload: dict[str, Any],
    at: float | None = None,
) -> Entry:
    """Append one entry in its own transaction (a receipt, for example)."""
    with state.transaction() as conn:
        return append(conn, kind=kind, principal=principal, proposal_id=proposal_id,
                      payload=payload, at=at)  # fmt: skip


def entries(state: StateStore, proposal_id: str | None = None) -> list[Entry]:
    q = "SELECT seq, at, kind, actor, proposal_id, payload, prev_hash, hash FROM repair_audit_log"
    args: tuple[Any, ...] = ()
    if proposal_id is not None:
        q += " WHERE proposal_id = ?"
        args = (proposal_id,)
    return [Entry(*row) for row in state.conn.execute(q + " ORDER BY seq", args)]


@dataclass
class AuditReport:
    intact: bool
    entries: int
    head_seq: int | None
    head_hash: str | None
    seq: int | None = None  # the first entry found wrong
    problem: str | None = None  # edited | deleted | reordered | truncated | head
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _what(e: Entry) -> str:
    return f"{e.kind} by {e.actor}" + (f" on {e.proposal_id}" if e.proposal_id else "")


def verify(state: StateStore, witness: Any = None) -> AuditReport:
    """Walk the chain from the first entry; report the first entry edited, deleted or moved;
    then compare it with ``witness`` (a :class:`splice.state.witness.Witness`) when given."""
    report = _verify_chain(state)
    if not report.intact or witness is None or not witness.audit_seq:
        return report
    rows = {e.seq: e for e in entries(state)}
    seen = rows.get(witness.audit_seq)
    if seen is None:
        report.intact, report.seq, report.problem = False, report.entries + 1, "truncated"
        report.detail = (
            f"the witness outside the state recorded {witness.audit_seq} entries (head "
            f"{str(witness.audit_hash)[:12]}), the log holds {report.entries}: entries were cut "
            "from its end, head and all"
        )
    elif seen.hash != witness.audit_hash:
        report.intact, report.seq, report.problem = False, witness.audit_seq, "rewritten"
        report.detail = (
            f"entry {witness.audit_seq} hashes to {seen.hash[:12]}, but the witness outside the "
            f"state recorded {str(witness.audit_hash)[:12]}: the log was rewritten together "
            "with its head"
        )
    return report


def _verify_chain(state: StateStore) -> AuditReport:
    rows = entries(state)
    head = _head(state.conn)
    report = AuditReport(True, len(rows), head[0] if head else None, head[1] if head else None)

    def bad(seq: int, problem: str, detail: str) -> AuditReport:
        report.intact, report.seq, report.problem, report.detail = False, seq, problem, detail
        return report

    stored = {e.hash: e for e in rows}
    expected, prev = 1, GENESIS
    before: Entry | None = None
    for e in rows:
        if e.seq != expected:
            gap = f"{expected}" if e.seq == expected + 1 else f"{expected}..{e.seq - 1}"
            return bad(expected, "deleted",
                       f"entry {gap} is missing: the log goes from {expected - 1} to {e.seq}")  # fmt: skip
        if e.prev_hash != prev:
            owner = stored.get(e.prev_hash)
            if owner is not None and owner.seq != e.seq - 1:
                return bad(e.seq, "reordered",
                           f"entry {e.seq} ({_what(e)}) was written after entry {owner.seq} "
                           f"({_what(owner)}), not after entry {e.seq - 1}: entries were moved")  # fmt: skip
            if before is not None and entry_hash(before.prev_hash, before.content()) == before.hash:
                return bad(before.seq, "edited",
                           f"entry {before.seq} ({_what(before)}) was changed and re-hashed after "
                           f"entry {e.seq} recorded its hash ({e.prev_hash[:12]}, now {prev[:12]})")  # fmt: skip
            return bad(e.seq, "edited",
                       f"entry {e.seq} ({_what(e)}) does not follow entry {e.seq - 1}: its "
                       f"prev_hash {e.prev_hash[:12]} is not {prev[:12]}")  # fmt: skip
        computed = entry_hash(e.prev_hash, e.content())
        if computed != e.hash:
            return bad(e.seq, "edited",
                       f"entry {e.seq} ({_what(e)}) was edited: its content hashes to "
                       f"{computed[:12]}, not the recorded {e.hash[:12]}")  # fmt: skip
        expected, prev, before = e.seq + 1, e.hash, e
    last_seq = expected - 1
    if head is None:
        if rows:
            return bad(
                last_seq, "head", "the log's head record (repair_policy.audit_head) is missing"
            )
        return report
    if head[0] > last_seq:
        gap = f"{head[0]}" if head[0] == last_seq + 1 else f"{last_seq + 1}..{head[0]}"
        return bad(last_seq + 1, "truncated",
                   f"entry {gap} was deleted from the end: the head records {head[0]} entries, "
                   f"the log holds {last_seq}")  # fmt: skip
    if head[0] < last_seq:
        return bad(head[0] + 1, "head",
                   f"entries after {head[0]} were added outside Splice (the head records {head[0]})")  # fmt: skip
    if head[1] != prev:
        return bad(last_seq, "edited",
                   f"entry {last_seq} was replaced: the head records hash {head[1][:12]}, "
                   f"the entry hashes to {prev[:12]}")  # fmt: skip
    return report
