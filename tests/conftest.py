"""Shared fixtures: the demo workspace, built once per test session with the real tools."""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.pg_support import pg_server, pg_url  # noqa: F401  (fixtures)

from splice.demo import DemoResult, build_demo, relocate

# Code locations and DAG files that real orchestrators load (Airflow's import only in Airflow's
# own environment): fixtures, never test modules.
collect_ignore_glob = ["fixtures/*"]

#: The peer a test needs, by a fixture it uses (directly or through another fixture): the test
#: gets the marker, so `pytest -m "not spark"` (or postgres) leaves those out wherever they live.
#: Tests that start Dagster or Airflow, or headless Chromium, are marked in their module
#: (``orchestrators``, ``browser``).
MARKED_BY_FIXTURE = {"pg_server": "postgres", "spark_server": "spark"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in MARKED_BY_FIXTURE.items():
            if fixture in used:
                item.add_marker(marker)


# Airflow has an environment of its own (`make airflow`); `make test` names it, and so does
# this for a pytest run started by hand.
_AIRFLOW = Path(__file__).resolve().parents[1] / ".venv-airflow" / "bin" / "airflow"
if _AIRFLOW.exists():
    os.environ.setdefault("SPLICE_AIRFLOW", str(_AIRFLOW))


T = TypeVar("T")


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """``build(directory)`` once for the whole session, not once per xdist worker: the first
    worker to ask builds it in the directory the workers share (under a file lock), and each
    worker reads its own copy (relocated), so no two processes ever open the same warehouse.
    Paths in the result that pointed into the build point into the worker's copy."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(factory.mktemp(name) / "travel")
    from filelock import FileLock

    shared = factory.getbasetemp().parent / f"built-{name}"
    done = shared / "result.pickle"
    with FileLock(f"{shared}.lock"):
        if not done.exists():
            result = build(shared / "travel")
            done.write_bytes(pickle.dumps(result))
    mine = factory.mktemp(name) / "travel"
    shutil.copytree(shared / "travel", mine, symlinks=True)
    relocate(mine)
    return _moved(pickle.loads(done.read_bytes()), str(shared / "travel"), str(mine))


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with every path (or string) under ``old`` moved under ``new``, in place."""
    if isinstance(value, Path):
        return Path(new + str(value)[len(old) :]) if str(value).startswith(old) else value
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, list):
        value[:] = [_moved(v, old, new) for v in value]
    elif isinstance(value, dict):
        for k in list(value):
            value[k] = _moved(value[k], old, new)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            object.__setattr__(value, f.name, _moved(getattr(value, f.name), old, new))
    return value


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    """The result of building the demo (Q3 2026, no incident) once for the whole session."""
    return built_once(tmp_path_factory, "demo", build_demo)


@pytest.fixture(scope="session")
def demo_workspace(demo_build: DemoResult) -> Path:
    """The built demo workspace.  Shared by every test: read it, never modify it
    (use ``fresh_demo`` for a copy you may change)."""
    return demo_build.workspace


@pytest.fixture
def fresh_demo(demo_workspace: Path, tmp_path: Path) -> Path:
    """A private copy of the built demo workspace (warehouse included), safe to modify."""
    dest = tmp_path / "travel"
    shutil.copytree(demo_workspace, dest, symlinks=True)
    relocate(dest)  # dbt's profile holds the warehouse's absolute path
    return dest


@pytest.fixture(scope="session")
def stale_demo_build(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    """The demo built with the vendor serving Friday's rates on 2026-09-28 and 29 (read-only)."""
    return built_once(tmp_path_factory, "stale", lambda d: build_demo(d, incident="stale-rates"))


@pytest.fixture(scope="session")
def stale_story(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The demo's stale-rates story told once (clean quarter baselined, the vendor frozen on
    2026-09-28 and 29, production run on, watched: incident INC-1 open). Read it, never modify
    it."""
    from splice.demo.story import tell_stale_rates

    return built_once(tmp_path_factory, "stale_story", tell_stale_rates)


@pytest.fixture
def story_copy(stale_story: Any, tmp_path: Path) -> Path:
    """A private copy of ``stale_story``'s workspace (INC-1 open), safe to modify."""
    dest = tmp_path / "travel"
    shutil.copytree(stale_story.build.workspace, dest, symlinks=True)
    relocate(dest)
    return dest


@pytest.fixture(scope="session")
def friday_story(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The Friday freeze told once per session (clean through Thursday 2026-09-24, Thursday's
    rates served for Friday, run on to the quarter's end, watched: one incident). Read it,
    never modify it (copy it)."""
    from splice.demo.story import tell_friday_freeze

    return built_once(tmp_path_factory, "friday", tell_friday_freeze)


@pytest.fixture(scope="session")
def baselined_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean demo up to Sunday 2026-09-27, baselined with no anomaly, built once per session
    (read it, never modify it: copy it and relocate the copy)."""
    from splice import api
    from splice.demo.story import CLEAN_THROUGH

    def build(ws_dir: Path) -> Path:
        build_demo(ws_dir, through=CLEAN_THROUGH)
        with api.open_workspace(ws_dir) as ws:
            assert api.watch(ws, backfill=True).anomalies == []
        return ws_dir

    return built_once(tmp_path_factory, "baselined", build)
