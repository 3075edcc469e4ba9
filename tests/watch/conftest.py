"""Fixtures for watch tests: copies of the clean demo and one stale-rates demo build.

The clean demo is the session's shared build (tests/conftest.py); the stale-rates demo is built
once here, for the whole session.  Each module works on its own copies (watch writes state).
"""

from __future__ import annotations

import pytest

from splice.demo import DemoResult, build_demo


@pytest.fixture(scope="session")
def stale_demo_build(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    """The demo built with the vendor serving Friday's rates on 2026-09-28 and 29."""
    return build_demo(tmp_path_factory.mktemp("stale") / "travel", incident="stale-rates")
