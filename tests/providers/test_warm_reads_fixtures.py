"""Warm reading commands on fixture projects other than the demo answer from Splice's caches,
importing neither dbt nor SQLMesh: a lone SQLMesh project without splice.toml (whose directory
is the workspace's, so Splice's own witness file lies among the project's files) and a
multi-repo SQLMesh workspace (whose doctor reads the models each project's Context holds for
the other from the shared state)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixture_projects import copy_fixture, splice_cli
from tests.tool_probe import probe as run_probe


def probe(root: Path, args: list[str], out: Path) -> tuple[list[str], Any]:
    """(the tools imported, the JSON printed) of `splice ARGS` in ``root``."""
    tools, printed = run_probe(root, args, out)
    return tools, json.loads(printed)


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
