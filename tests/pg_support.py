"""A real PostgreSQL server for the tests: started once per test session on 127.0.0.1, in a
temporary directory, and stopped when the session ends (:class:`splice.warehouse.postgres.local_server.LocalPostgres`,
the machine's own PostgreSQL). When the machine has none, Debian's ``postgresql`` package is
installed (as root; otherwise the tests fail saying the command to run).

Fixtures (registered in tests/conftest.py):

- ``pg_server``: the running server (a password is required over TCP: ``PG_PASSWORD``).
- ``pg_url``: a new, empty database of that server for one test, as a URL with the password.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.debian_support import apt_install

from splice.warehouse.postgres.local_server import LocalPostgres, find_bindir

PG_PASSWORD = "splice-test-pw"


def ensure_postgres() -> Path:
    """The directory of initdb/pg_ctl, installing Debian's PostgreSQL when there is none."""
    found = find_bindir()
    if found:
        return found
    apt_install("postgresql")
    found = find_bindir()
    if found is None:
        pytest.fail("apt-get installed postgresql, but no initdb/pg_ctl was found after it")
    return found


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    ensure_postgres()
    # not under pytest's own (0700) temporary directories: the server's user must reach it
    base = Path(tempfile.mkdtemp(prefix="splice-pg-"))
    base.chmod(0o755)
    server = LocalPostgres(base / "data", password=PG_PASSWORD).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: LocalPostgres) -> str:
    """A new database of the session's server, for this test alone."""
    return pg_server.create_database(f"t_{uuid.uuid4().hex[:12]}")
