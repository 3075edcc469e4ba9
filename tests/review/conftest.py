"""A git repository made from the built demo: the base commit on main, and one branch per
change a pull request makes (each a commit on top of main)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.cli_runner import run_cli

from splice.demo import relocate


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=CI", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.strip()


def review_cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``splice -w REPO review ARGS`` (:mod:`tests.cli_runner`)."""
    return run_cli(["-w", str(repo), "review", *args])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


#: branch -> (files to edit: path, old, new), commit message
CHANGES: dict[str, tuple[list[tuple[str, str, str]], str]] = {
    # (a) logic of fx.daily_rates: a 1% markup on every rate (breaking, reaches GMV)
    "markup": (
        [
            (
                "pricing/models/fx/daily_rates.sql",
                "rate_to_usd::DOUBLE AS rate_to_usd",
                "rate_to_usd::DOUBLE * 1.01 AS rate_to_usd",
            )
        ],
        "Add a 1% markup to the USD rates",
    ),
    # (b) a new column on a dbt model (non-breaking: no data downstream changes)
    "new-column": (
        [
            (
                "finance/models/marts/fct_gmv_qtd.sql",
                "    bookings,\n",
                "    bookings,\n    bookings * 2 as bookings_doubled,\n",
            )
        ],
        "fct_gmv_qtd: add bookings_doubled",
    ),
    # (c) descriptions only, in both tools (metadata: nothing to build)
    "docs": (
        [
            (
                "pricing/models/fx/daily_rates.sql",
                "description 'ECB reference rates in US dollars per unit",
                "description 'ECB reference rates in USD per unit",
            ),
            (
                "finance/models/sources.yml",
                "description: GMV per day and currency (SQLMesh",
                "description: Daily GMV per currency (SQLMesh",
            ),
        ],
        "Reword two descriptions",
    ),
    # (d) a dbt model alone: its sources are pricing's, which the change leaves alone; the model
    # has no key of its own (its table upstream has a grain)
    "staging": (
        [
            (
                "finance/models/staging/stg_gmv_daily.sql",
                "    gmv_usd\n",
                "    gmv_usd * 1.01 as gmv_usd\n",
            )
        ],
        "stg_gmv_daily: a 1% markup on GMV in USD",
    ),
    # (e) a dbt model whose build fails on the head: nothing downstream of it is built
    "staging-broken": (
        [
            (
                "finance/models/staging/stg_gmv_daily.sql",
                "    gmv_usd\n",
                "    gmv_usd_net as gmv_usd\n",
            )
        ],
        "stg_gmv_daily: GMV net of fees (a column the source does not have)",
    ),
}


@pytest.fixture(scope="module")
def repo(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo under git: main holds it as built; each branch of CHANGES adds one commit.
    Tests switch branches (``checkout``); the work tree is left on main."""
    dest = tmp_path_factory.mktemp("review") / "travel"
    shutil.copytree(demo_workspace, dest, symlinks=True)
    relocate(dest)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "The travel marketplace")
    for branch, (edits, message) in CHANGES.items():
        git(dest, "switch", "-q", "-c", branch, "main")
        for rel, old, new in edits:
            edit(dest / rel, old, new)
        git(dest, "commit", "-q", "-am", message)
    git(dest, "switch", "-q", "main")
    assert git(dest, "status", "--porcelain") == ""
    return dest


@pytest.fixture
def checkout(repo: Path) -> Callable[[str], Path]:
    def switch(branch: str) -> Path:
        git(repo, "switch", "-q", branch)
        return repo

    yield switch
    git(repo, "switch", "-q", "--discard-changes", "main")
