"""Principals for tests: a person or an agent as the command line or a key would make them."""

from __future__ import annotations

from splice.support.principals import Principal


def person(name: str, *, auth: str = "cli-as", scopes: str | None = None) -> Principal:
    """A person with every scope (or ``scopes``), named as ``--as`` would name them."""
    return Principal.of(name, kind="person", auth=auth, scopes=scopes)


def agent(name: str = "splice-agent", *, scopes: str = "read,propose") -> Principal:
    """An agent (by default with the scopes an agent's key holds)."""
    return Principal.of(name, kind="agent", auth="api-key", scopes=scopes, credential="test-key")


def as_principal(who: str | Principal) -> Principal:
    """``splice-agent`` is an agent; any other name a person."""
    if isinstance(who, Principal):
        return who
    return agent(who) if who.strip() == "splice-agent" else person(who)


def approve_everywhere(ws: object, proposal_id: str, *people: str) -> object:
    """Approve ``proposal_id`` as each of ``people``, then as the first owner of every domain
    it touches that still waits (every domain a repair touches decides); the proposal."""
    from splice import api

    p = None
    for name in people:
        p = api.approve(ws, proposal_id, principal=person(name))  # type: ignore[arg-type]
    for waiting in api.approval_status(ws, p)["waiting_for"] if p is not None else []:  # type: ignore[arg-type]
        p = api.approve(ws, proposal_id, principal=person(waiting["owners"][0]))  # type: ignore[arg-type]
    return p
