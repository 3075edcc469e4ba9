"""The git side of splice review, on a repository made in the test."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.review.conftest import git

from splice.errors import ReviewError
from splice.review.git import repo_of


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    top = tmp_path / "repo"
    (top / "ws" / "models").mkdir(parents=True)
    (top / "ws" / "models" / "a.sql").write_text("select 1 as a\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "one")
    return top


def test_a_workspace_in_a_subdirectory(repo: Path) -> None:
    r = repo_of(repo / "ws")
    assert (r.top, r.subdir) == (repo.resolve(), "ws")
    assert r.resolve("main", "--base") == r.head()


def test_what_splice_writes_is_not_a_change_under_review(repo: Path) -> None:
    ws = repo / "ws"
    (ws / ".splice").mkdir()
    (ws / ".splice" / "state.db").write_text("x")
    (ws / "warehouse.duckdb").write_text("x")
    (ws / "splice-witness.json").write_text("{}")
    r = repo_of(ws)
    own = [ws / ".splice", ws / "warehouse.duckdb", ws / "splice-witness.json"]
    assert r.dirty(own) == []
    assert "ws/warehouse.duckdb" in r.dirty()  # without them named, they would count
    (ws / "models" / "a.sql").write_text("select 2 as a\n")
    assert r.dirty(own) == ["ws/models/a.sql"]


def test_changed_files_and_a_checkout_of_the_base(repo: Path) -> None:
    ws = repo / "ws"
    r = repo_of(ws)
    base = r.head()
    (ws / "models" / "a.sql").write_text("select 2 as a\n")
    git(repo, "commit", "-q", "-am", "two")
    assert r.changed_files(base, r.head()) == ["ws/models/a.sql"]
    with r.checkout(base) as old:
        assert (old / "models" / "a.sql").read_text() == "select 1 as a\n"
        tree = old.parent
    assert not tree.exists()  # the temporary work tree is gone
    assert "splice-review" not in git(repo, "worktree", "list")


def test_an_unknown_ref(repo: Path) -> None:
    with pytest.raises(ReviewError, match="--base 'nope' is not a commit"):
        repo_of(repo / "ws").resolve("nope", "--base")
