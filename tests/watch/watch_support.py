"""Helpers for the watch tests (not in conftest.py, so test modules can import them by name)."""

from __future__ import annotations

import shutil
from pathlib import Path

from splice.demo import relocate


def copy_workspace(src: Path, dest: Path) -> Path:
    """A private copy of a built demo workspace (warehouse included)."""
    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)  # dbt's profile holds the warehouse's absolute path
    return dest
