"""The MCP server: Splice's tool groups on the official SDK's ``MCPServer``.

``splice mcp`` serves it over stdio (one agent, started by its client); ``splice serve``
mounts the same server at ``/mcp`` (streamable HTTP) for a team, with authentication.

Groups (``--group``; all reading and proposing groups by default):

========== ===========================================================================
catalog    search nodes, node details, the graph, column lineage up/down, doctor
incidents  incidents, an incident's diagnosis with blast radius and scope, run watch
quality    metrics, a metric's history with its baseline, anomalies, default monitors
connectors ingestion jobs and their loads, dashboards, runs and the run journal
repairs    propose a repair, proposals, a proposal, receipts, the audit log's state;
           request read access, access grants
decisions  approve, reject, apply, undo, stop, resume; approve, reject and revoke access:
           people only, on ``splice serve``
========== ===========================================================================
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import anyio

from splice.errors import InputError

#: Groups served when none is named: everything an agent may use (``decisions`` is added by
#: ``splice serve``, where callers are authenticated people or agents).
DEFAULT_GROUPS = ("catalog", "incidents", "quality", "connectors", "repairs")
ALL_GROUPS = (*DEFAULT_GROUPS, "decisions")

INSTRUCTIONS = (
    "Splice joins a team's dbt and SQLMesh projects, ingestion jobs and dashboards into one "
    "graph with column lineage, watches the numbers people care about, and diagnoses incidents "
    "across systems. To answer 'why is this number wrong': list_incidents, then get_incident "
    "for the diagnosis (cause, evidence, blast radius), get_column_lineage to follow a column "
    "to its dashboards, and propose_repair to ask the owners to approve the narrowest fix. "
    "Only a person, through splice serve, can approve or apply a repair."
)


def check_groups(
    groups: Iterable[str] | None, *, allowed: tuple[str, ...] = ALL_GROUPS
) -> list[str]:
    """The groups to serve, in a stable order; an unknown name is an InputError.

    >>> check_groups(["repairs", "catalog"])
    ['catalog', 'repairs']
    >>> check_groups(None) == list(DEFAULT_GROUPS)
    True
    """
    chosen = list(groups or DEFAULT_GROUPS)
    unknown = [g for g in chosen if g not in allowed]
    if unknown:
        raise InputError(
            f"unknown tool group {', '.join(map(repr, unknown))}.",
            fix=f"--group takes one of {', '.join(allowed)}",
        )
    return [g for g in allowed if g in chosen]


def tool_table() -> dict[str, list[Any]]:
    """Every group's tool functions (imports the SDK)."""
    from splice.mcp import tools_read, tools_repair

    return {**tools_read.GROUPS, **tools_repair.GROUPS}


def build_server(hub: Any, groups: Iterable[str] | None = None, **server_options: Any) -> Any:
    """An ``MCPServer`` with the chosen groups' tools, answering from ``hub``
    (:class:`splice.api.served.Hub`). ``server_options`` go to ``MCPServer`` (auth, token_verifier)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    from splice.mcp import tools_read, tools_repair
    from splice.version import __version__

    server = MCPServer(
        name="splice",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        **server_options,
    )
    server.splice_hub = hub  # type: ignore[attr-defined]
    table = tool_table()
    writes = tools_read.WRITES_STATE | tools_repair.WRITES_STATE
    state_lane = anyio.CapacityLimiter(1)
    chosen = check_groups(groups)
    for group in chosen:
        for fn in table[group]:
            name = fn.__name__
            destructive = name in tools_repair.DESTRUCTIVE
            quick = name in tools_read.FROM_STATE | tools_repair.FROM_STATE
            server.add_tool(
                in_lane(fn, state_lane) if quick else fn,
                name=name,
                title=name.replace("_", " ").capitalize(),
                annotations=ToolAnnotations(
                    read_only_hint=name not in writes and not destructive,
                    destructive_hint=destructive,
                    idempotent_hint=name not in writes and not destructive,
                    open_world_hint=False,
                ),
                meta={"group": group},
            )
    offer_only_callable(server)
    return server


#: The decision (:func:`splice.api.may_act`) each tool makes; a caller who may not make it at
#: all (an agent deciding, a key without the scope) is not offered the tool.
TOOL_ACTIONS = {
    "propose_repair": "propose",
    "request_access": "propose",
    "accept_level": "accept-level",
    "approve_proposal": "approve",
    "reject_proposal": "reject",
    "apply_proposal": "apply",
    "undo_proposal": "undo",
    "stop_repairs": "stop",
    "resume_repairs": "resume",
    "approve_access": "approve",
    "reject_access": "reject",
    "revoke_access": "reject",
}


def offered(name: str, who: Any) -> bool:
    """Whether the tool ``name`` is offered to the principal ``who`` (reads to everyone who
    may read; a decision only to those its rules allow to make it at all).

    >>> from splice.support.principals import Principal
    >>> bot = Principal.of("ci", kind="agent", auth="api-key", scopes="read,propose", credential="k")
    >>> [offered(t, bot) for t in ("get_incident", "propose_repair", "approve_proposal")]
    [True, True, False]
    """
    from splice import api

    action = TOOL_ACTIONS.get(name)
    return action is None or api.may_act(who, action) is None


def offer_only_callable(server: Any) -> None:
    """``tools/list`` answers each caller with only the tools it may call: the principal of the
    request's token on ``splice serve``, the stdio client (an agent that reads and proposes)
    otherwise. A tool not offered still refuses when called, saying what to do instead."""
    from splice.mcp.calls import caller

    listed = server.list_tools

    async def list_tools() -> list[Any]:
        who = caller()
        return [t for t in await listed() if who is None or offered(t.name, who)]

    server.list_tools = list_tools


def in_lane(fn: Any, lane: Any) -> Any:
    """``fn`` run in a worker thread under ``lane`` (a capacity limiter) instead of the SDK's
    pool of 40. The reads Splice answers from its state and the loaded graph are pure Python:
    with the interpreter's one lock, threads running them at once only take turns, and under
    50 concurrent callers that contention cost more CPU than the reads themselves (p95 ~250 ms
    against ~180 ms with one lane, bench/serve.py). Calls that wait on a warehouse, a tool or
    an orchestrator stay on the pool, so a slow one never holds these up."""
    import functools

    @functools.wraps(fn)
    async def laned(*args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs),
                                              limiter=lane)  # fmt: skip

    return laned


def serve_stdio(hub: Any, groups: Iterable[str] | None = None) -> None:
    """Serve over stdio until the client closes it. Nothing but the protocol reaches stdout:
    the tools' chatter is captured into the workspace's logs, Splice's own logging goes to
    ``.splice/logs/mcp.log``."""
    log_to_file(hub.root / ".splice" / "logs" / "mcp.log")
    server = build_server(hub, groups)
    server.run("stdio")


def log_to_file(path: Any) -> None:
    """Send the ``splice`` and ``mcp`` loggers to ``path`` (never to stdout)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("splice", "mcp"):
        lg = logging.getLogger(name)
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
        lg.propagate = False
