"""The command line's ``--as NAME`` takes a kind: ``--kind agent``, or a name ``[policy] agents``
lists, is recorded as an agent (it proposes, never decides); ``--kind person`` for a listed
agent is refused; an agent named like a person is ``agent:NAME``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_runner import run_cli

from splice.approvals import auditlog
from splice.workspace.core import Workspace


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["-w", str(root), *args])


def _last_principal(root: Path) -> dict:
    with Workspace.open(root) as ws:
        e = auditlog.entries(ws.state)[-1]
    return json.loads(e.payload)["principal"]


def test_as_takes_a_kind_and_listed_agents_are_agents(fresh_demo: Path) -> None:
    toml = fresh_demo / "splice.toml"
    assert 'agents = ["splice-agent"]' in toml.read_text()
    # the demo's agent, named without --kind: an agent, never a person that may decide
    r = _cli(fresh_demo, "stop", "--reason", "x", "--as", "splice-agent")
    assert r.returncode == 2 and "agent never decides" in r.stderr, r.stderr
    r = _cli(fresh_demo, "stop", "--reason", "x", "--as", "splice-agent", "--kind", "person")
    assert r.returncode == 2 and "[policy] agents" in r.stderr, r.stderr
    r = _cli(fresh_demo, "stop", "--reason", "x", "--as", "ci-bot", "--kind", "agent")
    assert r.returncode == 2 and "ci-bot (agent, cli-as) may not stop" in r.stderr, r.stderr
    # a person decides; the record says so
    r = _cli(fresh_demo, "stop", "--reason", "drill", "--as", "maria", "--kind", "person")
    assert r.returncode == 0, r.stderr
    assert _last_principal(fresh_demo)["kind"] == "person"
    r = _cli(fresh_demo, "stop", "--reason", "x", "--kind", "agent")
    assert r.returncode == 2 and "--kind" in r.stderr and "Traceback" not in r.stderr


def test_an_agent_named_like_an_owner_is_recorded_as_agent_name(fresh_demo: Path) -> None:
    from splice.api import cli_principal

    with Workspace.open(fresh_demo) as ws:
        who = cli_principal(ws, "maria", "agent")
    assert who.kind == "agent" and who.name == "agent:maria"
    assert not who.may("approve")
