"""Scoped, time-boxed read access: requested, approved by a domain's owner, granted on the
warehouse, revoked when the time is up (see :mod:`splice.grants.service`)."""

from splice.grants.service import (
    approve,
    asked,
    due_count,
    end_due,
    refresh,
    reject,
    request,
    revoke,
)

__all__ = ["approve", "asked", "due_count", "end_due", "refresh", "reject", "request", "revoke"]
