"""Repair behind approvals: an incident becomes one scoped proposal a named owner approves.

- :mod:`splice.repair.draft`: the narrowest repair an incident's evidence supports (no effects);
- :mod:`splice.repair.model`: a proposal as plain data, and the statuses it moves through;
- :mod:`splice.repair.store`: proposals and decisions in Splice's state, one transaction each;
- :mod:`splice.repair.undo`: the rows a repair rewrites, copied aside and tested to restore;
- :mod:`splice.repair.approvals`: who may approve or reject; escalation and expiry;
- :mod:`splice.repair.autonomy`: autonomy levels, the org-wide stop, the proven record;
- :mod:`splice.repair.domains`: which domain (and owners) a node belongs to;
- :mod:`splice.repair.apply_plan`: a proposal as a Plan the runner applies;
- :mod:`splice.repair.flow`: propose and apply, end to end;
- :mod:`splice.repair.verify`: the incident's metrics measured afresh after a repair;
- :mod:`splice.repair.receipt` and :mod:`splice.repair.auditlog`: the receipt and the
  hash-chained log of every decision.
"""
