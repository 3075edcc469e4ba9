"""Principals for tests: a person or an agent as the command line or a key would make them."""

from __future__ import annotations

from splice.principals import Principal


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
