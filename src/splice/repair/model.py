"""A repair proposal as plain data: the contract between proposing, approving, applying and undoing.

A :class:`Proposal` holds the steps of a repair (:class:`Step`), the commands a person could
run instead, the cost, the suggested audit, and the undo (:class:`UndoEntry`, one per relation
the repair rewrites).  It round-trips through JSON (:meth:`Proposal.as_dict` /
:meth:`Proposal.from_dict`); Splice's state keeps it that way.

Statuses and the only transitions allowed (:data:`TRANSITIONS`)::

    draft ──> pending ──> approved ──> applying ──> applied ──> undone
      │          │          │             ├──────> failed ───> undone
      │          │          │             └──────> interrupted ──> undone  (its apply died)
      │          ├──────────┼──> rejected   (an approval is revoked by an owner before apply)
      └──────────┴──────────┴──> expired    (an approval not applied in time expires too)

``pending`` means the undo was captured and verified restorable; only a pending proposal can
be approved.  ``rejected`` and ``expired`` are final: propose again.

>>> p = Proposal("PR-1", "INC-1", "prod", "pricing", "restatement", "t", "c",
...              date(2026, 9, 28), date(2026, 9, 29),
...              [Step("restate", "pricing", ["pricing:fx.daily_rates"],
...                    date(2026, 9, 28), date(2026, 9, 29), ["sqlmesh", "plan"])],
...              ["sqlmesh plan"], {}, None, "claude", 0.0, 14400.0)
>>> import json
>>> Proposal.from_dict(json.loads(json.dumps(p.as_dict()))) == p
True
>>> can_move("draft", "approved"), can_move("pending", "approved")
(False, True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import date
from typing import Any, Literal

StepKind = Literal["reload", "restate", "rebuild"]
ChangeClass = Literal["reload_ingestion", "restatement", "model_change"]
Status = Literal[
    "draft",
    "pending",
    "approved",
    "rejected",
    "expired",
    "applying",
    "applied",
    "failed",
    "interrupted",
    "undone",
]

CHANGE_CLASSES: tuple[str, ...] = ("reload_ingestion", "restatement", "model_change")

#: status -> the statuses it may move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"pending", "rejected", "expired"}),
    "pending": frozenset({"approved", "rejected", "expired"}),
    "approved": frozenset({"applying", "rejected", "expired"}),
    "applying": frozenset({"applied", "failed", "interrupted"}),
    "applied": frozenset({"undone"}),
    "failed": frozenset({"undone"}),
    # its apply died; the undo was restored (or restoring it failed: undo may be tried again)
    "interrupted": frozenset({"undone"}),
    "rejected": frozenset(),
    "expired": frozenset(),
    "undone": frozenset(),
}
STATUSES: tuple[str, ...] = tuple(TRANSITIONS)
#: Statuses in which a request for approval is still open (escalation and expiry apply).
OPEN: frozenset[str] = frozenset({"draft", "pending"})
#: Statuses that expire when their time is up: open requests, and approvals not applied.
EXPIRING: frozenset[str] = OPEN | {"approved"}


def can_move(src: str, dst: str) -> bool:
    """Whether a proposal in status ``src`` may move to ``dst``."""
    return dst in TRANSITIONS.get(src, frozenset())


def _day(v: Any) -> date | None:
    if v is None or isinstance(v, date):
        return v
    return date.fromisoformat(str(v))


def _iso(v: date | None) -> str | None:
    return v.isoformat() if v is not None else None


@dataclass
class Step:
    """One step of a repair, run by the executor of its project."""

    kind: StepKind
    project: str
    nodes: list[str]
    start: date | None
    end: date | None
    command: list[str]  # argv a person could run by hand instead
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start"], d["end"] = _iso(self.start), _iso(self.end)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Step:
        return cls(
            kind=d["kind"],
            project=d["project"],
            nodes=list(d.get("nodes") or []),
            start=_day(d.get("start")),
            end=_day(d.get("end")),
            command=list(d.get("command") or []),
            detail=dict(d.get("detail") or {}),
        )


@dataclass
class UndoEntry:
    """The saved rows of one relation, for ``[start, end]`` of ``time_column`` (all rows if None).

    ``checksum`` is computed in the warehouse (:func:`splice.repair.undo.checksum_query`) over
    the rows as they were; ``columns`` are the relation's (name, type) at capture, so a restore
    into a table whose shape changed is refused.  ``saved_to`` is relative to the workspace when
    it lies inside it.
    """

    node_id: str
    relation: str  # fully qualified physical table
    time_column: str | None
    start: date | None
    end: date | None
    rows: int
    checksum: str
    saved_to: str
    columns: list[tuple[str, str]] = field(default_factory=list)
    #: how it is put back: "copy" (the saved rows, in one transaction), "overwrite" (the saved
    #: rows, by partition overwrite: a warehouse without transactions), "version" (a table
    #: version recorded, restored by time travel)
    method: str = "copy"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start"], d["end"] = _iso(self.start), _iso(self.end)
        d["columns"] = [list(c) for c in self.columns]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UndoEntry:
        return cls(
            node_id=d["node_id"],
            relation=d["relation"],
            time_column=d.get("time_column"),
            start=_day(d.get("start")),
            end=_day(d.get("end")),
            rows=int(d["rows"]),
            checksum=str(d["checksum"]),
            saved_to=str(d["saved_to"]),
            columns=[(str(n), str(t)) for n, t in d.get("columns") or []],
            method=str(d.get("method") or "copy"),
        )


@dataclass
class Proposal:
    """A repair as data.  ``requested_at`` is set when approval is requested (status pending):
    escalation and expiry count from then."""

    proposal_id: str
    incident_id: str
    target: str
    domain: str
    change_class: ChangeClass
    title: str
    cause: str
    scope_start: date
    scope_end: date
    steps: list[Step]
    commands: list[str]
    cost: dict[str, Any]
    audit_diff: str | None
    created_by: str
    created_at: float
    expires_at: float
    status: str = "draft"
    undo: list[UndoEntry] = field(default_factory=list)
    requested_at: float | None = None
    #: who asked for it (:meth:`splice.support.principals.Principal.record`); None before principals
    requester: dict[str, Any] | None = None
    #: the damage per node and how the repair rewrites it (``{"nodes": [...], "blocked": [...]}``,
    #: :func:`splice.repair.draft.draft_repair`); empty for proposals made before it existed
    scope: dict[str, Any] = field(default_factory=dict)
    #: every domain whose relations the repair rewrites or reloads, ``domain`` (the origin's)
    #: first: an owner of each approves it. Empty for proposals made before: ``[domain]``
    domains: list[str] = field(default_factory=list)
    #: nodes the repair rewrites that no ``[[domains]]`` entry covers (nobody approves for them)
    unowned: list[str] = field(default_factory=list)

    @property
    def touched_domains(self) -> list[str]:
        """The domains whose owners decide it: ``domains``, or the origin's alone (older)."""
        return list(self.domains) or [self.domain]

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "steps":
                v = [s.as_dict() for s in self.steps]
            elif f.name == "undo":
                v = [u.as_dict() for u in self.undo]
            elif isinstance(v, date):
                v = v.isoformat()
            d[f.name] = v
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proposal:
        return cls(
            proposal_id=d["proposal_id"],
            incident_id=d.get("incident_id") or "",
            target=d["target"],
            domain=d["domain"],
            change_class=d["change_class"],
            title=d.get("title") or "",
            cause=d.get("cause") or "",
            scope_start=date.fromisoformat(str(d["scope_start"])),
            scope_end=date.fromisoformat(str(d["scope_end"])),
            steps=[Step.from_dict(s) for s in d.get("steps") or []],
            commands=list(d.get("commands") or []),
            cost=dict(d.get("cost") or {}),
            audit_diff=d.get("audit_diff"),
            created_by=d["created_by"],
            created_at=float(d["created_at"]),
            expires_at=float(d["expires_at"]),
            status=d.get("status") or "draft",
            undo=[UndoEntry.from_dict(u) for u in d.get("undo") or []],
            requested_at=(float(d["requested_at"]) if d.get("requested_at") is not None else None),
            requester=dict(d["requester"]) if d.get("requester") else None,
            scope=dict(d.get("scope") or {}),
            domains=[str(x) for x in d.get("domains") or []],
            unowned=[str(x) for x in d.get("unowned") or []],
        )


@dataclass(frozen=True)
class Decision:
    """One row of ``repair_decisions``."""

    proposal_id: str
    decision: str  # approve | reject | escalate | expire | request | apply | undo | ...
    actor: str
    comment: str | None
    at: float
    principal_kind: str | None = None  # person | agent (None: recorded before principals)
    principal_auth: str | None = None  # os-user | cli-as | api-key | oauth | stdio | system
    principal_credential: str | None = None  # an API key's id, a token's subject
    #: the domains an approval is for (an escalation: the domain whose owner is asked); None
    #: for other decisions and for those recorded before proposals had several domains
    domains: tuple[str, ...] | None = None

    @property
    def principal(self) -> dict[str, Any]:
        return {"name": self.actor, "kind": self.principal_kind, "auth": self.principal_auth,
                "credential": self.principal_credential}  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        d = {**asdict(self), "principal": self.principal}
        d["domains"] = list(self.domains) if self.domains is not None else None
        return d
