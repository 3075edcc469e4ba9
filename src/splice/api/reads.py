"""The compositions over reads and notifications: a node's domain, a detector's words, the
housekeeping ``splice serve`` runs on time (expiry, escalation, grants due, the channels)."""

from __future__ import annotations

from typing import Any

from splice.workspace.core import Workspace


def node_domains(ws: Workspace, node_ids: list[str]) -> dict[str, str | None]:
    """The domain each node belongs to (None where no domain covers it, or it is unknown)."""
    from splice.approvals.domains import domain_for

    g = ws.graph()
    out: dict[str, str | None] = {}
    for nid in node_ids:
        d = domain_for(g, ws.config, nid) if nid in g.nodes else None
        out[nid] = d.name if d is not None else None
    return out


def detector_words(detector: str) -> str:
    """What a detector found, in the words of the diagnosis ("stopped moving", "jumped").

    >>> detector_words("stopped_moving"), detector_words("something_new")
    ('stopped moving', 'something_new')
    """
    from splice.watch.diagnosis import DETECTOR_WORDS

    return DETECTOR_WORDS.get(detector, detector)


def housekeeping(ws: Workspace, *, now: float | None = None) -> Any:
    """What must happen on time without anyone asking (``splice serve`` calls it every few
    seconds): unanswered requests escalate and expire as of ``now``, access grants whose time is
    up are revoked, then the channels are told
    (returns the :class:`splice.notify.outbox.DeliveryReport`)."""
    from splice.api.grants import end_due_access
    from splice.errors import SpliceError
    from splice.notify.outbox import deliver
    from splice.repair.approvals import refresh_all

    problems = []
    try:
        refresh_all(ws, now=now)
    except SpliceError as e:  # a decision raced this one: the next call applies it
        problems.append(f"expiry and escalation: {e.message}")
    try:  # access grants whose time is up are revoked on time
        problems.extend(end_due_access(ws, now=now))
    except SpliceError as e:
        problems.append(f"access grants: {e.message}")
    report = deliver(ws)
    report.errors[:0] = problems
    return report
