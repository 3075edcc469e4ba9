"""OpenLineage run events for every run Splice makes, sent through openlineage-python's client.

A :class:`RunEmitter` listens to one run's journal (:attr:`splice.run.journal.Journal.listeners`;
:func:`splice.openlineage.settings.listener` makes one only when OpenLineage is configured) and
turns its events into OpenLineage run events:

- ``run_started`` / ``run_finished``: ``START`` and ``COMPLETE`` / ``FAIL`` / ``ABORT`` of the job
  ``splice.run.<target>`` (namespace ``OPENLINEAGE_NAMESPACE``, default ``splice``);
- ``node_started`` / ``node_finished`` of a model, seed, snapshot or ingestion job: ``START`` and
  ``COMPLETE`` / ``FAIL`` / ``ABORT`` of the job named by the node id, with a ``parent`` facet
  pointing at the run; inputs are the relations it reads, outputs the relations it writes, each
  output with its ``schema`` facet and, for a model, its ``columnLineage`` facet (Splice's
  column lineage of the models the run builds, worked out once as the run starts);
- tests and audits are not jobs of their own; a node skipped before it started sends nothing.

The events are built as the journal writes them and sent by one thread of the emitter, in
order, so a slow or dead endpoint never slows the run; at ``run_finished`` the emitter waits up
to :data:`FLUSH_SECONDS` for what is left, then drops it. Nothing here ever raises into the
run: a failure is logged (logger ``splice.openlineage``) and counted (:data:`STATS`, and the
emitter's own ``counts``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState

from splice.lineage.openlineage import PRODUCER
from splice.openlineage import facets

if TYPE_CHECKING:
    from splice.graph.model import Graph, Node
    from splice.lineage.types import ModelLineage
    from splice.workspace.core import Workspace

log = logging.getLogger("splice.openlineage")

#: How long the end of a run waits for events still being sent (seconds).
FLUSH_SECONDS = 10.0
#: held while a client is made: it writes OPENLINEAGE__TRANSPORT__* into os.environ, which is
#: put back as it was before another thread may look
_ENVIRON = threading.Lock()

#: Events sent, failed (the transport raised) and dropped (still queued when the wait ended),
#: for the whole process.
STATS: Counter[str] = Counter()

_NODE_STATES = {
    "success": RunState.COMPLETE,
    "noop": RunState.COMPLETE,
    "ephemeral": RunState.COMPLETE,
    "failed": RunState.FAIL,
    "error": RunState.FAIL,
    "interrupted": RunState.ABORT,
    "skipped": RunState.ABORT,
}
_RUN_STATES = {"success": RunState.COMPLETE, "failed": RunState.FAIL}


class JournalEvent(Protocol):
    """What the emitter reads of a journal event (:class:`splice.run.journal.RunEvent`)."""

    run_id: str
    ts: float
    kind: str
    node_id: str | None
    status: str | None
    duration: float | None
    rows: int | None
    data: dict[str, Any]


def make_client(workspace_file: Path | None = None) -> OpenLineageClient | None:
    """The OpenLineage client as its own configuration makes it (``OPENLINEAGE_CONFIG``,
    ``openlineage.yml``, ``OPENLINEAGE__*`` variables, ``OPENLINEAGE_URL``), or the workspace's
    ``workspace_file`` (the workspace's ``openlineage.yml``, passed when the client finds no
    file of its own: :func:`splice.openlineage.settings.workspace_config`). None when that ends in the
    client's no-op transport (``OPENLINEAGE_DISABLED``) or in its console fallback (nothing
    chose a transport).

    The client writes ``OPENLINEAGE__TRANSPORT__...`` variables into the environment for
    ``OPENLINEAGE_URL``; they are taken out again once it is made, so the process (a server,
    the next run) reads the environment it was given."""
    config: dict[str, Any] | None = None
    if workspace_file is not None:
        import yaml

        config = yaml.safe_load(workspace_file.read_text()) or None
    with _ENVIRON:  # two runs in one server build their clients one at a time
        before = {k: v for k, v in os.environ.items() if k.startswith("OPENLINEAGE")}
        try:
            client = OpenLineageClient(config=config)
        finally:
            for k in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
                if k not in before:
                    del os.environ[k]
            os.environ.update(before)
    kind = getattr(client.transport, "kind", None)
    chosen = (client.config.transport or {}).get("type")
    if kind == "noop" or (kind == "console" and chosen != "console"):
        with contextlib.suppress(Exception):
            client.close(0)
        return None
    return client


def emitter_for(
    ws: Workspace,
    run_id: str,
    *,
    job_namespace: str = "splice",
    workspace_file: Path | None = None,
) -> RunEmitter | None:
    """The emitter of run ``run_id`` in ``ws`` (its jobs in ``job_namespace``), or None when
    the client is not configured (or cannot be made: logged). ``workspace_file``: see
    :func:`make_client`."""
    try:
        client = make_client(workspace_file)
    except Exception as e:  # noqa: BLE001 - a bad OpenLineage config never stops a run
        log.warning("OpenLineage events are not sent: the client cannot be made (%s: %s)",
                    type(e).__name__, e)  # fmt: skip
        STATS["failed"] += 1
        return None
    if client is None:
        return None
    return RunEmitter(ws, run_id, client, job_namespace=job_namespace)


class RunEmitter:
    """The OpenLineage events of one run, as its journal writes them (call it with each
    journal event; it never raises)."""

    def __init__(
        self, ws: Workspace, run_id: str, client: Any, *, job_namespace: str = "splice"
    ) -> None:
        self.ws = ws
        self.run_id = run_id
        self.client = client
        self.namespace = job_namespace
        self.job_name = f"splice.run.{ws.target}"
        self.run_uuid = facets.run_uuid(run_id)
        self.dataset_namespace = facets.warehouse_namespace(
            ws.config.warehouse, ws.warehouse_path if ws.config.warehouse.type == "duckdb" else None
        )
        self.counts: Counter[str] = Counter()
        self.lineage: dict[str, ModelLineage] = {}
        self._started: dict[str, float] = {}  # node id -> when its START was sent
        self._run_started = False
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- the journal's side ---------------------------------------------------------------------
    def __call__(self, ev: JournalEvent) -> None:
        if ev.run_id != self.run_id or self._closed:
            return
        try:
            with self._lock:
                events = self.translate(ev)
            for event in events:
                self._send(event)
        except Exception as e:  # noqa: BLE001 - OpenLineage never fails a run
            self.counts["failed"] += 1
            STATS["failed"] += 1
            log.warning("OpenLineage: the %s event of run %s was not built (%s: %s)",
                        ev.kind, self.run_id, type(e).__name__, e)  # fmt: skip
        if ev.kind == "run_finished":
            self.close()

    def translate(self, ev: JournalEvent) -> list[RunEvent]:
        """The OpenLineage events one journal event becomes (none for most)."""
        if ev.kind == "run_started":
            self._run_started = True
            self._prepare_lineage(ev.data.get("segments") or [])
            return [self._run_event(RunState.START, ev.ts)]
        if ev.kind == "run_finished":
            state = _RUN_STATES.get(str(ev.status), RunState.ABORT)
            error = None
            if state is not RunState.COMPLETE:
                error = _run_error(ev.data)
            # a run that failed while it planned never started: its START goes first
            first = [] if self._run_started else [self._run_event(RunState.START, ev.ts)]
            return [*first, self._run_event(state, ev.ts, error=error)]
        if ev.kind not in ("node_started", "node_finished") or not ev.node_id:
            return []
        graph = self.graph
        node = graph.nodes.get(ev.node_id) if graph is not None else None
        kind = node.kind if node is not None else str(ev.data.get("kind") or "")
        if kind in facets.CHECK_KINDS:
            return []
        if ev.kind == "node_started":
            self._started[ev.node_id] = ev.ts
            return [self._node_event(RunState.START, ev.node_id, node, ev.ts)]
        state = _NODE_STATES.get(str(ev.status), RunState.OTHER)
        out: list[RunEvent] = []
        if ev.node_id not in self._started:
            if str(ev.status) in ("skipped", "interrupted"):
                return []  # never started: nothing ran
            began = ev.ts - (ev.duration or 0.0)
            self._started[ev.node_id] = began
            out.append(self._node_event(RunState.START, ev.node_id, node, began))
        message = ev.data.get("message") if state in (RunState.FAIL, RunState.ABORT) else None
        out.append(
            self._node_event(
                state,
                ev.node_id,
                node,
                ev.ts,
                rows=ev.rows,
                error=str(message) if message else None,
                complete=state is RunState.COMPLETE,
            )
        )
        return out

    # -- building -----------------------------------------------------------------------------
    @property
    def graph(self) -> Graph | None:
        try:
            return self.ws.graph()
        except Exception:  # noqa: BLE001 - without the graph, events carry no datasets
            return None

    def _prepare_lineage(self, segments: list[dict[str, Any]]) -> None:
        """Column lineage of the models the run may build, worked out once, as the run starts
        (in the run's own thread: the state's caches serve most of it)."""
        ids = {n for seg in segments for n in seg.get("node_ids") or []}
        graph = self.graph if ids else None  # a run with nothing to build loads no graph
        if graph is None:
            return
        wanted = {
            n
            for n in ids
            if n in graph.nodes
            and graph.nodes[n].kind in ("model", "snapshot")
            and graph.nodes[n].tool in ("dbt", "sqlmesh")
        }
        if not wanted:
            return
        t0 = time.perf_counter()
        try:
            from splice.lineage.service import workspace_lineage

            result = workspace_lineage(self.ws, only=wanted)  # the process's memo serves first
            self.lineage = {n: ml for n, ml in result.models.items() if n in wanted}
        except Exception as e:  # noqa: BLE001 - events go without column lineage
            log.warning("OpenLineage: no column lineage for run %s (%s: %s)",
                        self.run_id, type(e).__name__, e)  # fmt: skip
            self.counts["lineage_failed"] += 1
        log.debug("OpenLineage: column lineage of %d models in %.2f s", len(self.lineage),
                  time.perf_counter() - t0)  # fmt: skip

    def _run_event(self, state: RunState, ts: float, *, error: str | None = None) -> RunEvent:
        run_facets = facets.run_facets(self.run_id, self.ws.target)
        if error:
            run_facets["errorMessage"] = facets.error_facet(error)
        return RunEvent(
            eventType=state,
            eventTime=facets.event_time(ts),
            run=Run(runId=self.run_uuid, facets=run_facets),
            job=Job(
                namespace=self.namespace,
                name=self.job_name,
                facets={"jobType": facets.job_type(None)},
            ),
            producer=PRODUCER,
        )

    def _node_event(
        self,
        state: RunState,
        node_id: str,
        node: Node | None,
        ts: float,
        *,
        rows: int | None = None,
        error: str | None = None,
        complete: bool = False,
    ) -> RunEvent:
        run_facets = facets.run_facets(
            self.run_id, self.ws.target, tool=node.tool if node is not None else None
        )
        run_facets["parent"] = facets.parent_facet(self.run_uuid, self.namespace, self.job_name)
        if error:
            run_facets["errorMessage"] = facets.error_facet(error)
        inputs: list[Any] = []
        outputs: list[Any] = []
        if node is not None:
            inputs = [facets.input_dataset(r, self.dataset_namespace) for r in self._reads(node)]
            writes = node.all_writes
            for i, rel in enumerate(writes):
                outputs.append(
                    facets.output_dataset(
                        rel,
                        self.dataset_namespace,
                        columns=node.columns if i == 0 else None,
                        lineage=self.lineage.get(node_id) if complete and i == 0 else None,
                        rows=rows if complete and len(writes) == 1 else None,
                    )
                )
        return RunEvent(
            eventType=state,
            eventTime=facets.event_time(ts),
            run=Run(runId=facets.run_uuid(self.run_id, node_id), facets=run_facets),
            job=Job(
                namespace=self.namespace, name=node_id, facets={"jobType": facets.job_type(node)}
            ),
            inputs=inputs,
            outputs=outputs,
            producer=PRODUCER,
        )

    def _reads(self, node: Node) -> list[Any]:
        """The relations a node reads: its own list, else what its parents write."""
        if node.reads:
            return list(dict.fromkeys(node.reads))
        graph = self.graph
        if graph is None:
            return []
        rels = [r for p in sorted(graph.parents(node.id)) if p in graph.nodes
                for r in graph.nodes[p].all_writes]  # fmt: skip
        return list(dict.fromkeys(rels))

    # -- sending ------------------------------------------------------------------------------
    def _send(self, event: RunEvent) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"splice-openlineage-{self.run_id}", daemon=True
            )
            self._thread.start()
        self._queue.put(event)

    def _loop(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            if self._closed:
                self._count("dropped")
                continue
            try:
                self.client.emit(event)
                self._count("sent")
            except Exception as e:  # noqa: BLE001 - logged and counted, never raised
                self._count("failed")
                log.warning("OpenLineage: an event of run %s was not sent (%s: %s)",
                            self.run_id, type(e).__name__, e)  # fmt: skip

    def _count(self, what: str) -> None:
        self.counts[what] += 1
        STATS[what] += 1

    def close(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` (default :data:`FLUSH_SECONDS`) for the events still queued,
        drop what is left, and close the client. Idempotent."""
        if self._closed:
            return
        wait = FLUSH_SECONDS if timeout is None else timeout
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(wait)
            if self._thread.is_alive():
                left = self._queue.qsize()
                self._closed = True  # the thread drops what is still queued
                log.warning("OpenLineage: %d event(s) of run %s not sent within %.0f s; dropped",
                            left, self.run_id, wait)  # fmt: skip
        self._closed = True
        try:
            self.client.close(0)
        except Exception as e:  # noqa: BLE001 - closing never fails a run
            log.debug("OpenLineage: closing the client: %s", e)


def _run_error(summary: dict[str, Any]) -> str:
    """What a failed (or interrupted) run's ``errorMessage`` says.

    >>> _run_error({"failed_nodes": ["p:a"], "failed_checks": ["p:t"]})
    'failed nodes: p:a; failed checks: p:t'
    >>> _run_error({"error": "ConfigError: bad"})
    'ConfigError: bad'
    """
    parts = []
    for key in ("error", "note"):
        if summary.get(key):
            parts.append(str(summary[key]))
    for key, label in (("failed_nodes", "failed nodes"), ("failed_checks", "failed checks")):
        if summary.get(key):
            parts.append(f"{label}: {', '.join(map(str, summary[key]))}")
    return "; ".join(parts) or "the run did not succeed"
