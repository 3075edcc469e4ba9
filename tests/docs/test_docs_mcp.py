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
