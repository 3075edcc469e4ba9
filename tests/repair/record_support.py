"""A domain's proven record for autonomy (L3/L4): earlier reloads that were applied *and*
verified, as ``splice.repair.store.clean_record`` counts them."""

from __future__ import annotations

import time
from datetime import date
from typing import Any


def clean_reloads(ws: Any, domain: str, n: int = 3, *, at: float | None = None) -> None:
    """``n`` earlier reload_ingestion applications in ``domain``, each applied and verified,
    the last at ``at`` (default: now; the record counts the applications in a row up to now)."""
    from splice.approvals import auditlog
    from splice.repair import store
    from splice.repair.model import Proposal
    from splice.support.principals import SYSTEM, Principal

    agent = Principal.of("splice-agent", kind="agent", auth="cli-as", scopes="read,propose")
    last = time.time() if at is None else at
    for i in range(n):
        when = last - (n - 1 - i)
        p = Proposal(store.new_proposal_id(ws.state), "INC-0", ws.target, domain,
                     "reload_ingestion", "earlier reload", "", date(2026, 9, 1),
                     date(2026, 9, 1), [], [], {}, None, "splice-agent", when, when + 3600)  # fmt: skip
        store.save(ws.state, p, principal=agent, now=when)
        for to in ("pending", "approved", "applying", "applied"):
            store.transition(ws.state, p.proposal_id, to, principal=SYSTEM, now=when)
        auditlog.record(ws.state, kind="verify", principal=SYSTEM, proposal_id=p.proposal_id,
                        payload={"passed": True}, at=when)  # fmt: skip
