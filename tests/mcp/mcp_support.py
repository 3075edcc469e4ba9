"""Real MCP client sessions against Splice, for tests: stdio (``splice mcp`` as a child
process) and streamable HTTP (``splice serve``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

SRC = Path(__file__).resolve().parents[2] / "src"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    return env


#: The protocols a client may speak: "legacy" is the initialize handshake of the 2025
#: revisions (``mcp.ClientSession``, as older agents speak it); "modern" is what the SDK's
#: ``mcp.Client`` negotiates by default (revision 2026-07-28: no handshake, every request
#: self-contained, the client's info in each request's ``_meta``).
PROTOCOLS = ("legacy", "modern")


@asynccontextmanager
async def modern_client(transport: Any, client: str) -> AsyncIterator[Any]:
    """The SDK's ``mcp.Client`` on ``transport`` in its default ``auto`` mode; asserts that it
    did not fall back to the handshake (Splice speaks the newest revision)."""
    from mcp.client.client import Client
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async with Client(
        transport, mode="auto", client_info=Implementation(name=client, version="1.0")
    ) as c:
        assert c.protocol_version in MODERN_PROTOCOL_VERSIONS, c.protocol_version
        yield c


@asynccontextmanager
async def stdio_session(
    workspace: Path, *groups: str, client: str = "test-agent", protocol: str = "legacy"
) -> AsyncIterator[Any]:
    """``splice mcp`` as a child process and a client session on its stdio."""
    args = ["-m", "splice", "--workspace", str(workspace), "mcp"]
    for g in groups:
        args += ["--group", g]
    params = StdioServerParameters(command=sys.executable, args=args, env=child_env())
    errlog = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        if protocol == "modern":
            async with modern_client(stdio_client(params, errlog=errlog), client) as c:
                yield c
            return
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=Implementation(name=client, version="1.0")
            ) as session,
        ):
            await session.initialize()
            yield session
    finally:
        errlog.close()


class ToolFailed(Exception):
    """A tool call answered with an MCP tool error; ``str()`` is the message."""


async def call(session: Any, tool: str, /, **arguments: Any) -> Any:
    """Call a tool; return its JSON result, or raise ToolFailed with its error text."""
    res = await session.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in res.content)
    if res.is_error:
        raise ToolFailed(text)
    if res.structured_content is not None:
        sc = res.structured_content
        return sc["result"] if isinstance(sc, dict) and set(sc) == {"result"} else sc
    return json.loads(text) if text else None
