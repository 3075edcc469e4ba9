"""The audit log's hash chain, as the state sees it: hashing an entry, reading the chain, and
the one question every writer asks before it moves the witness: does the chain in the state
still *extend* a head recorded earlier (the same entries up to it)?

Each entry carries the hash of the one before it::

    hash = sha256(prev_hash + canonical JSON of {seq, at, kind, actor, proposal_id, payload})

(the first entry's ``prev_hash`` is 64 zeros). The rules of the log itself (what is recorded,
its verification report) are :mod:`splice.approvals.auditlog`; this module sits in the state
layer so that the state's own guards (:mod:`splice.state.witnessed`) can use it.

>>> canonical({"b": 1, "a": [1.5, "é"]})
'{"a":[1.5,"é"],"b":1}'
>>> entry_hash(GENESIS, {"seq": 1, "at": 0.0, "kind": "stop", "actor": "maria",
...                      "proposal_id": None, "payload": "{}"})[:12]
'a6c33f6a5c6f'
>>> gap_text(3, 5), gap_text(4, 4)
('entries 3..5 are gone', 'entry 4 is gone')
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from splice.state.sql import statement

_DIVERGENCE_SELECT = statement("SELECT hash FROM repair_audit_log WHERE seq = ?")

GENESIS = "0" * 64


def canonical(data: Any) -> str:
    """JSON with sorted keys and no spaces: one text for one value."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_hash(prev_hash: str, content: dict[str, Any]) -> str:
    return hashlib.sha256((prev_hash + canonical(content)).encode()).hexdigest()


@dataclass(frozen=True)
class Link:
    """One entry of the chain as stored (what its hash covers, and its hash)."""

    seq: int
    at: float
    kind: str
    actor: str
    proposal_id: str | None
    payload: str
    prev_hash: str
    hash: str

    def content(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at, "kind": self.kind, "actor": self.actor,
                "proposal_id": self.proposal_id, "payload": self.payload}  # fmt: skip

    def holds(self) -> bool:
        """Whether the entry's content still hashes to its recorded hash."""
        return entry_hash(self.prev_hash, self.content()) == self.hash


_COLUMNS = "seq, at, kind, actor, proposal_id, payload, prev_hash, hash"
_LINKS = statement(f"SELECT {_COLUMNS} FROM repair_audit_log WHERE seq > ? ORDER BY seq")


def links(conn: Any, after: int = 0) -> list[Link]:
    """The chain's entries with ``seq > after``, in order (none when the state has no log)."""
    import sqlite3

    try:
        rows = conn.execute(_LINKS, (after,)).fetchall()
    except sqlite3.OperationalError:  # a state from before the audit log
        return []
    return [Link(int(r[0]), float(r[1]), *r[2:]) for r in rows]


def gap_text(first: int, last: int) -> str:
    return f"entry {first} is gone" if first == last else f"entries {first}..{last} are gone"


def divergence(
    conn: Any, seq: int, hash_: str | None, *, trusted: tuple[int, str] | None = None
) -> str | None:
    """None when the chain in the state extends the head (``seq``, ``hash_``): entries 1..seq
    are there, in order, each still hashing to what it records, and entry ``seq`` has that
    hash. Otherwise what broke, in words (``entry 4 changed``, ``entries 11..12 are gone``).

    ``trusted``: a head (seq, hash) this process already walked up to; the walk starts after
    it when entry ``seq`` of it still has that hash.
    """
    if not seq:
        return None
    start, prev = 0, GENESIS
    if trusted is not None and 0 < trusted[0] <= seq:
        row = conn.execute(_DIVERGENCE_SELECT, (trusted[0],)).fetchone()
        if row is not None and str(row[0]) == trusted[1]:
            start, prev = trusted
    expected = start + 1
    for link in links(conn, after=start):
        if link.seq > seq:
            break
        if link.seq != expected:
            return f"{gap_text(expected, link.seq - 1)} (the log goes from {expected - 1} to {link.seq})"
        if link.prev_hash != prev or not link.holds():
            return f"entry {link.seq} changed ({link.kind} by {link.actor})"
        prev, expected = link.hash, link.seq + 1
    if expected <= seq:
        return f"{gap_text(expected, seq)} (the log ends at entry {expected - 1})"
    if prev != hash_:
        return (
            f"entry {seq} changed (it now hashes to {prev[:12]}, {str(hash_)[:12]} was recorded): "
            f"entries up to {seq} were rewritten"
        )
    return None
