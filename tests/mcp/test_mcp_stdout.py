"""Nothing but the protocol reaches ``splice mcp``'s stdout, even while dbt and SQLMesh run
under it (a stray line there breaks the agent's client). The requests are sent together, so
the server runs them concurrently: the tools must take turns (SQLMesh's import of a project's
config.py and dbt's flags are process-wide) and answer every one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp.mcp_support import child_env


def _msg(i: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"


def test_stdout_carries_only_json_rpc_while_the_tools_run(story_copy: Path) -> None:
    from splice.demo.vendor import set_incident

    set_incident(story_copy, None)
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "1"}}  # fmt: skip
    script = (
        _msg(1, "initialize", init)
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + _msg(2, "tools/call", {"name": "run_watch", "arguments": {}})
        + _msg(3, "tools/call", {"name": "propose_repair", "arguments": {"incident_id": "INC-1"}})
        + _msg(4, "tools/call", {"name": "get_incident", "arguments": {"incident_id": "nope"}})
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "splice", "-w", str(story_copy), "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(script)
    proc.stdin.flush()
    answers: dict[int, dict] = {}
    lines = []
    while len(answers) < 4:
        line = proc.stdout.readline()
        assert line, f"server closed early: {proc.stderr.read() if proc.stderr else ''}"
        lines.append(line)
        msg = json.loads(line)  # every line is a JSON-RPC message, nothing else
        assert msg.get("jsonrpc") == "2.0", line
        if "id" in msg:
            answers[msg["id"]] = msg
    proc.stdin.close()
    proc.wait(timeout=30)
    assert not answers[2]["result"].get("isError"), answers[2]
    assert not answers[3]["result"].get("isError"), answers[3]
    assert answers[4]["result"]["isError"] is True
    assert "NodeNotFoundError" in answers[4]["result"]["content"][0]["text"]
