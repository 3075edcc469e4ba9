"""Fixtures of the orchestrator tests: a test module names its orchestrator in ``SYSTEM``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.orchestrators.orchestrator_support import copy_workspace, stop

from splice.demo.story import StoryResult, tell_stale_rates


@pytest.fixture(scope="module")
def story(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          ) -> Iterator[StoryResult]:  # fmt: skip
    """The stale-rates story with the feed in the module's orchestrator: the morning load of
    the frozen days was a run there; INC-1 is open (read it, never modify it: copy it)."""
    system = request.module.SYSTEM
    told = tell_stale_rates(tmp_path_factory.mktemp(system) / "travel", orchestrator=system)
    try:
        yield told
    finally:
        stop(told.build.workspace)


@pytest.fixture
def copy(story: StoryResult, tmp_path: Path) -> Iterator[Path]:
    """A private copy of ``story`` with an orchestrator server of its own."""
    dest = copy_workspace(story.build.workspace, tmp_path / "travel")
    try:
        yield dest
    finally:
        stop(dest)
