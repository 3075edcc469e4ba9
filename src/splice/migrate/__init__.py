"""Warehouse migrations in approved waves, with parity checks (see :mod:`splice.migrate.service`)."""

from splice.migrate.service import (
    approve,
    check,
    complete,
    list_migrations,
    load,
    plan,
    receipt,
    run,
)

__all__ = ["approve", "check", "complete", "list_migrations", "load", "plan", "receipt", "run"]
