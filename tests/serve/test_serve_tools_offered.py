"""``splice serve``'s /mcp offers each caller only the tools it may call (an agent never sees a
decision, a reader never sees propose), and a refusal says what to do over MCP: which tool,
and which principal calls it. On a served copy of the stale-rates demo (INC-1 open)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.mcp.mcp_support import ToolFailed, call
from tests.serve.serve_support import Served, make_key, running_server, served_copy

pytestmark = pytest.mark.slow

DECISIONS = {
    "approve_proposal", "reject_proposal", "apply_proposal", "undo_proposal", "stop_repairs",
    "resume_repairs", "approve_access", "reject_access", "revoke_access", "accept_level",
}  # fmt: skip


@pytest.fixture(scope="module")
def served(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    ws, idp, port = served_copy(
        stale_story.build.workspace, tmp_path_factory.mktemp("offered") / "travel"
    )
    keys = {
        "agent": make_key(ws, "ci-agent", "agent", "read,propose"),
        "sam": make_key(ws, "sam", "person", "read,propose,approve"),
        "lee": make_key(ws, "lee", "person", "read,propose,approve"),
        "reader": make_key(ws, "rita", "person", "read"),
        "ana": make_key(ws, "ana", "person", "read,propose,approve"),  # owns no domain
    }
    with running_server(ws, port) as base:
        yield Served(ws, base, idp, keys)
    idp.close()


def test_each_caller_is_offered_only_the_tools_it_may_call(served: Served) -> None:
    async def names(token: str) -> set[str]:
        async with served.session(token) as s:
            return {t.name for t in (await s.list_tools()).tools}

    async def main() -> dict[str, set[str]]:
        return {who: await names(served.keys[who]) for who in ("agent", "sam", "reader")}

    offered = anyio.run(main)
    everything = offered["sam"]
    assert everything >= DECISIONS and "propose_repair" in everything  # an owner: all of them
    assert offered["agent"] == everything - DECISIONS  # reads and proposes, never decides
    assert "propose_repair" in offered["agent"] and "request_access" in offered["agent"]
    reader = offered["reader"]  # reads only
    assert not ({"propose_repair", "request_access"} | DECISIONS) & reader
    assert {"get_incident", "get_column_lineage", "list_proposals"} <= reader


def test_a_refusal_says_which_tool_and_which_principal_over_mcp(served: Served) -> None:
    async def refused(who: str, tool: str, **args: Any) -> str:
        async with served.session(served.keys[who]) as s:
            with pytest.raises(ToolFailed) as e:
                await call(s, tool, **args)
        return str(e.value)

    async def main() -> dict[str, str]:
        async with served.session(served.keys["agent"]) as agent:
            pid = (await call(agent, "propose_repair", incident_id="INC-1"))["proposal_id"]
        return {
            "agent": await refused("agent", "approve_proposal", proposal_id=pid),
            "reader": await refused("reader", "propose_repair", incident_id="INC-1"),
            "ana": await refused("ana", "approve_proposal", proposal_id=pid),
            "pid": pid,
        }

    out = anyio.run(main)
    pid = out["pid"]
    # an agent: the tool it may call instead, and who calls the one it may not
    agent = out["agent"]
    assert "an agent never decides" in agent and "Over MCP:" in agent
    assert "propose_repair" in agent and "person" in agent and "approve scope" in agent
    # a reader: a key with the propose scope, or someone who holds it
    reader = out["reader"]
    assert "'propose' scope" in reader
    assert "Over MCP: connect to splice serve with a key or token holding the propose scope" in (
        reader
    )
    # not an owner: an owner calls approve_proposal on this proposal
    ana = out["ana"]
    assert "ana is not an owner of any domain" in ana and "splice approve" in ana
    assert f'calls approve_proposal(proposal_id="{pid}")' in ana and "Over MCP:" in ana
