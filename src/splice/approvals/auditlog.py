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
import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from splice.state.chain import GENESIS, canonical, entry_hash
from splice.state.sql import select_where, statement
from splice.state.store import StateStore, read_audit_head
from splice.support.principals import Principal

_APPEND_INSERT = statement(
    "INSERT INTO repair_audit_log(seq, at, kind, actor, proposal_id, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?)"
)
_SET_HEAD = statement(
    "INSERT INTO repair_policy(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
)
_HEAD_IN_CHAIN_SELECT = statement("SELECT hash FROM repair_audit_log WHERE seq = ?")
_ENTRY_COLUMNS = ["seq", "at", "kind", "actor", "proposal_id", "payload", "prev_hash", "hash",
                  "signer", "signature"]  # fmt: skip
_APPEND_SELECT = statement("SELECT seq, hash FROM repair_audit_log ORDER BY seq DESC LIMIT 1")

__all__ = ["GENESIS", "canonical", "entry_hash"]

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
    # the log itself: an owner accepted a divergence, or re-created a lost witness
    "accept-divergence", "rewitness",
    # writes into a BI tool ([[bi]] annotate): an incident's annotation made, changed, ended
    "bi-annotate", "bi-annotation-end",
)  # fmt: skip
#: The decisions a person makes: with ``[policy] decisions = "server"`` each must be signed by
#: a key in ``[policy] server_keys`` (splice.state.signing).
DECISION_KINDS = frozenset({
    "approve", "reject", "apply", "undo", "stop", "resume", "accept-level",
    "access-approve", "access-reject", "migrate-approve",
})  # fmt: skip


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
    #: the writing process's key (``ed25519:...``) and its signature of ``hash``
    signer: str | None = None
    signature: str | None = None

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
        last = conn.execute(_APPEND_SELECT).fetchone()
        head = (int(last[0]), str(last[1])) if last else (0, GENESIS)
    seq, prev = head[0] + 1, head[1]
    body = canonical(payload)
    at = time.time() if at is None else float(at)
    content = {"seq": seq, "at": at, "kind": kind, "actor": actor, "proposal_id": proposal_id,
               "payload": body}  # fmt: skip
    h = entry_hash(prev, content)
    conn.execute(
        _APPEND_INSERT,
        (seq, at, kind, actor, proposal_id, body, prev, h),
    )
    conn.execute(
        _SET_HEAD,
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
    q = select_where("repair_audit_log", _ENTRY_COLUMNS, order_by="seq", proposal_id=proposal_id)
    return [Entry(*row) for row in state.conn.execute(q, q.args)]


@dataclass
class AuditReport:
    intact: bool
    entries: int
    head_seq: int | None
    head_hash: str | None
    seq: int | None = None  # the first entry found wrong
    #: edited | deleted | reordered | truncated | head | rewritten | witness-missing |
    #: signature | unsigned | receipt | anchor
    problem: str | None = None
    detail: str | None = None
    #: what was checked beyond the chain, each {"check", "ok", "detail"} (ok None: not run)
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: divergences owners accepted (from the witness)
    divergences: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def not_run(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["ok"] is None]


def _what(e: Entry) -> str:
    return f"{e.kind} by {e.actor}" + (f" on {e.proposal_id}" if e.proposal_id else "")


def verify(
    state: StateStore,
    witness: Any = None,
    *,
    witness_path: Any = None,
    anchors: Any = (),
    server_keys: list[str] | None = None,
) -> AuditReport:
    """Walk the chain from the first entry; report the first entry edited, deleted or moved;
    then compare it with ``witness`` (a :class:`splice.state.witness.Witness`); then check
    every entry's signature (with ``server_keys``: every person's decision signed by one of
    them), every receipt's recorded head, and every anchor's heads
    (:mod:`splice.state.anchors`). ``witness_path``: where the witness should be (a missing
    witness the state records is TAMPERED)."""
    rows = entries(state)  # read once: the chain walk and every check below use them
    report = _verify_chain(state, rows)
    if not report.intact:
        return report
    chain = {e.seq: e.hash for e in rows}

    def bad(seq: int | None, problem: str, detail: str) -> AuditReport:
        report.intact, report.seq, report.problem, report.detail = False, seq, problem, detail
        return report

    def passed(check: str, detail: str, ok: bool | None = True) -> None:
        report.checks.append({"check": check, "ok": ok, "detail": detail})

    # the witness outside the state
    if witness is None and witness_path is not None:
        from splice.state.witnessed import recorded_witness

        if recorded_witness(state.conn) is not None:
            return bad(None, "witness-missing",
                       f"the witness {witness_path} is gone, but the state records that it has "
                       "one: restore it, or an owner runs splice audit-log rewitness")  # fmt: skip
        passed("witness", "no witness (the state records none)", None)
    if witness is not None:
        report.divergences = list(getattr(witness, "divergences", []) or [])
        if witness.audit_seq:
            seen = chain.get(witness.audit_seq)
            if seen is None:
                return bad(report.entries + 1, "truncated",
                           f"the witness outside the state recorded {witness.audit_seq} entries (head "
                           f"{str(witness.audit_hash)[:12]}), the log holds {report.entries}: entries "
                           "were cut from its end, head and all")  # fmt: skip
            if seen != witness.audit_hash:
                return bad(witness.audit_seq, "rewritten",
                           f"entry {witness.audit_seq} hashes to {seen[:12]}, but the witness outside "
                           f"the state recorded {str(witness.audit_hash)[:12]}: the log was rewritten "
                           "together with its head")  # fmt: skip
        passed("witness", f"holds entry {witness.audit_seq}")
    # signatures
    problem = _check_signatures(rows, server_keys)
    if problem is not None:
        return bad(*problem)
    signed = sum(1 for e in rows if e.signature)
    by_server = sum(1 for e in rows if server_keys and e.signer in server_keys)
    passed("signatures", f"{signed} of {len(rows)} entries signed"
           + (f", {by_server} by a server key" if server_keys else ""))  # fmt: skip
    # receipts
    n = 0
    for e in rows:
        if e.kind != "receipt":
            continue
        head = _payload(e).get("audit_head")
        if not isinstance(head, dict):
            continue
        n += 1
        if chain.get(int(head.get("seq") or 0)) != head.get("hash"):
            return bad(e.seq, "receipt",
                       f"the receipt of {e.proposal_id} (entry {e.seq}) recorded head entry "
                       f"{head.get('seq')} {str(head.get('hash'))[:12]}, which the log no longer "
                       "holds")  # fmt: skip
    passed("receipts", f"{n} receipt(s) name a head the chain holds")
    # anchors outside the workspace
    from splice.errors import SpliceError
    from splice.state.anchors import judge

    state_id = state.state_id()
    top = report.head_seq or 0
    for a in anchors:
        if not a.readable:
            passed(f"anchor {a.name}", "write-only: heads are sent to it, not read back", None)
            continue
        try:
            heads = a.heads(state_id)
        except SpliceError as e:
            return bad(None, "anchor", f"anchor {a.name} cannot be read: {e.message}")
        wrong = judge(heads, chain, top)
        if wrong:
            return bad(None, "anchor", f"anchor {a.name}: {wrong}")
        passed(f"anchor {a.name}", f"{len(heads)} head(s), the last entry {top}")
    return report


def _payload(e: Entry) -> dict[str, Any]:
    try:
        d = json.loads(e.payload)
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _check_signatures(
    rows: list[Entry], server_keys: list[str] | None
) -> tuple[int, str, str] | None:
    """(seq, problem, detail) of the first entry whose signature is wrong, missing where one is
    owed, or, with ``server_keys``, a person's decision not signed by a server key."""
    from splice.state.signing import message
    from splice.state.signing import verify as sig_ok

    signing_began = False
    for e in rows:
        if e.signature or e.signer:
            if not sig_ok(e.signer, message(e.hash), e.signature):
                return (e.seq, "signature",
                        f"entry {e.seq} ({_what(e)}) carries a signature that does not verify "
                        f"with its key {str(e.signer)[:20]}…: it was forged or altered")  # fmt: skip
            signing_began = True
        elif signing_began:
            return (e.seq, "unsigned",
                    f"entry {e.seq} ({_what(e)}) is not signed, though every entry since "
                    "signing began is: it was written outside Splice")  # fmt: skip
        if server_keys and e.kind in DECISION_KINDS:
            who = _payload(e).get("principal") or {}
            if who.get("kind", "person") == "person" and e.signer not in server_keys:
                how = (
                    "not signed"
                    if not e.signer
                    else f"signed by {e.signer[:20]}…, not a server key"
                )
                return (e.seq, "unsigned",
                        f"entry {e.seq} ({_what(e)}) is a decision {how}: with [policy] "
                        'decisions = "server" only a key in [policy] server_keys decides')  # fmt: skip
    return None


def head_in_chain(state: StateStore, head: dict[str, Any] | None) -> bool:
    """Whether the chain holds entry ``head["seq"]`` with hash ``head["hash"]``."""
    if not head:
        return False
    row = state.conn.execute(_HEAD_IN_CHAIN_SELECT, (int(head.get("seq") or 0),)).fetchone()
    return row is not None and str(row[0]) == head.get("hash")


def _verify_chain(state: StateStore, rows: list[Entry]) -> AuditReport:
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
