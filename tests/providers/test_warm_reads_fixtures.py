"""Warm reading commands on fixture projects other than the demo answer from Splice's caches,
importing neither dbt nor SQLMesh: a lone SQLMesh project without splice.toml (whose directory
is the workspace's, so Splice's own witness file lies among the project's files) and a
multi-repo SQLMesh workspace (whose doctor reads the models each project's Context holds for
the other from the shared state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixture_projects import copy_fixture, splice_cli

# runs one CLI command in this process, then writes which tools it imported
PROBE = """
import json, sys
from splice.cli.main import cli, register_commands
register_commands()
try:
    cli(sys.argv[2:], prog_name="splice", standalone_mode=False)
except SystemExit:
    pass
tools = sorted({m.split(".")[0] for m in sys.modules} & {"dbt", "sqlmesh", "dlt"})
open(sys.argv[1], "w").write(json.dumps(tools))
"""


def probe(root: Path, args: list[str], out: Path) -> tuple[list[str], Any]:
    """(the tools imported, the JSON printed) of `splice ARGS` in ``root``."""
    env = {**os.environ}
    env.pop("SPLICE_NO_CACHE", None)
    res = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text()), json.loads(res.stdout)


def comparable(args: list[str], data: Any) -> Any:
    if args[0] == "lineage":
        data.pop("stats", None)
    return data


def warm_twice(root: Path, commands: list[list[str]], tmp_path: Path) -> None:
    out = tmp_path / "tools.json"
    for args in commands:
        cold_tools, cold = probe(root, args, out)
        assert cold_tools, f"the first splice {' '.join(args)} loads the projects"
        for _ in range(2):  # warm, and warm again after the warm one wrote the state
            tools, warm = probe(root, args, out)
            assert tools == [], f"warm splice {' '.join(args)} imported {tools}"
            assert comparable(args, warm) == comparable(args, cold)


def test_a_lone_sqlmesh_project_reads_warm_without_sqlmesh(tmp_path: Path) -> None:
    root = copy_fixture("sqlmesh_kinds", tmp_path)
    assert not (root / "splice.toml").exists()
    warm_twice(
        root,
        [
            ["lineage", "marts.daily_revenue.revenue", "--upstream", "--json"],
            ["doctor", "--json"],
        ],
        tmp_path,
    )
    assert (root / "splice-witness.json").exists()  # the file the graph key must leave out


def test_a_multi_repo_doctor_reads_warm_without_sqlmesh(tmp_path: Path) -> None:
    root = copy_fixture("multirepo", tmp_path)
    built = splice_cli(root, "run")
    assert built.returncode == 0, built.stdout + built.stderr
    warm_twice(root, [["doctor", "--json"]], tmp_path)
