"""Splice's state: versioned schema, forward migrations, refusal of a newer state."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from splice.errors import StateError
from splice.state import store as store_mod
from splice.state.migrations import MIGRATIONS
from splice.state.store import SCHEMA_VERSION, StateStore


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_new_state_gets_the_latest_schema(tmp_path: Path):
    s = StateStore.open(tmp_path / "state.db")
    assert s.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    s.cache_put_many("lineage", {"k": {"a": 1}})
    assert s.cache_get_many("lineage", ["k", "missing"]) == {"k": {"a": 1}}
    s.close()


def test_a_state_from_a_newer_splice_is_refused_untouched(tmp_path: Path):
    path = tmp_path / "state.db"
    StateStore.open(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE splice_meta SET value='999' WHERE key='schema_version'")
    con.commit()
    con.close()
    before = _digest(path)
    with pytest.raises(StateError, match="newer than this Splice"):
        StateStore.open(path)
    assert _digest(path) == before


def test_an_older_state_is_migrated_and_keeps_its_data(tmp_path: Path, monkeypatch):
    path = tmp_path / "state.db"
    # a workspace written by a Splice that knew only the first migration
    monkeypatch.setattr(store_mod, "MIGRATIONS", MIGRATIONS[:1])
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", 1)
    old = StateStore.open(path)
    old.cache_put_many("lineage", {"kept": {"v": 1}})
    old.close()
    monkeypatch.undo()
    s = StateStore.open(path)
    assert s.schema_version == SCHEMA_VERSION
    assert s.cache_get_many("lineage", ["kept"]) == {"kept": {"v": 1}}
    s.close()


def test_a_file_that_is_not_a_state_is_refused(tmp_path: Path):
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    before = _digest(path)
    with pytest.raises(StateError):
        StateStore.open(path)
    assert _digest(path) == before
