"""Bad input to splice review: each a one-line error naming the fix, exit 2, nothing built."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.review.conftest import review_cli as cli

from splice.errors import ReviewError
from splice.review import review


def test_a_base_ref_that_does_not_exist(repo: Path) -> None:
    res = cli(repo, "--base", "origin/nope")
    assert res.returncode == 2
    assert "--base 'origin/nope' is not a commit of the repository" in res.stderr
    assert "git fetch" in res.stderr and "Traceback" not in res.stderr


def test_a_dirty_tree_is_refused_before_anything_runs(checkout: Callable[[str], Path]) -> None:
    repo = checkout("markup")
    model = repo / "pricing/models/fx/daily_rates.sql"
    model.write_text(model.read_text() + "\n-- not committed\n")
    (repo / "scratch.sql").write_text("select 1\n")
    res = cli(repo, "--base", "main")
    assert res.returncode == 2
    assert "uncommitted changes (pricing/models/fx/daily_rates.sql, scratch.sql)" in res.stderr
    assert "git stash -u" in res.stderr
    (repo / "scratch.sql").unlink()


def test_a_workspace_not_under_git(demo_workspace: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(demo_workspace / "splice.toml", plain / "splice.toml")
    res = cli(plain, "--base", "main")
    assert res.returncode == 2
    assert "is not in a git repository" in res.stderr and "git init" in res.stderr


def test_head_must_be_the_checked_out_commit(repo: Path) -> None:
    with pytest.raises(ReviewError, match="--head 'markup' is not the checked-out commit"):
        review(repo, base="main", head="markup")


def test_the_review_target_must_not_be_prod(checkout: Callable[[str], Path]) -> None:
    repo = checkout("markup")
    with pytest.raises(ReviewError, match="is the prod target"):
        review(repo, base="main", target="prod")
    with pytest.raises(ReviewError, match="'staging' is not defined"):
        review(repo, base="main", target="staging")


def test_same_commit_reviews_nothing(repo: Path) -> None:
    r = review(repo, base="main")
    assert r.changes == [] and r.build == [] and r.data is None
    assert "no file of the workspace differs" in r.notes[0]
