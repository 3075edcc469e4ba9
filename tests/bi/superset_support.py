"""A real Apache Superset for the tests (``make superset``'s environment): where its command
is, the marker that skips a module without it, and a started, seeded one over a copy of the
demo's warehouse (stopped when the module is done)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from splice.bi.superset_local import server, stop
from splice.bi.superset_seed import BAR_CHART, LINE_CHART, seed_demo
from splice.orchestrators.local_server import ensure_running
from splice.support.procs import quiet_local_starts
from splice.warehouse.postgres.local_server import free_port

# Superset has an environment of its own (`make superset`); `make test` names it, and so does
# this for a pytest run started by hand (as tests/conftest.py does for Airflow).
_SUPERSET = Path(__file__).resolve().parents[2] / ".venv-superset" / "bin" / "superset"
if _SUPERSET.exists():
    os.environ.setdefault("SPLICE_SUPERSET", str(_SUPERSET))

#: skips a module when no Superset is installed, unless SPLICE_REQUIRE_SUPERSET says it must be
needs_superset = pytest.mark.skipif(
    not _SUPERSET.exists()
    and not os.environ.get("SPLICE_SUPERSET")
    and not os.environ.get("SPLICE_REQUIRE_SUPERSET"),
    reason="no .venv-superset (`make superset` builds it; SPLICE_REQUIRE_SUPERSET=1 makes "
    "its absence a failure)",
)

USER, PASSWORD = "admin", "splice-test"


@dataclass
class Served:
    url: str
    home: Path
    warehouse: Path
    seeded: dict[str, Any]

    @property
    def charts(self) -> list[int]:
        return [self.seeded["charts"][LINE_CHART], self.seeded["charts"][BAR_CHART]]


@contextmanager
def seeded_superset(warehouse: Path, root: Path) -> Iterator[Served]:
    """Superset serving a copy of ``warehouse`` (never the file itself) from ``root``, seeded
    with the demo's GMV dashboard; stopped at the end, whatever happened."""
    copy = root / "warehouse.duckdb"
    shutil.copy2(warehouse, copy)
    url, home = f"http://127.0.0.1:{free_port()}", root / "home"
    srv = server(url, home, admin_user=USER, admin_password=PASSWORD)
    try:
        with quiet_local_starts():
            ensure_running(srv)
        yield Served(url, home, copy, seed_demo(url, USER, PASSWORD, copy))
    finally:
        stop(home)
