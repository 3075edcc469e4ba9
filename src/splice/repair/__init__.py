"""Repair behind approvals: an incident becomes one scoped proposal a named owner approves.

- :mod:`splice.repair.draft`: the narrowest repair an incident's evidence supports (no effects);
- :mod:`splice.repair.model`: a proposal as plain data, and the statuses it moves through;
- :mod:`splice.repair.store`: proposals and decisions in Splice's state, one transaction each;
- :mod:`splice.repair.undo`: the rows a repair rewrites, copied aside and tested to restore;
- :mod:`splice.repair.approvals`: who may approve or reject a proposal; its escalation and
  expiry (the rules every request follows, the domains and their owners, autonomy and the
  org-wide stop, and the audit log are :mod:`splice.approvals`, shared with grants and
  migrations);
- :mod:`splice.repair.apply_plan`: a proposal as a Plan the runner applies;
- :mod:`splice.repair.flow`: propose and apply, end to end;
- :mod:`splice.repair.verify`: the incident's metrics measured afresh after a repair;
- :mod:`splice.repair.recovery`: an apply killed midway restored from its undo;
- :mod:`splice.repair.revert`: ``splice undo``, an owner putting an applied repair's rows back
  (:mod:`splice.repair.remeasure`: its incident measured again);
- :mod:`splice.repair.receipt`: the receipt of a repair.

The undo's mechanics (:mod:`~splice.repair.undo`) sit below the decisions that use them
(recovery, approvals, revert), so no two modules import each other in a circle.
"""
