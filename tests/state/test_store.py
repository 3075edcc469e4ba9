"""Splice's state: versioned schema, forward migrations, refusal of a newer state, on SQLite and
on PostgreSQL (``state_target``, tests/state/conftest.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from splice.errors import StateError
from splice.state import store as store_mod
from splice.state.migrations import MIGRATIONS
from splice.state.sql import statement
from splice.state.store import SCHEMA_VERSION, StateStore

_SET_VERSION = statement("UPDATE splice_meta SET value = '999' WHERE key = 'schema_version'")
_META = statement("SELECT key, value FROM splice_meta ORDER BY key")
_CACHE = statement("SELECT kind, key, value FROM content_cache ORDER BY kind, key")


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _contents(target: Path | str) -> Any:
    """What a state holds, read without Splice's migration (which would refuse it)."""
    if isinstance(target, Path):
        return _digest(target)
    conn = store_mod.pg_connect(target)
    try:
        return conn.execute(_META).fetchall(), conn.execute(_CACHE).fetchall()
    finally:
        conn.close()


def test_new_state_gets_the_latest_schema(state_target: Path | str) -> None:
    s = StateStore.open(state_target)
    assert s.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    s.cache_put_many("lineage", {"k": {"a": 1}})
    assert s.cache_get_many("lineage", ["k", "missing"]) == {"k": {"a": 1}}
    s.cache_put_many("lineage", {"k": {"a": 2}})  # written again: replaced, not a second row
    assert s.cache_get_many("lineage", ["k"]) == {"k": {"a": 2}}
    assert s.state_id() == s.state_id() != ""
    s.close()


def test_a_state_from_a_newer_splice_is_refused_untouched(state_target: Path | str) -> None:
    s = StateStore.open(state_target)
    s.cache_put_many("lineage", {"kept": {"v": 1}})
    with s.transaction() as conn:
        conn.execute(_SET_VERSION)
    s.close()
    before = _contents(state_target)
    with pytest.raises(StateError, match="newer than this Splice"):
        StateStore.open(state_target)
    assert _contents(state_target) == before


def test_an_older_state_is_migrated_and_keeps_its_data(
    state_target: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a workspace written by a Splice that knew only the first migration
    monkeypatch.setattr(store_mod, "MIGRATIONS", MIGRATIONS[:1])
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", 1)
    old = StateStore.open(state_target)
    assert old.schema_version == 1
    old.cache_put_many("lineage", {"kept": {"v": 1}})
    old.close()
    monkeypatch.undo()
    s = StateStore.open(state_target)
    assert s.schema_version == SCHEMA_VERSION
    assert s.cache_get_many("lineage", ["kept"]) == {"kept": {"v": 1}}
    s.close()


def test_a_file_that_is_not_a_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    before = _digest(path)
    with pytest.raises(StateError):
        StateStore.open(path)
    assert _digest(path) == before
