"""Access grants on Spark: none. Splice reaches Spark through Spark Connect, which has no users
or grants it could hand out, so read access cannot be granted relation by relation. Every
function refuses; :func:`splice.warehouse.engines.capabilities` says so first
(``grants=False``).

>>> revoke_statements("r")
Traceback (most recent call last):
...
splice.errors.GrantError: the warehouse is spark, which has no users or grants: read access cannot be granted relation by relation.
"""

from __future__ import annotations

from typing import Any, NoReturn

from splice.errors import GrantError


def refused() -> GrantError:
    """Why no grant can be made here, and what to do instead."""
    return GrantError(
        "the warehouse is spark, which has no users or grants: read access cannot be granted "
        "relation by relation.",
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
