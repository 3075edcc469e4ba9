"""Committing what a run built as evidence, through :mod:`splice.plan.evidence` when present.

The planner owns the evidence tables (``record_attempt`` / ``record_build`` /
``record_failure``); this adapter is the one place the runner calls them. Without that module
nothing is recorded here (the run journal still has every outcome) and
:func:`evidence_available` says so.

What the runner records, per buildable node (models, seeds, snapshots; tests and audits are
journaled only: their outcome is recorded on the node they check):

- ``record_attempt`` when its segment starts (a kill leaves it ``running``: the next plan says
  "interrupted" and builds it again);
- ``record_build`` (a new version) when the tool built it, with the versions of its inputs;
- ``record_failure`` when it failed or a blocking check of it failed;
- nothing when the tool had nothing to do (SQLMesh: no missing intervals), so that readers in
  other projects do not rebuild for a version that did not move.

And per check that passed (or only warned) with a fingerprint in the plan, the digest of its
code (``record_checks``): a new or changed check then runs at the next plan on its own.
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULE: Any = None


def _evidence() -> Any:
    global _MODULE
    if _MODULE is None:
        try:
            _MODULE = importlib.import_module("splice.plan.evidence")
        except ModuleNotFoundError as e:
            if e.name != "splice.plan.evidence":
                raise
            return None
    return _MODULE


def evidence_available() -> bool:
    mod = _evidence()
    return mod is not None and hasattr(mod, "record_build") and hasattr(mod, "record_failure")


def commit_build(
    store: Any,
    *,
    target: str,
    node_id: str,
    fingerprint: dict[str, str],
    run_id: str,
    rows: int | None = None,
    intervals: list[list[int]] | None = None,
    upstream: list[str] | None = None,
) -> int | None:
    """Record a successful build; returns the node's evidence version (None without evidence)."""
    if not evidence_available():
        return None
    version = _evidence().record_build(
        store,
        target=target,
        node_id=node_id,
        fingerprint=fingerprint,
        run_id=run_id,
        rows=rows,
        intervals=intervals,
        upstream=upstream,
    )
    return int(version) if version is not None else None


def commit_failure(store: Any, *, target: str, node_id: str, run_id: str, error: str) -> None:
    if not evidence_available():
        return
    _evidence().record_failure(store, target=target, node_id=node_id, run_id=run_id, error=error)


def commit_attempt(store: Any, *, target: str, node_ids: list[str], run_id: str) -> None:
    """Mark nodes as being built by ``run_id`` (replaced by their build or failure)."""
    mod = _evidence()
    if not node_ids or mod is None or not hasattr(mod, "record_attempt"):
        return
    mod.record_attempt(store, target=target, node_ids=node_ids, run_id=run_id)


def commit_check(store: Any, *, target: str, node_id: str, fingerprint: dict[str, str]) -> None:
    """Record that a check passed with the code ``fingerprint`` describes."""
    mod = _evidence()
    if not fingerprint or mod is None or not hasattr(mod, "record_checks"):
        return
    from splice.plan.checks import check_digest

    mod.record_checks(store, target, {node_id: check_digest(fingerprint)})
