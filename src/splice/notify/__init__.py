"""Notifications: ``[[notify]]`` channels (a webhook with a generic JSON body or Slack's format,
and email over SMTP) told what happened to incidents, proposals and the org-wide stop.

Notifications are derived, not hooked: every decision is already in the hash-chained audit log
(:mod:`splice.approvals.auditlog`) and every incident is a row of ``incidents``.  :func:`deliver`
(:mod:`splice.notify.outbox`) reads what is new since its cursor, queues one delivery per
(event, channel) in the state, and sends what is due; a failed send is retried with backoff by
later calls and given up after ``max_attempts``.  Nothing here ever fails a decision.
"""
