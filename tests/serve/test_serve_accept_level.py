"""``accept_level`` over MCP with real clients: on stdio the caller is an agent and is refused;
on ``splice serve`` an agent's key, a read-only key and a person who owns nothing are refused with
nothing written, and the owner accepts with her identity provider's token (recorded as such)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.mcp.mcp_support import ToolFailed, call, stdio_session
from tests.serve.serve_support import (
    Served as ServedBase,
)
from tests.serve.serve_support import (
    http_session,
    make_key,
    running_server,
    served_copy,
)


class Served(ServedBase):
    def written(self) -> tuple[int, int, str]:
        """(accepted levels, audit-log entries, INC-1's status)."""
        con = sqlite3.connect(self.ws / ".splice" / "state.db")
        try:
            return (
                con.execute("SELECT count(*) FROM watch_levels").fetchone()[0],
                con.execute("SELECT count(*) FROM repair_audit_log").fetchone()[0],
                con.execute("SELECT status FROM incidents WHERE incident_id = 'INC-1'").fetchone()[
                    0
                ],
            )
        finally:
            con.close()


@pytest.fixture(scope="module")
def served(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    ws, idp, port = served_copy(
        stale_story.build.workspace, tmp_path_factory.mktemp("accept") / "travel"
    )
    keys = {
        "agent": make_key(ws, "ci-agent", "agent", "read,propose"),
        "lee": make_key(ws, "lee", "person", "read,propose,approve"),
        "reader": make_key(ws, "rita", "person", "read"),
    }
    with running_server(ws, port) as base:
        yield Served(ws, base, idp, keys)
    idp.close()


def test_an_agent_on_stdio_is_not_offered_the_tool_and_is_refused(served: Served) -> None:
    before = served.written()

    async def main() -> tuple[set[str], Any, str]:
        async with stdio_session(served.ws, client="claude-code") as s:
            names = {t.name for t in (await s.list_tools()).tools}
            with pytest.raises(ToolFailed) as e:
                await call(s, "accept_level", incident_id="INC-1", note="looks permanent")
        async with http_session(served.base, served.keys["lee"]) as person:
            tools = {t.name: t for t in (await person.list_tools()).tools}
        return names, tools["accept_level"], str(e.value)

    names, tool, msg = anyio.run(main)
    assert "accept_level" not in names  # an agent is not offered what it may never do
    assert tool.annotations.destructive_hint is True and tool.annotations.read_only_hint is False
    assert tool.meta["group"] == "repairs"
    assert "claude-code (agent, stdio) may not accept-level: an agent never decides" in msg
    assert "splice incident accept-level" in msg  # the fix names the command a person runs
    assert "Over MCP:" in msg and "calls accept_level" in msg  # and who calls the tool
    assert served.written() == before


def test_only_the_owner_accepts_over_the_served_mcp(served: Served) -> None:
    s = served

    async def refused(token: str, **args: Any) -> str:
        before = s.written()
        async with http_session(s.base, token) as sess:
            with pytest.raises(ToolFailed) as e:
                await call(sess, "accept_level", incident_id="INC-1", **args)
        assert s.written() == before, "refused, but something was written"
        return str(e.value)

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        assert "an agent never decides" in await refused(s.keys["agent"])
        bot = s.token(sub="ci-bot-account", azp="ci-bot", scope="splice:approve")
        assert "an agent never decides" in await refused(bot)
        assert "that needs the 'approve' scope" in await refused(s.keys["reader"])
        msg = await refused(s.keys["lee"], series=["currency=JPY"])
        assert "only an owner of domain pricing" in msg and "maria, sam" in msg
        async with http_session(s.base, s.token(sub="maria")) as maria:
            part = await call(maria, "accept_level", incident_id="INC-1",
                              series=["currency=CHF"], note="SNB peg")  # fmt: skip
            rest = await call(maria, "accept_level", incident_id="inc-1")
            with pytest.raises(ToolFailed) as again:
                await call(maria, "accept_level", incident_id="INC-1")
            assert "closed already" in str(again.value)
            audit = await call(maria, "verify_audit_log")
            inc = await call(maria, "get_incident", incident_id="INC-1")
        return part, rest, {"audit": audit, "incident": inc}

    part, rest, seen = anyio.run(main)
    assert part["status"] == "open" and part["note"] == "SNB peg"
    assert {a["series"] for a in part["accepted"]} == {"currency=CHF"}
    assert rest["status"] == "accepted" and rest["remaining"] == []
    assert rest["principal"]["name"] == "maria" and rest["principal"]["auth"] == "oauth"
    assert seen["audit"]["intact"] is True
    inc = seen["incident"]
    assert inc["status"] == "accepted"
    assert inc["resolution"].startswith(
        "new level accepted by maria (person, signed in through the identity provider"
    )
    levels, _entries, status = s.written()
    assert status == "accepted" and levels == len(part["accepted"]) + len(rest["accepted"])
