"""Accepting a new level: a person decides that a series' shifted level is its new normal.

A level that moves and stays keeps its incident open (:mod:`splice.watch.levels`): every new
interval at the shifted level is part of it, until a verified repair puts the series back or a
person accepts the level (``splice incident accept-level INC``, the ``accept_level`` MCP tool,
the incident's page).  Accepting is a decision like an approval:

- only a **person** with the ``approve`` scope, where ``[policy]`` lets the way they came in
  decide (:func:`splice.approvals.access.require`, action ``accept-level``);
- a **named owner** of the domain of the incident's origin (the same rule as approving a repair
  of it: :func:`splice.approvals.rules.is_owner`);
- never during an org-wide stop (``splice stop``, until ``splice resume``), like every other
  decision (:func:`splice.approvals.rules.refuse_during_stop`);
- on an **open** incident with no repair under way (a proposal drafted, waiting, approved or
  running is rejected or withdrawn first: a repair and a new normal exclude each other).

It records one accepted level per series of the incident (``watch_levels``, ``how =
"accepted"``), from where that series' fault started: the earliest ``since`` its detectors
reported among its anomalies in the incident, else its first anomalous interval.  ``series``
narrows it to some series (``currency=JPY``, or a metric's name); the others stay open and so
does the incident.  When every series of the incident has its level, the incident closes with
status :data:`ACCEPTED` and a resolution naming who accepted and how they were authenticated.
The levels, the audit-log entry (kind ``accept-level``) and the incident's new status are one
state transaction: all or nothing.  Accepting what was already accepted is refused.

>>> parse_selector("currency=JPY, channel = web")
{'currency': 'jpy', 'channel': 'web'}
>>> parse_selector("fx_rate") is None
True
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from splice.errors import ApprovalError, InputError
from splice.state.sql import statement
from splice.support.names import name_key, normalise_name
from splice.support.principals import AUTH_WORDS, Principal

_INCIDENT_SERIES_SELECT = statement(
    "SELECT a.series_id, s.metric, s.node_id, s.dims, a.interval_start, a.data FROM watch_anomalies a JOIN watch_series s ON s.series_id = a.series_id WHERE a.incident_id = ? ORDER BY a.series_id, a.interval_start"
)
_INCIDENT_SERIES_SELECT_2 = statement(
    "SELECT series_id, accepted_by FROM watch_levels WHERE incident_id = ? AND how = 'accepted'"
)
_CHECK_OPEN_SELECT = statement(
    "SELECT proposal_id, status FROM repair_proposals WHERE incident_id = ? AND target = ?"
)
_ACCEPT_LEVEL_UPDATE = statement("UPDATE incidents SET updated_at = ? WHERE incident_id = ?")

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: The status of an incident whose every series' new level was accepted.
ACCEPTED = "accepted"
#: The audit-log kind of the decision.
KIND = "accept-level"


@dataclass(frozen=True)
class SeriesLevel:
    """One series of an incident and where its fault started."""

    series_id: int
    metric: str
    node: str
    dims: dict[str, Any]
    since: date
    first_interval: date
    accepted_by: str | None = None  # already accepted in this incident: by whom

    @property
    def label(self) -> str:
        from splice.watch.history import dims_label

        return dims_label(self.dims)

    def as_dict(self) -> dict[str, Any]:
        return {"series_id": self.series_id, "metric": self.metric, "node": self.node,
                "series": self.label, "dims": self.dims, "since": self.since.isoformat(),
                "first_interval": self.first_interval.isoformat(),
                "accepted_by": self.accepted_by}  # fmt: skip


@dataclass
class AcceptResult:
    """What an accept-level decision did."""

    incident_id: str
    status: str  # the incident's status after it: "accepted", or "open" (some series remain)
    accepted: list[dict[str, Any]]  # the series whose level was accepted now
    remaining: list[dict[str, Any]]  # the incident's series still without one
    principal: dict[str, Any]
    note: str | None
    at: float
    audit_seq: int
    resolution: str | None = None
    origin: str | None = None
    domain: str | None = None
    levels: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def how_authenticated(principal: Principal | dict[str, Any]) -> str:
    """Who decided and how they were authenticated, in words.

    >>> how_authenticated(Principal.of("maria", kind="person", auth="api-key", credential="k1"))
    'maria (person, signed in with an API key k1)'
    """
    rec = principal.record() if isinstance(principal, Principal) else principal
    how = AUTH_WORDS.get(str(rec.get("auth")), str(rec.get("auth")))
    cred = f" {rec['credential']}" if rec.get("credential") else ""
    return f"{rec.get('name')} ({rec.get('kind')}, {how}{cred})"


# -- the series of an incident ----------------------------------------------------------------
def incident_series(conn: Any, incident_id: str) -> list[SeriesLevel]:
    """Every series with an anomaly in the incident, with where its fault started and whether
    its level was accepted in this incident already (metric, then series order)."""
    rows = conn.execute(
        _INCIDENT_SERIES_SELECT,
        (incident_id,),
    ).fetchall()
    done = {
        int(sid): who
        for sid, who in conn.execute(
            _INCIDENT_SERIES_SELECT_2,
            (incident_id,),
        )
    }
    found: dict[int, dict[str, Any]] = {}
    for sid, metric, node, dims, interval, data in rows:
        rec = found.setdefault(int(sid), {"metric": metric, "node": node,
                                          "dims": json.loads(dims), "intervals": [],
                                          "sinces": []})  # fmt: skip
        rec["intervals"].append(date.fromisoformat(interval))
        since = (json.loads(data) if data else {}).get("since")
        if since:
            rec["sinces"].append(date.fromisoformat(str(since)[:10]))
    out = [
        SeriesLevel(
            sid,
            r["metric"],
            r["node"],
            r["dims"],
            min(r["sinces"]) if r["sinces"] else min(r["intervals"]),
            min(r["intervals"]),
            done.get(sid),
        )  # fmt: skip
        for sid, r in found.items()
    ]
    return sorted(out, key=lambda s: (s.metric, json.dumps(s.dims, sort_keys=True)))


def parse_selector(text: str) -> dict[str, str] | None:
    """``K=V[, K=V...]`` as {key: value} (keys and values compared case-folded); None when the
    text names a metric instead (no ``=``)."""
    if "=" not in text:
        return None
    out: dict[str, str] = {}
    for term in text.split(","):
        if not term.strip():
            continue
        key, sep, value = term.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(
                f"--series {text!r}: {term.strip()!r} is not KEY=VALUE.",
                fix="name a series by its dimensions, e.g. --series currency=JPY, or a metric by "
                "its name",
            )
        out[name_key(key)] = normalise_name(value).casefold()
    return out


def _matches(s: SeriesLevel, text: str) -> bool:
    wanted = parse_selector(text)
    if wanted is None:
        return name_key(s.metric) == name_key(text)
    dims = {name_key(k): normalise_name(str(v)).casefold() for k, v in s.dims.items()}
    return all(dims.get(k) == v for k, v in wanted.items())


def select_series(all_series: list[SeriesLevel], selectors: list[str] | None) -> list[SeriesLevel]:
    """The incident's series that ``selectors`` name (all of them without selectors); a selector
    naming none of them is an InputError listing what there is."""
    if not selectors:
        return list(all_series)
    chosen: list[SeriesLevel] = []
    for text in selectors:
        hit = [s for s in all_series if _matches(s, text)]
        if not hit:
            labels = sorted({s.label for s in all_series if s.label != "(all)"})
            metrics = sorted({s.metric for s in all_series})
            raise InputError(
                f"--series {text!r} names no series of this incident.",
                fix="name one of its series ("
                + (
                    ", ".join(labels[:8]) + (", ..." if len(labels) > 8 else "")
                    or "none by dimension"
                )
                + f") or one of its metrics ({', '.join(metrics[:6])})",
            )
        chosen += [s for s in hit if s not in chosen]
    return chosen


# -- the rules ------------------------------------------------------------------------------------
def _origin_domain(ws: Workspace, inc: Any) -> Any:
    from splice.approvals.domains import domain_for

    if not inc.origin_node:
        raise ApprovalError(
            f"incident {inc.incident_id} has no origin node, so no domain owns it and nobody "
            "may accept its level.",
            fix=f"splice watch refreshes its diagnosis; splice incident show {inc.incident_id}",
        )
    dom = domain_for(ws.graph(), ws.config, inc.origin_node)
    if dom is None:
        raise ApprovalError(
            f"no [[domains]] entry covers {inc.origin_node} (where {inc.incident_id} starts), "
            "so nobody may accept its level.",
            fix=f"add a [[domains]] whose nodes select {inc.origin_node}, with named owners",
        )
    return dom


def _check_open(conn: Any, inc: Any, target: str) -> None:
    """Refuse an incident that is not open, or whose repair is under way."""
    from splice.repair.flow import ACTIVE

    if inc.status == ACCEPTED:
        raise ApprovalError(
            f"{inc.incident_id} is closed already: "
            + (inc.resolution or "its new level was accepted") + ". A level is accepted once.",
            fix=f"splice incident show {inc.incident_id} shows who accepted it and when",
        )  # fmt: skip
    if inc.status != "open":
        raise ApprovalError(
            f"incident {inc.incident_id} is {inc.status}"
            + (f" ({inc.resolution})" if inc.resolution else "")
            + "; only an open incident's level is accepted.",
            fix="splice incidents lists the open ones",
        )
    rows = conn.execute(
        _CHECK_OPEN_SELECT,
        (inc.incident_id, target),
    ).fetchall()
    busy = [(pid, st) for pid, st in rows if st in ACTIVE]
    if busy:
        pid, st = busy[0]
        raise ApprovalError(
            f"incident {inc.incident_id} has repair {pid} under way ({st}); a repair and a new "
            "normal exclude each other.",
            fix=f"reject or withdraw it first (splice reject {pid} --reason ...), then accept "
            "the level"
            if st != "applying"
            else f"wait for {pid} to finish (splice receipt {pid})",
        )


def _settle_repairs(ws: Workspace, now: float | None) -> None:
    """An apply killed mid-way is recovered and unanswered requests expire first, so that only a
    repair really under way holds the decision back."""
    from splice.repair.approvals import refresh_all
    from splice.repair.recovery import recover_interrupted_applies

    recover_interrupted_applies(ws)
    refresh_all(ws, now=now)


def incident_of_target(ws: Workspace, incident_id: str) -> Any:
    """The incident, when it belongs to the workspace's target (a decision on another target's
    incident is refused, naming the flag)."""
    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
    if inc.target != ws.target:
        raise InputError(
            f"incident {inc.incident_id} belongs to target {inc.target}, not {ws.target}.",
            fix=f"pass --target {inc.target}",
        )
    return inc


def check_may_accept(
    ws: Workspace, inc: Any, name: str, *, what: str = "accept the new level of",
    command: str = "incident accept-level",
) -> Any:  # fmt: skip
    """The domain whose owner ``name`` must be, after checking they are one (``what`` and
    ``command``: the decision, in the words of the refusal: accepting a level, closing)."""
    from splice.approvals.rules import as_owner, is_owner

    dom = _origin_domain(ws, inc)
    if not is_owner(name, dom):
        raise ApprovalError(
            f"{name} may not {what} {inc.incident_id}: only an owner of domain "
            f"{dom.name} (where it starts, {inc.origin_node}) may; its owners are "
            f"{', '.join(dom.owners)}.",
            fix=f"one of them runs splice {command} {inc.incident_id}"
            f"{as_owner(ws, dom)} "
            "(or add the owner to [[domains]] in splice.toml)",
        )
    return dom


def options(ws: Workspace, incident_id: str, principal: Principal) -> dict[str, str | None]:
    """``{"accept_level": None}`` when ``principal`` may accept the incident's new level now,
    else why not, in words (the rules :func:`accept_level` enforces, checked without writing).
    For showing the button only: the decision checks again."""
    from splice.approvals.access import require
    from splice.approvals.rules import refuse_during_stop
    from splice.errors import SpliceError
    from splice.watch.incidents import get_incident

    try:
        name = require(principal, KIND, ws.config.policy, where=ws.config.serve.resource_url).name
        inc = get_incident(ws.state.conn, incident_id)
        check_may_accept(ws, inc, name)
        refuse_during_stop(ws, "accepted")
        _check_open(ws.state.conn, inc, ws.target)
        if not [s for s in incident_series(ws.state.conn, inc.incident_id) if not s.accepted_by]:
            raise ApprovalError(f"every series of {inc.incident_id} has its level accepted.")
        return {"accept_level": None}
    except SpliceError as e:
        return {"accept_level": e.message}


# -- the decision ---------------------------------------------------------------------------------
def accept_level(
    ws: Workspace,
    incident_id: str,
    *,
    principal: Principal,
    note: str | None = None,
    series: list[str] | None = None,
    now: float | None = None,
) -> AcceptResult:
    """``splice incident accept-level``: a named owner of the origin's domain accepts the new
    level of the incident's series (``series``: only these), in one transaction (see module)."""
    from splice.approvals import auditlog
    from splice.approvals.access import require
    from splice.approvals.rules import refuse_during_stop
    from splice.watch.incidents import get_incident, resolve_incident
    from splice.watch.levels import record_levels

    name = require(principal, KIND, ws.config.policy, where=ws.config.serve.resource_url).name
    note = (note or "").strip() or None
    inc = incident_of_target(ws, incident_id)
    dom = check_may_accept(ws, inc, name)
    refuse_during_stop(ws, "accepted")  # a decision like every other: none during a stop
    _settle_repairs(ws, now)
    at = time.time() if now is None else float(now)
    with ws.state.transaction() as conn:  # BEGIN IMMEDIATE: read again, decide, write
        refuse_during_stop(ws, "accepted")  # a stop that began meanwhile
        inc = get_incident(conn, inc.incident_id)
        _check_open(conn, inc, ws.target)
        every = incident_series(conn, inc.incident_id)
        chosen = select_series(every, series)
        todo = [s for s in chosen if not s.accepted_by]
        if not todo:
            who = sorted({str(s.accepted_by) for s in chosen})
            raise ApprovalError(
                f"the level of {'that series' if len(chosen) == 1 else 'those series'} of "
                f"{inc.incident_id} was already accepted (by {', '.join(who)}); it cannot be "
                "accepted twice.",
                fix=f"splice incident show {inc.incident_id} lists what remains open",
            )
        record_levels(conn, ws.target, inc.incident_id, {s.series_id: s.since for s in todo},
                      accepted_by=name, how="accepted", principal=principal, note=note,
                      now=at)  # fmt: skip
        taken = {s.series_id for s in todo}
        remaining = [s for s in every if not s.accepted_by and s.series_id not in taken]
        status, resolution = "open", None
        if not remaining:
            status = ACCEPTED
            start = min(s.since for s in every).isoformat()
            resolution = (
                f"new level accepted by {how_authenticated(principal)}: {len(every)} series "
                f"judged against their new level from {start}" + (f"; {note}" if note else "")
            )
            resolve_incident(conn, inc.incident_id, resolution, status=ACCEPTED, now=at)
        else:
            conn.execute(_ACCEPT_LEVEL_UPDATE, (at, inc.incident_id))
        entry = auditlog.append(
            conn, kind=KIND, principal=principal, proposal_id=None, at=at,
            payload={"incident_id": inc.incident_id, "target": ws.target,
                     "origin": inc.origin_node, "domain": dom.name, "comment": note,
                     "status": status, "remaining": len(remaining),
                     "series": [{"series_id": s.series_id, "metric": s.metric,
                                 "series": s.label, "since": s.since.isoformat()}
                                for s in todo]},
        )  # fmt: skip
    return AcceptResult(
        incident_id=inc.incident_id,
        status=status,
        accepted=[s.as_dict() for s in todo],
        remaining=[s.as_dict() for s in remaining],
        principal=principal.record(),
        note=note,
        at=at,
        audit_seq=entry.seq,
        resolution=resolution,
        origin=inc.origin_node,
        domain=dom.name,
        levels=len(todo),
    )
