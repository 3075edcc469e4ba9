"""The state tests run on both backends: ``state_target`` is a fresh SQLite file, then a fresh
PostgreSQL database of the session's throwaway server (marked ``postgres``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def state_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a new state goes: a SQLite file path, or a ``postgresql+psycopg://`` URL."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    url: str = request.getfixturevalue("pg_url")
    return url.replace("postgresql://", "postgresql+psycopg://", 1)
