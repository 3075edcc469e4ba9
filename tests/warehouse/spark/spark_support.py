"""Helpers of the Spark tests: the spark_shop fixture copied and pointed at a server, the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "projects" / "spark_shop"


def copy_shop(ws: Path, remote: str) -> Path:
    """The spark_shop fixture copied to ``ws``, its splice.toml naming ``remote``."""
    shutil.copytree(FIXTURE, ws)
    toml = ws / "splice.toml.tmpl"
    (ws / "splice.toml").write_text(toml.read_text().replace("__REMOTE__", remote))
    toml.unlink()
    return ws


def splice(ws: Path, remote: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, its projects pointed at ``remote`` (``$SPLICE_SPARK_REMOTE``)."""
    env = {**os.environ, "SPLICE_SPARK_REMOTE": remote}
    return subprocess.run([sys.executable, "-m", "splice", "-w", str(ws), *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
