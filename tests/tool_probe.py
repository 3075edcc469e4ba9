"""Which of the tools (dbt, SQLMesh, dlt) one Splice command imports: the command runs in a
child process of its own, which then writes the tool packages it has loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# runs one CLI command in this process, then writes which tools were imported
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


def probe(root: Path, args: list[str], out: Path) -> tuple[list[str], str]:
    """(the tools imported, what it printed) of `splice ARGS` run in ``root`` (the graph cache
    on, whatever SPLICE_NO_CACHE says)."""
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
    return json.loads(out.read_text()), res.stdout
