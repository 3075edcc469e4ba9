"""An access grant as plain data: read access to the relations some nodes write, for a while.

A :class:`Grant` names what was asked (the selector, the relations it resolved to in the
target, who it is for, why and for how long), who asked, and what Splice did on the warehouse
(the role it made, the statements it ran, when access ends).  It round-trips through JSON
(:meth:`Grant.as_dict` / :meth:`Grant.from_dict`); Splice's state keeps it that way.

Statuses and the only transitions allowed (:data:`TRANSITIONS`)::

    pending ──> granting ──> granted ──> ended      (revoked by an owner, or its time was up)
       │            └──────> failed                (the warehouse refused; nothing is granted)
       ├──> rejected                               (an owner refused, or the requester withdrew)
       └──> expired                                (unanswered in time: never granted by waiting)

``granting`` is written before a statement reaches the warehouse, so a process killed while
granting leaves a row that says so: the next pass revokes whatever may have been granted
(the pending revokes are state, not memory) and marks the grant failed.

>>> g = Grant("AG-1", "prod", "finance", "finance:fct_gmv_qtd", ["finance.fct_gmv_qtd"],
...           "analyst", "quarter close", 8.0, "pending", "maria", 0.0, 14400.0)
>>> Grant.from_dict(g.as_dict()) == g
True
>>> can_move("pending", "granted"), can_move("pending", "granting")
(False, True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

#: status -> the statuses it may move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"granting", "rejected", "expired"}),
    "granting": frozenset({"granted", "failed"}),
    "granted": frozenset({"ended"}),
    "failed": frozenset(),
    "rejected": frozenset(),
    "expired": frozenset(),
    "ended": frozenset(),
}
STATUSES: tuple[str, ...] = tuple(TRANSITIONS)
#: Statuses in which the warehouse may hold what Splice granted: revoked when the time is up.
HELD: frozenset[str] = frozenset({"granting", "granted"})
#: The decision recorded (and the audit-log kind, prefixed ``access-``) per status reached.
DECISION_FOR = {
    "granting": "approve",
    "granted": "grant",
    "failed": "failed",
    "rejected": "reject",
    "expired": "expire",
    "ended": "revoke",
}


def can_move(src: str, dst: str) -> bool:
    """Whether a grant in status ``src`` may move to ``dst``."""
    return dst in TRANSITIONS.get(src, frozenset())


@dataclass
class Grant:
    grant_id: str
    target: str
    domain: str
    selector: str
    relations: list[str]  # schema.name, as the warehouse knows them
    grantee: str  # the warehouse role that is given read access
    why: str
    hours: float
    status: str
    created_by: str
    created_at: float
    expires_at: float  # an unanswered request expires then
    nodes: list[str] = field(default_factory=list)
    requester: dict[str, Any] | None = None
    role: str | None = None  # the role Splice made for this grant (its privileges)
    statements: list[str] = field(default_factory=list)  # what was run to grant
    granted_at: float | None = None
    until: float | None = None  # access ends then
    ended_at: float | None = None
    end_reason: str | None = None
    revoke_statements: list[str] = field(default_factory=list)
    last_error: str | None = None  # the last failed attempt to revoke (retried)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grant:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def schemas(self) -> list[str]:
        """The schemas holding the relations, in first-seen order.

        >>> Grant("AG-1", "prod", "d", "s", ["marts.a", "marts.b", "raw.c"], "r", "w", 1.0,
        ...       "pending", "m", 0.0, 1.0).schemas
        ['marts', 'raw']
        """
        return list(dict.fromkeys(r.split(".", 1)[0] for r in self.relations))
