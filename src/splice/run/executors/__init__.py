"""Executors: one per tool, each running one segment through its tool.

- dbt (:mod:`.dbt`): ``dbtRunner`` (with the manifest Splice already parsed) ``build`` with
  exact node selection: one selector per node, derived from its unique_id and checked against
  dbt's own matcher, and ``--indirect-selection empty`` so that only the planned tests run.
- SQLMesh (:mod:`.sqlmesh`): the project's ``Context``: ``run`` for missing intervals with
  ``select_models`` and ``no_auto_upstream`` (only the planned models), or
  ``plan(..., auto_apply=True)`` when the environment has never been planned, did not finish
  its last plan, or a planned model's code differs from the environment's. Per-model outcomes
  come from SQLMesh's console protocol (:class:`.sqlmesh_console.SqlmeshRecorder`):
  ``start_snapshot_evaluation_progress`` / ``update_snapshot_evaluation_progress`` per batch,
  ``log_failed_models`` (the scheduler's ``NodeExecutionFailedError`` list, each with the
  cause: ``NodeAuditsErrors`` for blocking audits) and ``log_skipped_models``; after a plan,
  the environment's snapshots say what was promoted.
- an ingestion reload (:mod:`.ingestion`): a repair's ``reload`` step, the job run by the
  runner or orchestrator that owns it.

What they share (the job, the outcome, the progress sink, capabilities as data) is in
:mod:`.base`, which each tool's module imports; :mod:`.registry` maps a segment's format to
its executor class and is what the runner uses. Each executor declares what it can do as data
(:class:`.base.ExecutorCapabilities`); the scheduler reads those, never the class. All tool
chatter goes to the workspace log (splice.support.capture). A new tool: a module here with
one class (``format``, ``capabilities``, ``execute``), and one line in the registry.
"""
