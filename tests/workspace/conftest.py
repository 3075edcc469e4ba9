"""The federated fixture (a SQLMesh project read by a dbt project) for the graph cache tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.providers.fixture_projects import copy_fixture


@pytest.fixture(scope="module")
def federated_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy per test module, which each test copies again before it edits anything."""
    return copy_fixture("federated", tmp_path_factory.mktemp("gcache"))
