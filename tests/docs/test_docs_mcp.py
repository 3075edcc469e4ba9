"""Every MCP tool is in docs/mcp.md's table under its group, and the client configuration
blocks there are valid JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from splice.mcp.server import tool_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def test_every_tool_is_documented_under_its_group() -> None:
    text = DOC.read_text()
    rows = set(re.findall(r"^\| (\w+) \| `(\w+)` \|", text, flags=re.M))
    wanted = {(group, fn.__name__) for group, fns in tool_table().items() for fn in fns}
    assert wanted - rows == set(), "undocumented tools"
    assert rows - wanted == set(), "documented tools that do not exist"


def test_the_client_configuration_blocks_are_valid_json() -> None:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 4
    for b in blocks:
        assert "mcpServers" in json.loads(b)


def test_the_parameter_table_shows_the_examples_the_tools_give() -> None:
    """The examples docs/mcp.md shows are the schemas' own (which a test runs on the demo)."""

    class _Hub:
        root = None

    from splice.mcp.server import ALL_GROUPS, build_server

    tools = build_server(_Hub(), ALL_GROUPS)._tool_manager.list_tools()
    given: dict[str, set[str]] = {}
    for t in tools:
        for name, prop in t.parameters.get("properties", {}).items():
            given.setdefault(name, set()).update(str(x) for x in prop.get("examples") or [])
    section = DOC.read_text().split("**Parameters.**", 1)[1].split("**Times.**", 1)[0]
    rows = re.findall(r"^\| `(\w+)`[^|]*\| [^|]* \| (.*) \|$", section, flags=re.M)
    assert len(rows) >= 7
    for name, examples in rows:
        for ex in re.findall(r"`([^`]+)`", examples):
            assert ex in given.get(name, set()) or any(ex in v for v in given.values()), (name, ex)
