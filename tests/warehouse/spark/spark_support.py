"""Helpers of the Spark tests: the spark_shop fixture copied and pointed at a server, the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.cli_runner import run_cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "projects" / "spark_shop"


def copy_shop(ws: Path, remote: str) -> Path:
    """The spark_shop fixture copied to ``ws``, its splice.toml naming ``remote``."""
    shutil.copytree(FIXTURE, ws)
    toml = ws / "splice.toml.tmpl"
    (ws / "splice.toml").write_text(toml.read_text().replace("__REMOTE__", remote))
    toml.unlink()
    return ws


def splice(ws: Path, remote: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI (:mod:`tests.cli_runner`), its projects pointed at ``remote``
    (``$SPLICE_SPARK_REMOTE``)."""
    return run_cli(["-w", str(ws), *args], env={**os.environ, "SPLICE_SPARK_REMOTE": remote})
