"""The dbt executor: ``dbtRunner`` (with the manifest Splice already parsed) ``build`` with exact
node selection: one selector per node, derived from its unique_id and checked against dbt's own
matcher, and ``--indirect-selection empty`` so that only the planned tests run. When the plan
builds every model, seed, snapshot and test of the project, ``--resource-type`` names those
kinds instead of one ``--select`` per node: dbt matches each selector against every node,
which on 200 models costs about half a second."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.run.executors.base import (
    ExecutorCapabilities,
    SegmentJob,
    SegmentOutcome,
    Sink,
    short_message,
    without_jvm_trace,
)
from splice.run.report import CheckResult, NodeResult
from splice.support.capture import captured

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

DBT_CAPABILITIES = ExecutorCapabilities(
    exact_selection=True,
    in_process=True,
    owns_state=False,
    exclusive=True,
    check_kind="test",
    rows="adapter_response.rows_affected (dbt-duckdb does not report it)",
    on_failure=(
        "a model whose SQL fails keeps its previous relation: tables and views are built "
        "under a temporary name and renamed in one transaction, incrementals roll back the "
        "failed insert/merge; a model whose blocking test fails has already replaced its "
        "relation (dbt builds, then tests): Splice records it as failed and skips everything "
        "downstream"
    ),
    kinds=("model", "seed", "snapshot", "test"),
)

# == dbt ============================================================================================
_DBT_NODE = {"success": "success", "error": "failed", "skipped": "skipped", "no-op": "noop"}
_DBT_CHECK = {
    "pass": "pass",
    "fail": "fail",
    "warn": "warn",
    "error": "error",
    "skipped": "skipped",
}


class DbtExecutor:
    format = "dbt"
    capabilities = DBT_CAPABILITIES

    def __init__(self, ws: Workspace, project: str) -> None:
        self.ws = ws
        self.project = project

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome:
        from dbt.cli.main import dbtRunner

        from splice.providers.dbt import quiet_env, release_warehouse
        from splice.support.faults_env import locked_error

        prov = self.ws.provider(self.project)
        manifest = prov.manifest if prov.manifest is not None else prov._parse()
        # dbt's manifest.json of what is built, in Splice's target directory, as a parse by
        # hand leaves it (a reading command's parse leaves it out)
        prov.artifacts()
        by_uid = {str(n.meta["unique_id"]): n for n in job.nodes}
        select = (
            # every node of the kinds Splice builds: those kinds are the whole selection, exact
            # (exposures, the semantic layer, functions are left out) and costing no matching
            [a for t in sorted(BUILT_KINDS) for a in ("--resource-type", t)]
            if set(by_uid) == everything_built(manifest)
            else ["--select", *exact_selectors(manifest, list(by_uid))]
        )
        # no run_results.json / second manifest.json in Splice's private target directory: the
        # results are read from dbtRunner's return value and kept in the journal
        args = prov._args("build") + [
            *select,
            "--indirect-selection",
            "empty",
            "--no-write-json",
        ]
        defer = prov.defer_state
        if defer is not None:  # a review build: unselected refs resolve to prod (dbt's slim CI)
            args += ["--defer", "--state", str(defer)]
        if any(d.tool_view.get("full_refresh") for d in job.decisions.values()
               if d.node_id in {n.id for n in job.nodes}):  # fmt: skip
            args.append("--full-refresh")  # a repair of an incremental model: rebuilt whole
        started: dict[str, float] = {}

        said: list[str] = []  # dbt's own log lines (its console is off): kept for the journal

        def on_event(msg: Any) -> None:
            name = msg.info.name
            if str(getattr(msg.info, "level", "")) in ("info", "warn", "error"):
                text = str(getattr(msg.info, "msg", "") or "")
                if text.strip():
                    said.append(f"{time.strftime('%H:%M:%S', time.gmtime())}  {text}")
            if name not in ("NodeStart", "NodeFinished"):
                return
            uid = getattr(getattr(msg.data, "node_info", None), "unique_id", None)
            node = by_uid.get(str(uid))
            if node is None:
                return
            if name == "NodeStart":
                started[node.id] = time.perf_counter()
                sink.node_started(node.id)
            else:
                status = str(getattr(msg.data.node_info, "node_status", "") or "")
                t0 = started.get(node.id)
                sink.node_reported(
                    node.id, status, time.perf_counter() - t0 if t0 is not None else None
                )

        quiet_env()
        outcome = SegmentOutcome(method="dbt build")
        with captured(
            self.ws.log_path,
            f"dbt build ({self.project}, segment {job.segment.id})",
            cwd=self.ws.provider(self.project).ctx.project_path,  # as dbt runs by hand
        ) as out:
            try:
                res = dbtRunner(manifest=manifest, callbacks=[on_event]).invoke(args)
            finally:
                release_warehouse()
                outcome.log = "\n".join([*said, out.getvalue()])
        if isinstance(res.exception, KeyboardInterrupt):  # dbtRunner catches BaseException
            raise res.exception
        results = list(getattr(res.result, "results", None) or [])
        if res.exception is not None and not results:
            err = locked_error(res.exception, f"dbt project {self.project!r}")
            outcome.error = (
                err.message if err else f"dbt build failed: {short_message(str(res.exception))}"
            )
        seen: set[str] = set()
        for r in results:
            node = by_uid.get(str(r.node.unique_id))
            if node is None:  # exact selection means this never happens; say so if it does
                outcome.notes.append(f"dbt also ran {r.node.unique_id}, which was not planned")
                continue
            seen.add(node.id)
            status = str(getattr(r.status, "value", r.status))
            duration = float(r.execution_time) if r.execution_time is not None else None
            message = without_jvm_trace(str(r.message)) if r.message else None
            if node.kind == "test":
                cfg = getattr(r.node, "config", None)
                blocking = str(getattr(cfg, "severity", "ERROR") or "ERROR").upper() == "ERROR"
                outcome.checks[node.id] = CheckResult(
                    node_id=node.id,
                    project=self.project,
                    segment_id=job.segment.id,
                    of=list(node.depends_on),
                    status=_DBT_CHECK.get(status, "error"),
                    duration=duration,
                    failures=int(r.failures) if r.failures is not None else None,
                    message=message,
                    blocking=blocking,
                )
                continue
            rows = _rows(getattr(r, "adapter_response", None))
            outcome.nodes[node.id] = NodeResult(
                node_id=node.id,
                project=self.project,
                segment_id=job.segment.id,
                kind=node.kind,
                status=_DBT_NODE.get(status, "failed"),
                duration=duration,
                rows=rows,
                message=message if status != "success" else None,
            )
        missing = [n for n in job.nodes if n.id not in seen]
        for n in missing:
            if n.materialization == "ephemeral" and not outcome.error:
                # dbt never builds an ephemeral model: it inlines it into what reads it
                outcome.nodes[n.id] = NodeResult(
                    n.id,
                    self.project,
                    job.segment.id,
                    n.kind,
                    "ephemeral",
                    message="inlined by dbt into the models that read it",
                )
                continue
            why = outcome.error or "dbt reported no result for it"
            if n.kind == "test":
                outcome.checks[n.id] = CheckResult(
                    n.id, self.project, job.segment.id, list(n.depends_on), "error", message=why
                )
            else:
                outcome.nodes[n.id] = NodeResult(
                    n.id, self.project, job.segment.id, n.kind, "failed", message=why
                )
        # A blocking test that fails fails the node it tests (dbt itself skips the children).
        for chk in outcome.checks.values():
            if not (chk.failed and chk.blocking):
                continue
            for parent in chk.of:
                res_p = outcome.nodes.get(parent)
                if res_p is not None and res_p.status == "success":
                    res_p.status = "failed"
                    res_p.message = f"built, but its test {chk.node_id} failed"
                elif res_p is not None and res_p.status == "skipped":
                    # a unit test runs before its model: dbt skips the model when it fails
                    res_p.status = "failed"
                    res_p.message = f"not built: its unit test {chk.node_id} failed"
                if res_p is not None:
                    res_p.checks_failed.append(chk.node_id)
        return outcome


def _rows(adapter_response: Any) -> int | None:
    if not isinstance(adapter_response, dict):
        return None
    v = adapter_response.get("rows_affected")
    try:
        n = int(v) if v is not None else None
    except (TypeError, ValueError):
        return None
    return n if n is not None and n >= 0 else None


#: dbt resource types Splice hands to ``dbt build``: unit tests run as dbt build runs them,
#: before their model (a failing one fails the model, whose build dbt skips)
BUILT_KINDS = frozenset({"model", "seed", "snapshot", "test", "unit_test"})


def everything_built(manifest: Any) -> set[str]:
    """The unique ids of every node of the kinds Splice builds (``BUILT_KINDS``)."""
    out = {uid for uid, n in manifest.nodes.items() if n.resource_type.value in BUILT_KINDS}
    return out | set(getattr(manifest, "unit_tests", None) or {})


def exact_selectors(manifest: Any, unique_ids: list[str]) -> list[str]:
    """One dbt selector per unique id that selects that node and nothing else.

    ``fqn:`` of the node's full name is exact unless another node's fqn starts with it (a
    directory named like a model); then it is intersected with the node's resource type and
    its file (``path:``). Each candidate is checked with dbt's own fqn matcher.
    """
    from dbt.graph.selector_methods import is_selected_node

    everything = {
        **manifest.nodes,
        **manifest.sources,
        **(getattr(manifest, "unit_tests", None) or {}),
    }
    out: list[str] = []
    for uid in unique_ids:
        node = everything[uid]
        rtype = node.resource_type.value
        if rtype == "source":
            out.append(f"source:{node.source_name}.{node.name}")
            continue
        fqn = ".".join(node.fqn)
        clashes = [
            other
            for ouid, other in everything.items()
            if ouid != uid
            and getattr(other, "fqn", None)
            and is_selected_node(list(other.fqn), fqn, bool(getattr(other, "version", None)))
        ]
        if not clashes:
            out.append(f"fqn:{fqn}")
        elif all(o.resource_type.value != rtype for o in clashes):
            out.append(f"fqn:{fqn},resource_type:{rtype}")
        else:
            out.append(f"fqn:{fqn},resource_type:{rtype},path:{node.original_file_path}")
    return out
