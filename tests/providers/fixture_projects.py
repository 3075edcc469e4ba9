"""Helpers for the fixture projects (tests/fixtures/projects/): copy one into a temporary
directory, run the real tools on it, read what they built, load Splice's view of it.

(Not in conftest.py: test modules import these by name, and tests/cli has a conftest too.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.cli_runner import run_cli

from splice.api import doctor, list_nodes
from splice.workspace.core import Workspace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "projects"
# what running the tools inside a fixture would leave behind: never copied
_ARTEFACTS = shutil.ignore_patterns(
    "target",
    "logs",
    "dbt_packages",
    "package-lock.yml",
    ".splice",
    "splice-witness.json",
    ".cache",
    "*.duckdb*",
)


def copy_fixture(name: str, parent: Path, as_name: str | None = None) -> Path:
    """Copy fixture project ``name`` to ``parent/as_name`` (default: its own name)."""
    dest = parent / (as_name or name)
    shutil.copytree(FIXTURES / name, dest, ignore=_ARTEFACTS)
    return dest


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    """The tools resolve relative DuckDB paths against the working directory."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def dbt(project: Path, *args: str, run_from: Path | None = None) -> object:
    """Run dbt in process on ``project`` (its profiles.yml), from ``run_from`` (default: the
    project directory; dbt-duckdb resolves a relative path against the working directory)."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner

    with cwd(run_from or project):
        try:
            res = dbtRunner().invoke(
                [*args, "--project-dir", str(project), "--profiles-dir", str(project), "--quiet"]
            )
        finally:
            DuckDBConnectionManager.close_all_connections()  # dbt-duckdb keeps the file open
    assert res.success, f"dbt {' '.join(args)} failed: {res.exception}"
    return res


def tables_in(db: Path) -> dict[tuple[str, str, str], str]:
    """(catalog, schema, name) -> table type, for every user object in a DuckDB file."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables"
            " WHERE table_schema NOT LIKE 'sqlmesh%'"
        ).fetchall()
    return {(c, s, n): t for c, s, n, t in rows}


class Loaded:
    """A workspace's graph, node records (`splice ls --json`) and doctor checks, for one target."""

    def __init__(self, root: Path, target: str | None = None) -> None:
        self.root = root
        with Workspace.open(root, target=target) as ws:
            self.graph = ws.graph()
            self.records = {r["id"]: r for r in list_nodes(ws)}
            self.checks = doctor(ws, lineage=False)
            self.has_config = ws.has_config
            self.target = ws.target

    def node(self, node_id: str):  # type: ignore[no-untyped-def]
        assert node_id in self.graph.nodes, f"{node_id} not in {sorted(self.graph.nodes)}"
        return self.graph.nodes[node_id]

    def codes(self, code: str) -> list:  # type: ignore[type-arg]
        return [c for c in self.checks if c.code == code]


def splice_cli(root: Path, *args: str, columns: int = 400) -> subprocess.CompletedProcess[str]:
    """`splice ARGS` in ``root`` (plain text, wide enough for one-line findings)."""
    return run_cli(args, cwd=root, env={**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns)})
