"""Every statement a state module declares (:mod:`splice.state.sql`) is valid on both backends:
compiled by SQLite and planned by PostgreSQL against a freshly migrated state, so a statement
that only one backend understands fails here, not in a user's command."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

import splice
from splice.state.sql import DECLARED, Statement
from splice.state.store import StateStore

#: Statements that change the schema or a transaction: run by every state's migration.
_NOT_PLANNED = (exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Transaction)


def _declared() -> list[Statement]:
    for mod in pkgutil.walk_packages(splice.__path__, "splice."):
        importlib.import_module(mod.name)
    found = [  # Splice's own (a test may declare a statement of an older schema)
        s for s in DECLARED
        if not isinstance(s.tree, _NOT_PLANNED) and (s.module or "").startswith("splice.")
    ]  # fmt: skip
    return sorted(found, key=str)


def _args(s: Statement) -> Any:
    marks = list(s.tree.find_all(exp.Placeholder))
    names = {p.name for p in marks if p.name not in ("", "?")}
    if names:
        return dict.fromkeys(names)
    return [None] * len(marks)


@pytest.fixture(scope="module")
def declared() -> list[Statement]:
    found = _declared()
    assert len(found) > 150, "the state modules' statements were not found"
    return found


def test_every_declared_statement_is_valid_on_both_backends(
    state_target: Path | str, declared: list[Statement]
) -> None:
    store = StateStore.open(state_target)
    backend = "postgres" if store.on_postgres else "sqlite"
    failed: dict[str, str] = {}
    try:
        for s in [s for s in declared if backend in s.backends]:
            try:
                if backend == "postgres":
                    store.conn._con.execute(  # type: ignore[attr-defined]
                        b"EXPLAIN " + s.postgres.encode(), _args(s)
                    )
                else:
                    store.conn.execute(f"EXPLAIN {s}", _args(s))
            except Exception as e:  # noqa: BLE001 - every failure is listed below
                failed[str(s)] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    finally:
        store.close()
    assert not failed, "\n".join(f"{k}\n  -> {v}" for k, v in failed.items())


def test_a_postgresql_state_refuses_text_that_is_not_a_declared_statement(
    state_target: Path | str,
) -> None:
    """On PostgreSQL only declared statements run (nothing is translated while a command
    runs); on SQLite a statement is its text."""
    from splice.state.sql import statement

    store = StateStore.open(state_target)
    try:
        q = statement("SELECT value FROM splice_meta WHERE key = ?")
        assert store.conn.execute(q, ("schema_version",)).fetchone() is not None
        text = "SELECT value FROM splice_meta WHERE key = 'schema_version'"
        if store.on_postgres:
            with pytest.raises(TypeError, match="declared statements only"):
                store.conn.execute(text)
        else:
            assert store.conn.execute(text).fetchone() is not None
    finally:
        store.close()


def _program(conn: Any, sql: str, args: Any) -> list[tuple[Any, ...]]:
    """SQLite's compiled program of ``sql`` (opcode and operands, without comments)."""
    return [tuple(r[1:7]) for r in conn.execute(f"EXPLAIN {sql}", args)]


def test_sqlite_runs_each_declared_statement_as_the_text_it_was_written_as(
    declared: list[Statement], tmp_path: Path
) -> None:
    """sqlglot's rendering changes nothing SQLite does: each declared statement compiles to the
    same program as its source text (a rendering that changed a meaning, as ``->`` for
    ``json_extract`` once did, fails here)."""
    store = StateStore.open(tmp_path / "state.db")
    differ: list[str] = []
    try:
        for s in [s for s in declared if "sqlite" in s.backends and s.source]:
            assert s.source is not None
            if _program(store.conn, s, _args(s)) != _program(store.conn, s.source, _args(s)):
                differ.append(f"{s.source}\n  rendered: {s}")
    finally:
        store.close()
    assert not differ, "\n".join(differ)
