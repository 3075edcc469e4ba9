"""``splice mcp`` over stdio with a real MCP client against the demo with its stale-rates
incident: the agent's question answered end to end, by a client of the 2025 protocol
(``mcp.ClientSession``, the initialize handshake) and by one of the 2026-07-28 revision
(``mcp.Client``'s default: every request self-contained, the client's name in its ``_meta``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from tests.mcp.mcp_support import PROTOCOLS, ToolFailed, call, stdio_session


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_agent_asks_why_gmv_is_high_and_proposes_the_repair(
    story_copy: Path, protocol: str
) -> None:
    from splice.demo.vendor import set_incident

    set_incident(story_copy, None)  # the vendor has fixed its feed since

    async def main() -> dict:
        async with stdio_session(story_copy, client="claude-code", protocol=protocol) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            # every reading and proposing group, and nothing that decides
            for name in ("search_nodes", "get_incident", "get_column_lineage", "list_metrics",
                         "list_ingestion_jobs", "propose_repair", "get_receipt"):  # fmt: skip
                assert name in tools, name
            assert not {
                "approve_proposal",
                "apply_proposal",
                "undo_proposal",
                "stop_repairs",
            } & set(tools)
            assert tools["get_incident"].annotations.read_only_hint is True
            assert tools["propose_repair"].annotations.read_only_hint is False

            incidents = await call(s, "list_incidents")
            assert incidents["count"] == 1
            inc = incidents["incidents"][0]
            assert "fx.daily_rates" in inc["title"]

            diag = await call(s, "get_incident", incident_id=inc["id"])
            assert diag["origin"] == "pricing:fx.daily_rates"
            radius = diag["diagnosis"]["blast_radius"]
            assert any("dashboard" in str(d) for d in radius.get("dashboards", radius)), radius

            lineage = await call(
                s, "get_column_lineage", column="fx.daily_rates.rate_to_usd", direction="down"
            )
            assert "finance:exposure:gmv_usd_dashboard" in lineage["dashboards"]

            with pytest.raises(ToolFailed) as bad:
                await call(s, "get_incident", incident_id="INC-404")
            assert "INC-1" in str(bad.value) and "Fix:" in str(bad.value)

            proposal = await call(s, "propose_repair", incident_id=inc["id"])
            return proposal

    proposal = anyio.run(main)
    assert proposal["status"] == "pending"
    requester = proposal["requester"]
    assert (requester["name"], requester["kind"], requester["auth"]) == (
        "claude-code",
        "agent",
        "stdio",
    )


def test_group_flag_serves_one_group_and_refuses_an_unknown_one(story_copy: Path) -> None:
    async def main() -> set[str]:
        async with stdio_session(story_copy, "catalog") as s:
            return {t.name for t in (await s.list_tools()).tools}

    names = anyio.run(main)
    assert names == {"search_nodes", "get_node", "get_graph", "get_column_lineage", "run_doctor"}

    import subprocess
    import sys

    from tests.mcp.mcp_support import child_env

    bad = subprocess.run(
        [sys.executable, "-m", "splice", "-w", str(story_copy), "mcp", "--group", "decisions"],
        capture_output=True, text=True, env=child_env(), timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "unknown tool group 'decisions'" in bad.stderr and not bad.stdout


def test_a_bad_workspace_is_refused_before_anything_is_served(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.mcp.mcp_support import child_env

    (tmp_path / "splice.toml").write_text("[workspace]\nnmae = 'typo'\n")
    for cmd in (["mcp"], ["serve"]):
        r = subprocess.run(
            [sys.executable, "-m", "splice", "-w", str(tmp_path), *cmd],
            capture_output=True, text=True, env=child_env(), timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert r.returncode == 2, (cmd, r.stderr)
        assert "nmae" in r.stderr and not r.stdout.strip(), (cmd, r.stdout, r.stderr)
