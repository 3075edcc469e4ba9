"""Fixture projects (tests/fixtures/projects/), copied into a temporary directory and built
with the real tools on real DuckDB files.  Nothing is ever written into the repository.

Building is the expensive part (dbt parse ~2-3 s, dbt build ~3 s, a SQLMesh plan ~1 s), so
each project is built once per session and its graph loaded once; tests read from those.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_projects import Loaded, copy_fixture, cwd, dbt


# -- jaffle_dbt ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def jaffle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of jaffle_dbt with its local package installed (dbt 1.11 needs `dbt deps` even
    for a `local:` package) and built with `dbt build` (seeds, snapshot, models, tests)."""
    root = copy_fixture("jaffle_dbt", tmp_path_factory.mktemp("jaffle"))
    dbt(root, "deps")
    dbt(root, "build")
    return root


@pytest.fixture(scope="session")
def jaffle(jaffle_dir: Path) -> Loaded:
    return Loaded(jaffle_dir)


# -- shop_sqlmesh --------------------------------------------------------------------------------
SHOP_EXECUTION_TIME = "2024-01-05"  # the data covers 2024-01-01 .. 2024-01-03


@pytest.fixture(scope="session")
def shop_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of shop_sqlmesh, planned and applied to prod (the clock pinned to the data)."""
    from sqlmesh import Context

    root = copy_fixture("shop_sqlmesh", tmp_path_factory.mktemp("shop"))
    with cwd(root):
        ctx = Context(paths=str(root))
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time=SHOP_EXECUTION_TIME)
        finally:
            ctx.close()
    return root


@pytest.fixture(scope="session")
def shop(shop_dir: Path) -> Loaded:
    return Loaded(shop_dir)


# -- federated -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def federated_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_fixture("federated", tmp_path_factory.mktemp("federated"))


@pytest.fixture(scope="session")
def federated(federated_dir: Path) -> Loaded:
    return Loaded(federated_dir, target="prod")


@pytest.fixture(scope="session")
def federated_dev(federated_dir: Path) -> Loaded:
    return Loaded(federated_dir, target="dev")


# -- versioned_dbt -------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def shopv_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of versioned_dbt built by hand with `dbt build` (the reference for Splice)."""
    root = copy_fixture("versioned_dbt", tmp_path_factory.mktemp("shopv"))
    dbt(root, "build")
    return root


@pytest.fixture(scope="session")
def shopv(shopv_dir: Path) -> Loaded:
    return Loaded(shopv_dir)
