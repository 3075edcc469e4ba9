"""Access grants on an engine without users or grants (DuckDB: a file; Spark: reached through
Spark Connect): read access cannot be granted relation by relation. Every function of the grants
contract refuses; :func:`splice.warehouse.engines.capabilities` says so first (``grants=False``),
with the engine's name, so these are reached only by a caller that skipped that check.

>>> revoke_statements("r")
Traceback (most recent call last):
...
splice.errors.GrantError: this warehouse has no users or grants: read access cannot be granted relation by relation.
"""

from __future__ import annotations

from typing import Any, NoReturn

from splice.errors import GrantError


def refused() -> GrantError:
    """Why no grant can be made here, and what to do instead."""
    return GrantError(
        "this warehouse has no users or grants: read access cannot be granted relation by "
        "relation.",
        fix='grant access on a warehouse with roles ([warehouse] type = "postgres"), or '
        "share a copy of the relations instead",
    )


def role_for(grant_id: str, prefix: str = "splice_") -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def grant_statements(role: str, grantee: str, relations: list[str]) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def reassert_statements(role: str, relations: list[str]) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def revoke_statements(role: str) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def role_exists(con: Any, name: str) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def missing(con: Any, relations: list[str]) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()


def run(con: Any, statements: list[str], what: str) -> NoReturn:
    """Refused: no grants here (:func:`refused`)."""
    raise refused()
