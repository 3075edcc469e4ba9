"""Splice's exceptions. Every error a user can cause is a :class:`SpliceError`.

The tree::

    SpliceError                    root; carries ``fix`` (how to fix it) and ``retry`` (can a retry help)
    ├── ConfigError                splice.toml is malformed, has an unknown key, or names a missing path
    ├── ProjectError               a dbt or SQLMesh project failed to load (parse / config error)
    ├── WarehouseError             the warehouse cannot be reached or is locked by another process
    ├── SelectorError              a selector matched nothing or is malformed (names the closest ids)
    ├── NodeNotFoundError          a node, column, incident, proposal or run named does not exist
    ├── InputError                 a value given on the command line is malformed or out of range
    ├── StateError                 Splice's own state is newer than this Splice, or corrupt
    ├── OrchestratorError          the orchestrator running an ingestion job (Dagster) cannot be
    │                              reached, does not know the job, or refused the run
    ├── BIError                    a BI tool ([[bi]]: Superset, ...) cannot be reached, refused the
    │                              sign-in, or answered what Splice cannot read
    ├── ReviewError                a pull-request review cannot start: not under git, an unknown
    │                              ref, a dirty tree, no review target
    ├── GrantError                 an access grant cannot be requested, issued or revoked: a
    │                              warehouse without grants, an unknown role, several domains
    ├── AccessError                the principal may not do this (a missing scope, an agent
    │                              deciding, a revoked key, [policy] sends it to the server)
    └── RepairError                a repair cannot be proposed, captured, applied or undone as asked
        └── ApprovalError          the approval rules refuse a decision (not an owner, self-approval,
                                   not pending, expired, an org-wide stop)

The CLI has one error boundary: a ``SpliceError`` becomes a red one-line message (plus the fix)
and exit status 2; the traceback is shown only with ``--debug``.
"""

from __future__ import annotations


class SpliceError(Exception):
    """Root of every error Splice raises on purpose.

    >>> e = SpliceError("splice.toml: unknown key 'foo'", fix="remove it")
    >>> str(e)
    "splice.toml: unknown key 'foo'"
    >>> e.fix
    'remove it'
    """

    exit_code = 2

    def __init__(self, message: str, *, fix: str | None = None, retry: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.retry = retry

    def one_line(self) -> str:
        text = self.message
        if self.fix:
            text += f" Fix: {self.fix}"
        if self.retry:
            text += " (a retry may help)"
        return text


class ConfigError(SpliceError):
    """splice.toml (or a file it points to) is wrong."""


class ProjectError(SpliceError):
    """A dbt or SQLMesh project could not be loaded."""


class WarehouseError(SpliceError):
    """The warehouse could not be opened or queried."""


class SelectorError(SpliceError):
    """A node selector is malformed or matched nothing."""


class NodeNotFoundError(SpliceError):
    """What was named does not exist: a node id or column in the graph, an incident, a
    proposal, a run in the journal (the web page answers 404)."""


class InputError(SpliceError):
    """A value given on the command line (or to the API) is malformed or out of range."""


class OrchestratorError(SpliceError):
    """The orchestrator that runs an ingestion job cannot be reached or refused what was asked."""


class BIError(SpliceError):
    """A BI tool of ``[[bi]]`` did not answer, refused the sign-in or a call."""


class ReviewError(SpliceError):
    """``splice review`` cannot compare the refs it was given (git, refs, the review target)."""


class GrantError(SpliceError):
    """An access grant cannot be requested, granted or revoked as asked."""


class AccessError(SpliceError):
    """The authenticated principal may not do what it asked (scope, kind, policy, revoked key)."""


class StateError(SpliceError):
    """Splice's state store cannot be used."""


class RepairError(SpliceError):
    """A repair cannot be proposed, captured, applied or undone as asked."""


class ApprovalError(RepairError):
    """The approval rules refuse a decision; the message names why and who could decide."""
