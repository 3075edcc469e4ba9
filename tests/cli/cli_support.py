"""Helpers for running the `splice` CLI on copies of the fixture projects.

(Not in conftest.py: test modules import these by name, and tests/providers has a conftest.)
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import run_cli
from tests.providers.fixture_projects import FIXTURES, copy_fixture  # noqa: F401 - re-exported

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
RED_ERROR = "\x1b[1;31mError:\x1b[0m "  # Rich's "[bold red]Error:[/]"

#: What a failing command may still leave in a workspace, because the tools or Splice's
#: capture of them write it before the failure is known:
#:   .splice/        the directory itself, holding only:
#:   .splice/logs/   Splice's log of the tools' own output (dbt, SQLMesh chatter)
#:   .splice/dbt/    dbt's --log-path / --target-path, which Splice points into .splice
#:   */.cache/       SQLMesh's model cache, written in the project directory on load
#: Nothing else may change; in particular Splice's state (.splice/state.db) is never created.
TOOL_SCRATCH = (
    re.compile(r"^\.splice$"),
    re.compile(r"^\.splice/(logs|dbt)(/|$)"),
    re.compile(r"(^|/)\.cache(/|$)"),
)


def splice(
    *args: str, cwd: Path, timeout: float = 120, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`splice ARGS` in ``cwd``, with colour forced on (Rich honours FORCE_COLOR), run in this
    process (:mod:`tests.cli_runner`), or with ``process`` as ``python -m splice.cli.main`` (a
    test of what only a process shows: its whole time, its imports)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "SPLICE_WORKSPACE", "SPLICE_TARGET")
    }
    env.update(
        FORCE_COLOR="1",
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
        SQLMESH__DISABLE_ANONYMIZED_ANALYTICS="true",
    )
    if process:
        return subprocess.run([sys.executable, "-m", "splice.cli.main", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return run_cli(args, cwd=cwd, env=env)


def plain(text: str) -> str:
    return _ANSI.sub("", text)


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` -> a content hash ("dir" for directories)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def changes(
    before: dict[str, str], after: dict[str, str], *, allow_tool_scratch: bool
) -> list[str]:
    """Paths added, removed or modified, leaving out TOOL_SCRATCH when allowed."""
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if allow_tool_scratch:
        changed = [p for p in changed if not any(rx.search(p) for rx in TOOL_SCRATCH)]
    return changed


def assert_one_red_error_line(res: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, nothing on stdout, and exactly one red line on stderr with a fix and no
    traceback; every needle appears in it.  Returns the line without colour codes."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == ""
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip("\n").splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(RED_ERROR), repr(lines[0])
    line = plain(lines[0])
    assert " Fix: " in line, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line
