"""An MCP client over stdio cannot borrow a person's name (issue 34, item 6): a client that
calls itself "maria" proposes the demo's repair as the agent ``agent:maria``, and maria, the
pricing owner, then approves it: she is not its requester. The proposal's tool result then
says finance still has to approve (item 7), and lee does."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from click.testing import CliRunner
from tests.mcp.mcp_support import call, stdio_session

from splice.cli.main import cli, register_commands

register_commands()


def _cli(root: Path, *args: str):
    return CliRunner().invoke(cli, ["-w", str(root), *args])


def test_a_client_named_maria_proposes_as_agent_maria_and_maria_approves(
    story_copy: Path,
) -> None:
    from splice.demo.vendor import set_incident

    set_incident(story_copy, None)  # the vendor has fixed its feed since

    async def main() -> dict:
        async with stdio_session(story_copy, client="maria") as s:
            return await call(s, "propose_repair", incident_id="INC-1")

    proposal = anyio.run(main)
    assert proposal["status"] == "pending"
    assert proposal["created_by"] == "agent:maria"
    assert proposal["requester"] == {"name": "agent:maria", "kind": "agent", "auth": "stdio",
                                     "credential": proposal["requester"]["credential"],
                                     "claimed": "maria"}  # fmt: skip
    pid = proposal["proposal_id"]

    ok = _cli(story_copy, "approve", pid, "--as", "maria")
    assert ok.exit_code == 0, ok.output
    # every domain the repair rewrites decides: pricing has, finance's dbt models still wait
    assert "waiting for finance (lee)" in ok.output

    async def shown() -> dict:
        async with stdio_session(story_copy, client="maria") as s:
            return await call(s, "get_proposal", proposal_id=pid)

    got = anyio.run(shown)
    assert got["status"] == "pending" and got["domains"] == ["pricing", "finance"]
    assert got["approved_for"] == {"pricing": ["maria"]}
    assert [w["domain"] for w in got["waiting_for"]] == ["finance"]
    ok = _cli(story_copy, "approve", pid, "--as", "lee")
    assert ok.exit_code == 0 and f"{pid} approved by lee" in ok.output, ok.output
    log = json.loads(_cli(story_copy, "audit-log", "show", pid, "--json").output)
    approvals = [e for e in log if e["kind"] == "approve"]
    assert [(e["actor"], e["payload"]["principal"]["kind"]) for e in approvals] == [
        ("maria", "person"),
        ("lee", "person"),
    ]
    proposed = next(e for e in log if e["kind"] == "propose")
    assert proposed["actor"] == "agent:maria"
    assert proposed["payload"]["principal"]["claimed"] == "maria"
