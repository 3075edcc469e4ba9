"""What an agent reads before it calls a tool, over a real stdio session on the demo with its
stale-rates incident (INC-1 open): every parameter of every tool has a description and
examples, and every example works on the demo (a node id names a node of its graph, a column
resolves, a selector selects, a metric and a series exist, an incident id opens the incident);
moments in results are ISO 8601; the agent is offered only the tools it may call; and a
refusal says what to do over MCP, not only on the command line."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from tests.mcp.mcp_support import ToolFailed, call, stdio_session

from splice.mcp.server import ALL_GROUPS, build_server

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def every_schema() -> dict[str, dict[str, Any]]:
    """Each tool's input schema, every group included (the decisions too)."""

    class _Hub:
        root = None

    server = build_server(_Hub(), ALL_GROUPS)
    tools = server._tool_manager.list_tools()
    return {t.name: t.parameters for t in tools}


def test_every_parameter_says_its_format_and_gives_an_example() -> None:
    missing = []
    for tool, schema in every_schema().items():
        for name, prop in schema.get("properties", {}).items():
            words = prop.get("description") or ""
            if len(words) < 20 or not prop.get("examples"):
                missing.append(f"{tool}.{name}")
            for ex in prop.get("examples") or []:
                pattern = prop.get("pattern") or next(
                    (a.get("pattern") for a in prop.get("anyOf", []) if a.get("pattern")), None
                )
                if pattern and ex is not None:
                    assert re.match(pattern, ex), (tool, name, ex, pattern)
    assert missing == []


Check = Callable[[Any, Any], Awaitable[None]]


async def _ok(s: Any, tool: str, **args: Any) -> Any:
    try:
        return await call(s, tool, **args)
    except ToolFailed as e:  # pragma: no cover - the failure is the test's message
        raise AssertionError(f"{tool}({args}) failed on the demo: {e}") from e


def checks(graph_kinds: set[str]) -> dict[str, Check]:
    """How to try an example of each parameter name on the demo (a name without a check here
    fails the test: a new parameter needs one)."""

    async def node_id(s: Any, ex: Any) -> None:
        assert (await _ok(s, "get_node", node_id=ex))["id"]

    async def selector(s: Any, ex: Any) -> None:
        if ex is not None:
            assert (await _ok(s, "get_graph", selector=ex))["nodes"], ex

    async def column(s: Any, ex: Any) -> None:
        out = await _ok(s, "get_column_lineage", column=ex, direction="up")
        assert json.dumps(out) != "{}", ex

    async def direction(s: Any, ex: Any) -> None:
        await _ok(s, "get_column_lineage", column="fx.daily_rates.rate_to_usd", direction=ex)

    async def depth(s: Any, ex: Any) -> None:
        await _ok(s, "get_column_lineage", column="fx.daily_rates.rate_to_usd", depth=ex)

    async def query(s: Any, ex: Any) -> None:
        assert (await _ok(s, "search_nodes", query=ex))["count"] >= 1, ex

    async def kind(s: Any, ex: Any) -> None:
        assert ex in graph_kinds, (ex, graph_kinds)

    async def limit(s: Any, ex: Any) -> None:
        assert 1 <= (await _ok(s, "search_nodes", query="gmv", limit=ex))["count"] <= ex

    async def incident_id(s: Any, ex: Any) -> None:
        assert (await _ok(s, "get_incident", incident_id=ex))["id"] == ex

    async def status(s: Any, ex: Any) -> None:
        if ex in ("open", "resolved", "accepted", "merged"):
            await _ok(s, "list_anomalies", status=ex)
        await _ok(s, "list_incidents", status=ex if ex != "merged" else "all")

    async def name(s: Any, ex: Any) -> None:
        assert (await _ok(s, "get_metric_history", name=ex))["series"], ex

    async def series(s: Any, ex: Any) -> None:
        for one in ex if isinstance(ex, list) else [ex]:
            out = await _ok(s, "get_metric_history", name="fx_rate", series=one)
            assert len(out["series"]) == 1, (one, out["series"])

    async def last(s: Any, ex: Any) -> None:
        out = await _ok(s, "get_metric_history", name="fx_rate", series="EUR", last=ex)
        assert 1 <= len(out["series"][0]["points"]) <= ex

    async def metric(s: Any, ex: Any) -> None:
        assert (await _ok(s, "list_anomalies", metric=ex))["count"] >= 1, ex

    async def since(s: Any, ex: Any) -> None:
        assert (await _ok(s, "list_anomalies", since=ex))["count"] >= 1, ex

    async def run_id(s: Any, ex: Any) -> None:
        assert (await _ok(s, "get_run_journal", run_id=ex))["events"], ex

    async def include_closed(s: Any, ex: Any) -> None:
        await _ok(s, "list_proposals", include_closed=ex)

    async def migration_id(s: Any, ex: Any) -> None:
        await _ok(s, "get_migrations", migration_id=ex)

    async def words(s: Any, ex: Any) -> None:
        assert isinstance(ex, str) and ex.strip()

    async def hours(s: Any, ex: Any) -> None:
        assert 0 < ex <= 168

    async def minted_id(s: Any, ex: Any) -> None:
        # PR-N and AG-N are minted by propose_repair and request_access (the first is N=1);
        # the pattern in the schema is checked by the test above
        assert re.fullmatch(r"(PR|AG)-1", ex), ex

    return {
        "node_id": node_id, "selector": selector, "column": column, "direction": direction,
        "depth": depth, "query": query, "kind": kind, "limit": limit,
        "incident_id": incident_id, "status": status, "name": name, "series": series,
        "last": last, "metric": metric, "since": since, "run_id": run_id,
        "include_closed": include_closed, "migration_id": migration_id, "comment": words,
        "reason": words, "why": words, "note": words, "grantee": words, "hours": hours,
        "proposal_id": minted_id, "grant_id": minted_id,
    }  # fmt: skip


def test_every_example_works_on_the_demo(stale_story: Any) -> None:
    ws = stale_story.build.workspace  # read-only: the tools below write nothing
    schemas = every_schema()

    async def main() -> list[str]:
        tried = []
        async with stdio_session(ws) as s:  # every group stdio serves
            graph = await _ok(s, "get_graph")
            kinds = {n["kind"] for n in graph["nodes"]}
            table = checks(kinds)
            for tool, schema in schemas.items():
                for pname, prop in schema.get("properties", {}).items():
                    assert pname in table, f"no check for {tool}.{pname}: add one"
                    for ex in prop.get("examples") or []:
                        await table[pname](s, ex)
                        tried.append(f"{tool}.{pname}={ex!r}")
        return tried

    tried = anyio.run(main)
    assert "get_node.node_id='pricing:fx.daily_rates'" in tried and len(tried) > 50


def test_moments_are_iso_8601_and_an_agent_is_offered_only_what_it_may_call(
    stale_story: Any,
) -> None:
    ws = stale_story.build.workspace

    async def main() -> tuple[set[str], dict[str, Any], str]:
        async with stdio_session(ws, client="claude-code") as s:
            names = {t.name for t in (await s.list_tools()).tools}
            out = {
                "runs": await _ok(s, "list_runs", limit=3),
                "incidents": await _ok(s, "list_incidents", status="all"),
                "incident": await _ok(s, "get_incident", incident_id="INC-1"),
                "journal": await _ok(s, "get_run_journal", run_id="latest"),
            }
            with pytest.raises(ToolFailed) as refused:
                await call(s, "accept_level", incident_id="INC-1")
        return names, out, str(refused.value)

    names, out, refusal = anyio.run(main)
    # reading and proposing, never deciding: accept_level is not offered to the stdio agent
    assert {"get_incident", "propose_repair", "request_access"} <= names
    assert "accept_level" not in names
    # every moment a result carries is ISO 8601 (UTC), never Unix seconds
    moments: list[tuple[str, Any]] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("at", "until") or k.endswith("_at"):
                    moments.append((k, x))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(out)
    assert {"started_at", "opened_at"} <= {k for k, _ in moments}
    assert [m for m in moments if m[1] is not None and not ISO.match(str(m[1]))] == []
    assert out["runs"]["runs"][0]["started_at"].endswith("Z")
    # the refusal says what to do over MCP: which tool, which principal
    assert "a person does" in refusal  # the rule, as the command line says it
    assert "Over MCP:" in refusal and "propose_repair" in refusal
    assert "approve scope" in refusal and "splice serve" in refusal
