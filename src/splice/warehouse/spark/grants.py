"""Access grants on Spark: none (:mod:`splice.warehouse.no_grants`: every function refuses)."""

from splice.warehouse.no_grants import (
    grant_statements,
    missing,
    reassert_statements,
    refused,
    revoke_statements,
    role_exists,
    role_for,
    run,
)

__all__ = [
    "grant_statements",
    "missing",
    "reassert_statements",
    "refused",
    "revoke_statements",
    "role_exists",
    "role_for",
    "run",
]
