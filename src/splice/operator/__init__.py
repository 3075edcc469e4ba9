"""The operator: ``splice serve`` running production between plans by itself.

Schedules (``[[schedule]]``) run on time; production moving (Splice's own runs, an
orchestrator's finished runs, OpenLineage events) triggers watches; when a watch opens or grows an
incident, each domain's autonomy level (L0-L4) decides what Splice does next, every step an
audit-log entry by the operator principal with the rule that allowed it.
"""
