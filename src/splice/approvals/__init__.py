"""Approvals shared by every request a person decides: a repair, read access, a migration.

- :mod:`splice.approvals.domains`: which domain (and owners) a node belongs to;
- :mod:`splice.approvals.access`: who may decide at all (a person, the scope, where);
- :mod:`splice.approvals.rules`: the lifecycle every request follows: routed to a domain's
  owners, never approved by whoever asked, escalated then expired, refused during a stop;
- :mod:`splice.approvals.autonomy`: autonomy levels per domain and the org-wide stop;
- :mod:`splice.approvals.auditlog`: the hash-chained log of every decision;
- :mod:`splice.approvals.witness_admin`: what only an owner does to the log's witness.

What each request is (its statuses, its store, what approving it does) lives in its own
package: :mod:`splice.repair`, :mod:`splice.grants`, :mod:`splice.migrate`; they all import
this one and none imports another's.
"""
