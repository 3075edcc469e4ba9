"""Fixtures of the operator tests: the demo on the Sunday evening before the vendor freezes."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import built_once


def _sunday(directory: Path) -> Path:
    """The demo built clean through Sunday 2026-09-27 and baselined (``splice watch
    --backfill``): production's state the evening before the vendor freezes."""
    from splice import api
    from splice.demo.build import build_demo
    from splice.demo.story import CLEAN_THROUGH

    built = build_demo(directory, through=CLEAN_THROUGH)
    with api.open_workspace(built.workspace) as ws:
        api.watch(ws, backfill=True)
    return built.workspace


@pytest.fixture(scope="session")
def sunday_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read it, never modify it (copy it: :func:`tests.operator.operator_support.copy_with`)."""
    return built_once(tmp_path_factory, "sunday", _sunday)
