"""Where each tool runs: the reads answered from Splice's state go one at a time in one lane
(splice.mcp.server.in_lane); everything else on the SDK's pool of threads."""

from __future__ import annotations

from splice.mcp import tools_read, tools_repair
from splice.mcp.server import ALL_GROUPS, build_server, tool_table


def test_the_state_lane_holds_only_registered_reads_and_they_keep_their_inputs() -> None:
    lane = tools_read.FROM_STATE | tools_repair.FROM_STATE
    names = {fn.__name__ for fns in tool_table().values() for fn in fns}
    assert lane <= names, f"not tools: {sorted(lane - names)}"
    writes = tools_read.WRITES_STATE | tools_repair.WRITES_STATE | tools_repair.DESTRUCTIVE
    assert not lane & writes, "a tool that writes cannot share the readers' lane"
    server = build_server(None, ALL_GROUPS)
    tools = {t.name: t for t in server._tool_manager.list_tools()}
    for name in names:
        assert tools[name].is_async is (name in lane), name
    # the lane keeps each tool's own inputs (what an agent sees in tools/list)
    params = tools["get_incident"].parameters["properties"]
    assert set(params) == {"incident_id"}
