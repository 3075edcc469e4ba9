"""A state from before principals (schema 6: decisions recorded under a bare name) opens with
this Splice: migrated forward, its decisions marked as names given with --as, its audit log
still intact, and new decisions recorded with their principal after the old ones."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from splice.approvals import auditlog
from splice.repair import store
from splice.repair.model import Proposal, Step
from splice.repair.receipt import build_receipt, receipt_markdown
from splice.state import store as store_mod
from splice.state.migrations import MIGRATIONS
from splice.state.sql import statement
from splice.state.store import SCHEMA_VERSION, StateStore
from splice.support.principals import Principal

OLD = 6  # the schema before principals
T0 = 1_790_000_000.0


_PROPOSAL = statement(
    "INSERT INTO repair_proposals(proposal_id, incident_id, target, domain, status, payload, "
    "created_by, created_at, expires_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
)
_DECISION = statement(
    "INSERT INTO repair_decisions(proposal_id, decision, actor, comment, at) VALUES (?,?,?,?,?)"
)
_ENTRY = statement("INSERT INTO repair_audit_log VALUES (?,?,?,?,?,?,?,?)")
_HEAD = statement("INSERT INTO repair_policy(key, value) VALUES ('audit_head', ?)")
_KEYS = statement("SELECT COUNT(*) FROM api_keys")


def _old_state(path: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema-6 state written as Splice wrote it then: a proposal, its decisions under bare
    names, and the hash-chained log entries without a principal."""
    with monkeypatch.context() as m:
        m.setattr(store_mod, "MIGRATIONS", MIGRATIONS[:OLD])
        m.setattr(store_mod, "SCHEMA_VERSION", OLD)
        s = StateStore.open(path)
    assert s.schema_version == OLD
    p = Proposal("PR-1", "INC-1", "prod", "pricing", "restatement", "Repair INC-1", "stale rates",
                 date(2026, 9, 28), date(2026, 9, 29),
                 [Step("restate", "pricing", ["pricing:fx.daily_rates"], date(2026, 9, 28),
                       date(2026, 9, 29), ["sqlmesh", "plan"])],
                 ["sqlmesh plan"], {}, None, "splice-agent", T0, T0 + 4 * 3600,
                 status="approved", requested_at=T0)  # fmt: skip
    payload = p.as_dict()
    del payload["requester"]  # not a field then
    con = s.conn
    con.execute("BEGIN")
    con.execute(
        _PROPOSAL,
        ("PR-1", "INC-1", "prod", "pricing", "approved", auditlog.canonical(payload),
         "splice-agent", T0, T0 + 4 * 3600, T0 + 60),
    )  # fmt: skip
    prev = auditlog.GENESIS
    old = [("propose", "splice-agent", T0), ("request", "splice-agent", T0),
           ("escalate", "splice", T0 + 30), ("approve", "maria", T0 + 60)]  # fmt: skip
    for seq, (kind, actor, at) in enumerate(old, 1):
        if kind != "propose":
            con.execute(_DECISION, ("PR-1", kind, actor, None, at))
        body = auditlog.canonical({"status": "pending", "comment": None})
        content = {"seq": seq, "at": at, "kind": kind, "actor": actor, "proposal_id": "PR-1",
                   "payload": body}  # fmt: skip
        h = auditlog.entry_hash(prev, content)
        con.execute(_ENTRY, (seq, at, kind, actor, "PR-1", body, prev, h))
        prev = h
    con.execute(_HEAD, (json.dumps({"seq": len(old), "hash": prev}),))
    con.execute("COMMIT")
    s.close()


def test_a_state_from_before_principals_opens_migrated_and_intact(
    state_target: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = state_target
    _old_state(path, monkeypatch)
    s = StateStore.open(path)
    try:
        assert s.schema_version == SCHEMA_VERSION > OLD
        assert auditlog.verify(s).intact  # the old entries hash as they did

        d = store.decisions(s, "PR-1")
        assert [(x.actor, x.principal_kind, x.principal_auth) for x in d] == [
            ("splice-agent", None, "cli-as"),  # a name given then: its kind is not known
            ("splice", "agent", "system"),  # Splice's own bookkeeping
            ("maria", None, "cli-as"),
        ]
        p = store.load(s, "PR-1")
        assert p.requester == {"name": "splice-agent", "kind": None, "auth": "cli-as",
                               "credential": None}  # fmt: skip
        assert p.as_dict()["requester"]["auth"] == "cli-as"

        # a new decision goes on the same chain, with its principal
        sam = Principal.of("sam", kind="person", auth="api-key", credential="abc123def456")
        store.transition(s, "PR-1", "rejected", principal=sam, comment="not yet", now=T0 + 90)
        assert auditlog.verify(s).intact
        last = auditlog.entries(s, "PR-1")[-1].as_dict()
        assert last["payload"]["principal"] == sam.record()
        assert "principal" not in auditlog.entries(s, "PR-1")[0].as_dict()["payload"]

        r = build_receipt(p.as_dict(), {"id": "INC-1"},
                          [x.as_dict() for x in store.decisions(s, "PR-1")], [], None)  # fmt: skip
        md = receipt_markdown(r)
        assert "- Requested by: splice-agent (cli-as)" in md
        assert "- Approved by: maria (cli-as) at" in md
        assert "reject by sam (person, api-key abc123def456)" in md
        assert tuple(s.conn.execute(_KEYS).fetchone()) == (0,)
    finally:
        s.close()
