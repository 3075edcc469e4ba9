"""The git side of a review: where the repository is, what the refs are, and a checkout of one.

Every call runs the ``git`` command line (no library), in the workspace's directory, and turns
its failures into :class:`~splice.errors.ReviewError` naming the fix.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from splice.errors import ReviewError


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("git") is None:
        raise ReviewError(
            "splice review needs the git command line, and it is not on PATH.",
            fix="install git (e.g. apt-get install git)",
        )
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


@dataclass(frozen=True)
class Repo:
    """The git repository a workspace is in: ``top`` (its work tree) and ``subdir`` (the
    workspace's path inside it, ``.`` at the top)."""

    top: Path
    subdir: str

    def resolve(self, ref: str, what: str) -> str:
        """The commit ``ref`` names (``what``: "--base" or "--head", for the error)."""
        res = _git(self.top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if res.returncode != 0 or not res.stdout.strip():
            raise ReviewError(
                f"{what} {ref!r} is not a commit of the repository at {self.top}.",
                fix="name a branch, tag or commit that exists there (git branch -a; git log); "
                "in CI, fetch it first (git fetch origin main, or checkout with fetch-depth: 0)",
            )
        return res.stdout.strip()

    def head(self) -> str:
        return self.resolve("HEAD", "HEAD")

    def dirty(self, own: list[Path] | None = None) -> list[str]:
        """Uncommitted changes in the workspace's part of the tree (``git status --porcelain``),
        untracked files included; ignored files are not changes, nor are ``own`` (what Splice
        itself writes in the workspace: its state, the witness, a DuckDB warehouse file)."""
        excludes = []
        for path in own or []:
            try:
                rel = path.resolve().relative_to(self.top).as_posix()
            except ValueError:
                continue  # outside the repository
            excludes.append(f":(exclude){rel}")
        res = _git(
            self.top,
            "status",
            "--porcelain",
            "--untracked-files=normal",
            "--",
            self.subdir,
            *excludes,
        )
        if res.returncode != 0:
            raise ReviewError(f"git status failed in {self.top}: {res.stderr.strip()}")
        return [line[3:] for line in res.stdout.splitlines() if line.strip()]

    def changed_files(self, base: str, head: str) -> list[str]:
        """Files of the workspace that differ between two commits (paths from the top)."""
        res = _git(self.top, "diff", "--name-only", base, head, "--", self.subdir)
        if res.returncode != 0:
            raise ReviewError(f"git diff failed in {self.top}: {res.stderr.strip()}")
        return [line for line in res.stdout.splitlines() if line.strip()]

    def subject(self, commit: str) -> str:
        res = _git(self.top, "log", "-1", "--format=%s", commit)
        return res.stdout.strip()

    @contextmanager
    def checkout(self, commit: str) -> Iterator[Path]:
        """A detached, temporary work tree of ``commit``; yields the workspace's directory in
        it and removes the work tree afterwards."""
        parent = Path(tempfile.mkdtemp(prefix="splice-review-"))
        tree = parent / "tree"
        res = _git(self.top, "worktree", "add", "--detach", "--force", str(tree), commit)
        if res.returncode != 0:
            shutil.rmtree(parent, ignore_errors=True)
            raise ReviewError(
                f"could not check out {commit[:12]} into a temporary work tree: "
                f"{res.stderr.strip().splitlines()[-1] if res.stderr.strip() else 'git failed'}",
                fix="check `git worktree list` and `git worktree prune` in the repository",
            )
        try:
            yield tree / self.subdir if self.subdir != "." else tree
        finally:
            _git(self.top, "worktree", "remove", "--force", str(tree))
            shutil.rmtree(parent, ignore_errors=True)
            _git(self.top, "worktree", "prune")


def repo_of(workspace: Path) -> Repo:
    """The repository ``workspace`` is in, or a :class:`ReviewError` saying it is in none."""
    res = _git(workspace, "rev-parse", "--show-toplevel")
    if res.returncode != 0:
        raise ReviewError(
            f"the workspace {workspace} is not in a git repository: a review compares two "
            "commits of it.",
            fix="run splice review in a clone of the repository (git init; git add; git commit "
            "to start one)",
        )
    top = Path(res.stdout.strip()).resolve()
    sub = workspace.resolve().relative_to(top).as_posix() or "."
    return Repo(top, sub)
