"""What an attacker with write access to the workspace does to the audit log: rewrite entries
and re-chain them consistently, re-signed with the workspace's own local key (a file the
attacker can read), the head record moved along."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from splice.approvals import auditlog
from splice.state import signing


def local_signer(root: Path) -> signing.Signer:
    return signing.from_file(root / signing.LOCAL_KEY, create=False)


def rehash_from(con: sqlite3.Connection, seq: int, signer: signing.Signer | None = None) -> None:
    """Recompute every hash from ``seq`` on and the head: a consistent rewrite; each rewritten
    entry re-signed with ``signer`` (None: its signature dropped)."""
    rows = con.execute(
        "SELECT seq, at, kind, actor, proposal_id, payload FROM repair_audit_log ORDER BY seq"
    ).fetchall()
    prev = auditlog.GENESIS
    for s, at, kind, actor, pid, payload in rows:
        if s >= seq:
            content = {"seq": s, "at": at, "kind": kind, "actor": actor, "proposal_id": pid,
                       "payload": payload}  # fmt: skip
            h = auditlog.entry_hash(prev, content)
            sig = signer.sign(signing.message(h)) if signer else None
            con.execute(
                "UPDATE repair_audit_log SET prev_hash=?, hash=?, signer=?, signature=? WHERE seq=?",
                (prev, h, signer.key_id if signer else None, sig, s),
            )
        prev = con.execute("SELECT hash FROM repair_audit_log WHERE seq=?", (s,)).fetchone()[0]
    last = con.execute("SELECT MAX(seq) FROM repair_audit_log").fetchone()[0] or 0
    con.execute(
        "UPDATE repair_policy SET value=? WHERE key='audit_head'",
        (auditlog.canonical({"seq": last, "hash": prev}),),
    )


def forge_append(
    con: sqlite3.Connection,
    *,
    kind: str,
    actor: str,
    proposal_id: str | None,
    payload: dict,
    signer: signing.Signer | None = None,
) -> int:
    """Append an entry with a consistent hash (and the head moved), as Splice would write it;
    signed with ``signer`` when given. Returns its seq."""
    seq, prev = con.execute(
        "SELECT seq, hash FROM repair_audit_log ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    seq += 1
    body = auditlog.canonical(payload)
    at = 1.0e9
    h = auditlog.entry_hash(prev, {"seq": seq, "at": at, "kind": kind, "actor": actor,
                                   "proposal_id": proposal_id, "payload": body})  # fmt: skip
    sig = signer.sign(signing.message(h)) if signer else None
    con.execute(
        "INSERT INTO repair_audit_log(seq, at, kind, actor, proposal_id, payload, prev_hash, "
        "hash, signer, signature) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (seq, at, kind, actor, proposal_id, body, prev, h, signer.key_id if signer else None, sig),
    )
    con.execute(
        "UPDATE repair_policy SET value=? WHERE key='audit_head'",
        (auditlog.canonical({"seq": seq, "hash": h}),),
    )
    return seq
