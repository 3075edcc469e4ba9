"""Splice as a library: the one surface every way in (the CLI, the MCP tools, the web page,
``splice serve``, the demo) calls, and nothing below imports back (:mod:`splice.layers`,
checked by ``tests/test_layers.py``). Callers write ``from splice import api`` and
``api.NAME``; each operation takes an open Workspace (:func:`open_workspace`).

Most names are the lower layers' own functions, re-exported as they are: :data:`_EXPORTS` maps
each public name to ``"module:attribute"`` and the module is imported on first use, so
``import splice.api`` stays light (no dbt, SQLMesh or warehouse driver). The functions written
here are the real compositions: :mod:`splice.api.session` (a session's start: access due to
end revoked; the hub, keys and principals), :mod:`splice.api.core` (a run that recovers killed
applies and grants access again, a plan that checks the targets first, an incident with its
orchestrator's runs), :mod:`splice.api.repair` (proposals with the owners asked, an apply that
keeps access), :mod:`splice.api.grants`, :mod:`splice.api.migrate`, :mod:`splice.api.reads`
and :mod:`splice.api.local`; :mod:`splice.api.served` is the hub a long-lived server answers
through. ``tests/api/test_exported_members.py`` holds :data:`__all__` to this table.

>>> from splice import api
>>> api.redact_url("postgresql://me:secret@db:5432/wh")
'postgresql://me@db:5432/wh'
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from splice.api.core import (
        evidence,
        graph_view,
        incident,
        ingest,
        list_incidents,
        list_nodes,
        list_runs,
        plan,
        plan_checks,
        queue_ingestion,
        run,
        run_journal,
        run_plan,
        stop_local_orchestrators,
    )
    from splice.api.grants import (
        access_grant,
        access_options,
        approve_access,
        end_due_access,
        keep_access,
        list_access,
        reject_access,
        request_access,
        revoke_access,
    )
    from splice.api.local import local_servers, start_local_bi, stop_local_servers
    from splice.api.migrate import (
        migrate_approve,
        migrate_check,
        migrate_complete,
        migrate_plan,
        migrate_run,
        migrate_status,
    )
    from splice.api.operator import (
        operator_for_hub,
        operator_for_root,
        operator_status,
        receive_lineage,
        schedule_run,
    )
    from splice.api.reads import detector_words, housekeeping, node_domains
    from splice.api.repair import (
        active_stop,
        apply,
        audit_entries,
        create_key,
        decision_options,
        incident_levels,
        list_keys,
        list_proposals,
        proposal,
        resume,
        revoke_key,
        stop,
    )
    from splice.api.session import (
        agent_principal,
        authenticate_key,
        authenticator,
        cli_principal,
        credential_active,
        hub,
        may_act,
        oidc_client,
        open_workspace,
        reconfirm_key,
        serve_settings,
        server_key,
        sign_as_server,
        workspace_config,
    )
    from splice.approvals.witness_admin import accept_divergence, receipt_standing, rewitness
    from splice.approvals.witness_admin import reanchor as reanchor_audit_log
    from splice.approvals.witness_admin import verify_workspace as verify_audit_log
    from splice.bi.superset_seed import seed_demo as seed_superset_demo
    from splice.doctor.checks import exit_status as doctor_exit_status
    from splice.doctor.service import doctor, project_dialects, warehouses
    from splice.lineage.query import column_lineage as lineage
    from splice.lineage.query import lineage_chain
    from splice.lineage.query import openlineage_for as openlineage_facets
    from splice.notify.outbox import deliver as notify_pending
    from splice.notify.outbox import send_test as notify_test
    from splice.notify.outbox import status as notify_status
    from splice.operator.service import activity as operator_activity
    from splice.plan.planner import explain
    from splice.plan.planner import summary as plan_summary
    from splice.reads.connectors import dashboards, ingestion_jobs
    from splice.reads.graph_drawing import whole_graph as graph_drawing
    from splice.reads.incident_charts import incident_charts
    from splice.reads.incident_lineage import incident_lineage
    from splice.reads.neighbourhood import graph_summary, node_neighbourhood
    from splice.reads.node_sql import node_sql
    from splice.reads.nodes import node_details, search_nodes
    from splice.reads.quality import anomalies, default_monitors, metric_history, metrics
    from splice.repair.accept import accept_level
    from splice.repair.accept import options as incident_options
    from splice.repair.approvals import approval_status, approve, reject
    from splice.repair.close import close_incident, close_options
    from splice.repair.flow import propose, receipt
    from splice.repair.receipt import receipt_markdown
    from splice.repair.render import proposal_lines
    from splice.repair.reverify import verify_again
    from splice.repair.revert import undo
    from splice.repair.state_move import move_state
    from splice.review import review
    from splice.review.render import markdown as review_markdown
    from splice.review.render import text as review_text
    from splice.state.store import redact as redact_url
    from splice.warehouse.connect import ensure_local_server
    from splice.warehouse.postgres.local_server import LocalPostgres, free_port
    from splice.warehouse.spark.connect import SparkConnection
    from splice.warehouse.spark.connect import stop_client_sessions as stop_spark_sessions
    from splice.warehouse.spark.local_server import LocalSpark
    from splice.watch.panel import fmt as format_number
    from splice.watch.report import incident_lines
    from splice.watch.semantic import discover as semantic_metrics
    from splice.watch.service import watch
    from splice.workspace.core import Workspace

#: public name -> "module:attribute", imported on first use
_EXPORTS: dict[str, str] = {
    # -- The operator: schedules, what triggered each watch, the ladder's steps (compositions)
    "operator_for_hub": "splice.api.operator:operator_for_hub",
    "operator_for_root": "splice.api.operator:operator_for_root",
    "operator_status": "splice.api.operator:operator_status",
    "receive_lineage": "splice.api.operator:receive_lineage",
    "schedule_run": "splice.api.operator:schedule_run",
    "operator_activity": "splice.operator.service:activity",
    # -- Sessions: opening a workspace, the server's hub, who acts (compositions)
    "open_workspace": "splice.api.session:open_workspace",
    "workspace_config": "splice.api.session:workspace_config",
    "hub": "splice.api.session:hub",
    "serve_settings": "splice.api.session:serve_settings",
    "authenticator": "splice.api.session:authenticator",
    "oidc_client": "splice.api.session:oidc_client",
    "sign_as_server": "splice.api.session:sign_as_server",
    "server_key": "splice.api.session:server_key",
    "cli_principal": "splice.api.session:cli_principal",
    "agent_principal": "splice.api.session:agent_principal",
    "authenticate_key": "splice.api.session:authenticate_key",
    "reconfirm_key": "splice.api.session:reconfirm_key",
    "credential_active": "splice.api.session:credential_active",
    "may_act": "splice.api.session:may_act",
    # -- The workspace itself
    "Workspace": "splice.workspace.core:Workspace",
    # -- The graph and column lineage
    "list_nodes": "splice.api.core:list_nodes",
    "graph_view": "splice.api.core:graph_view",
    "lineage": "splice.lineage.query:column_lineage",
    "openlineage_facets": "splice.lineage.query:openlineage_for",
    "lineage_chain": "splice.lineage.query:lineage_chain",
    "doctor": "splice.doctor.service:doctor",
    "doctor_exit_status": "splice.doctor.checks:exit_status",
    "project_dialects": "splice.doctor.service:project_dialects",
    "warehouses": "splice.doctor.service:warehouses",
    # -- Plans and runs
    "plan": "splice.api.core:plan",
    "plan_checks": "splice.api.core:plan_checks",
    "run": "splice.api.core:run",
    "run_plan": "splice.api.core:run_plan",
    "ingest": "splice.api.core:ingest",
    "list_runs": "splice.api.core:list_runs",
    "run_journal": "splice.api.core:run_journal",
    "evidence": "splice.api.core:evidence",
    "queue_ingestion": "splice.api.core:queue_ingestion",
    "stop_local_orchestrators": "splice.api.core:stop_local_orchestrators",
    "explain": "splice.plan.planner:explain",
    "plan_summary": "splice.plan.planner:summary",
    # -- The watch and its incidents
    "list_incidents": "splice.api.core:list_incidents",
    "incident": "splice.api.core:incident",
    "watch": "splice.watch.service:watch",
    "incident_lines": "splice.watch.report:incident_lines",
    "format_number": "splice.watch.panel:fmt",
    # -- Repairs and decisions
    "list_proposals": "splice.api.repair:list_proposals",
    "proposal": "splice.api.repair:proposal",
    "apply": "splice.api.repair:apply",
    "incident_levels": "splice.api.repair:incident_levels",
    "stop": "splice.api.repair:stop",
    "resume": "splice.api.repair:resume",
    "decision_options": "splice.api.repair:decision_options",
    "active_stop": "splice.api.repair:active_stop",
    "audit_entries": "splice.api.repair:audit_entries",
    "propose": "splice.repair.flow:propose",
    "receipt": "splice.repair.flow:receipt",
    "approval_status": "splice.repair.approvals:approval_status",
    "approve": "splice.repair.approvals:approve",
    "reject": "splice.repair.approvals:reject",
    "verify_again": "splice.repair.reverify:verify_again",
    "undo": "splice.repair.revert:undo",
    "accept_level": "splice.repair.accept:accept_level",
    "close_incident": "splice.repair.close:close_incident",
    "close_options": "splice.repair.close:close_options",
    "incident_options": "splice.repair.accept:options",
    "proposal_lines": "splice.repair.render:proposal_lines",
    "receipt_markdown": "splice.repair.receipt:receipt_markdown",
    # -- API keys, the audit log and its witness, the state
    "create_key": "splice.api.repair:create_key",
    "list_keys": "splice.api.repair:list_keys",
    "revoke_key": "splice.api.repair:revoke_key",
    "verify_audit_log": "splice.approvals.witness_admin:verify_workspace",
    "accept_divergence": "splice.approvals.witness_admin:accept_divergence",
    "rewitness": "splice.approvals.witness_admin:rewitness",
    "reanchor_audit_log": "splice.approvals.witness_admin:reanchor",
    "receipt_standing": "splice.approvals.witness_admin:receipt_standing",
    "move_state": "splice.repair.state_move:move_state",
    "redact_url": "splice.state.store:redact",
    # -- Access grants
    "request_access": "splice.api.grants:request_access",
    "approve_access": "splice.api.grants:approve_access",
    "reject_access": "splice.api.grants:reject_access",
    "revoke_access": "splice.api.grants:revoke_access",
    "list_access": "splice.api.grants:list_access",
    "access_grant": "splice.api.grants:access_grant",
    "access_options": "splice.api.grants:access_options",
    "end_due_access": "splice.api.grants:end_due_access",
    "keep_access": "splice.api.grants:keep_access",
    # -- Migrations
    "migrate_plan": "splice.api.migrate:migrate_plan",
    "migrate_approve": "splice.api.migrate:migrate_approve",
    "migrate_run": "splice.api.migrate:migrate_run",
    "migrate_check": "splice.api.migrate:migrate_check",
    "migrate_complete": "splice.api.migrate:migrate_complete",
    "migrate_status": "splice.api.migrate:migrate_status",
    # -- Reads for people and agents, notifications
    "node_domains": "splice.api.reads:node_domains",
    "detector_words": "splice.api.reads:detector_words",
    "housekeeping": "splice.api.reads:housekeeping",
    "metrics": "splice.reads.quality:metrics",
    "metric_history": "splice.reads.quality:metric_history",
    "semantic_metrics": "splice.watch.semantic:discover",
    "anomalies": "splice.reads.quality:anomalies",
    "default_monitors": "splice.reads.quality:default_monitors",
    "ingestion_jobs": "splice.reads.connectors:ingestion_jobs",
    "dashboards": "splice.reads.connectors:dashboards",
    "search_nodes": "splice.reads.nodes:search_nodes",
    "node_details": "splice.reads.nodes:node_details",
    "node_sql": "splice.reads.node_sql:node_sql",
    "node_neighbourhood": "splice.reads.neighbourhood:node_neighbourhood",
    "graph_summary": "splice.reads.neighbourhood:graph_summary",
    "graph_drawing": "splice.reads.graph_drawing:whole_graph",
    "incident_charts": "splice.reads.incident_charts:incident_charts",
    "incident_lineage": "splice.reads.incident_lineage:incident_lineage",
    "notify_pending": "splice.notify.outbox:deliver",
    "notify_status": "splice.notify.outbox:status",
    "notify_test": "splice.notify.outbox:send_test",
    # -- Pull-request review
    "review": "splice.review:review",
    "review_markdown": "splice.review.render:markdown",
    "review_text": "splice.review.render:text",
    # -- The servers Splice starts on this machine (splice local; the demo's throwaway ones)
    "local_servers": "splice.api.local:local_servers",
    "stop_local_servers": "splice.api.local:stop_local_servers",
    "start_local_bi": "splice.api.local:start_local_bi",
    "seed_superset_demo": "splice.bi.superset_seed:seed_demo",
    "ensure_local_server": "splice.warehouse.connect:ensure_local_server",
    "LocalPostgres": "splice.warehouse.postgres.local_server:LocalPostgres",
    "LocalSpark": "splice.warehouse.spark.local_server:LocalSpark",
    "free_port": "splice.warehouse.postgres.local_server:free_port",
    "SparkConnection": "splice.warehouse.spark.connect:SparkConnection",
    "stop_spark_sessions": "splice.warehouse.spark.connect:stop_client_sessions",
}

__all__ = [
    "accept_divergence",
    "accept_level",
    "access_grant",
    "access_options",
    "active_stop",
    "agent_principal",
    "anomalies",
    "apply",
    "approval_status",
    "approve",
    "approve_access",
    "audit_entries",
    "authenticate_key",
    "authenticator",
    "cli_principal",
    "close_incident",
    "close_options",
    "create_key",
    "credential_active",
    "dashboards",
    "decision_options",
    "default_monitors",
    "detector_words",
    "doctor",
    "doctor_exit_status",
    "end_due_access",
    "ensure_local_server",
    "evidence",
    "explain",
    "format_number",
    "free_port",
    "graph_drawing",
    "graph_summary",
    "graph_view",
    "housekeeping",
    "hub",
    "incident",
    "incident_charts",
    "incident_levels",
    "incident_lineage",
    "incident_lines",
    "incident_options",
    "ingest",
    "ingestion_jobs",
    "keep_access",
    "lineage",
    "lineage_chain",
    "list_access",
    "list_incidents",
    "list_keys",
    "list_nodes",
    "list_proposals",
    "list_runs",
    "local_servers",
    "LocalPostgres",
    "LocalSpark",
    "may_act",
    "metric_history",
    "metrics",
    "migrate_approve",
    "migrate_check",
    "migrate_complete",
    "migrate_plan",
    "migrate_run",
    "migrate_status",
    "move_state",
    "node_details",
    "node_domains",
    "node_neighbourhood",
    "node_sql",
    "notify_pending",
    "notify_status",
    "notify_test",
    "oidc_client",
    "open_workspace",
    "openlineage_facets",
    "operator_activity",
    "operator_for_hub",
    "operator_for_root",
    "operator_status",
    "plan",
    "plan_checks",
    "plan_summary",
    "project_dialects",
    "proposal",
    "proposal_lines",
    "propose",
    "queue_ingestion",
    "reanchor_audit_log",
    "receipt",
    "receipt_markdown",
    "receipt_standing",
    "receive_lineage",
    "reconfirm_key",
    "redact_url",
    "reject",
    "reject_access",
    "request_access",
    "resume",
    "review",
    "review_markdown",
    "review_text",
    "revoke_access",
    "revoke_key",
    "rewitness",
    "run",
    "run_journal",
    "run_plan",
    "schedule_run",
    "search_nodes",
    "seed_superset_demo",
    "semantic_metrics",
    "serve_settings",
    "server_key",
    "sign_as_server",
    "SparkConnection",
    "start_local_bi",
    "stop",
    "stop_local_orchestrators",
    "stop_local_servers",
    "stop_spark_sessions",
    "undo",
    "verify_again",
    "verify_audit_log",
    "warehouses",
    "watch",
    "Workspace",
    "workspace_config",
]


def __getattr__(name: str) -> _typing.Any:
    """The exported ``name``, imported from its module on first use (then kept here)."""
    try:
        module, attr = _EXPORTS[name].split(":")
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(_importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
