"""One Spark Connect server for the Spark tests (a JVM: about 5 s to start, 1 GB), started on
127.0.0.1 by the first test that needs it and stopped when the session ends; its catalog is
kept in memory (a Derby metastore would cost a quarter of the JVM's CPU, and the server is
never restarted). Every client, in
this process or a CLI subprocess, reaches it through ``sc://127.0.0.1:PORT``.

A test that uses ``spark_server`` is marked ``spark`` (tests/conftest.py): ``pytest -m "not spark"``
skips them while iterating.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.warehouse.spark.spark_support import copy_shop

from splice.warehouse.spark.local_server import LocalSpark


@pytest.fixture(scope="session")
def spark_server() -> Iterator[LocalSpark]:
    base = Path(tempfile.mkdtemp(prefix="splice-spark-"))
    # its catalog in memory: the server lives as long as the session (no restart to outlive)
    server = LocalSpark(base, catalog="in-memory").start()
    try:
        yield server
    finally:
        from splice.warehouse.spark.connect import stop_client_sessions

        stop_client_sessions()  # the tools' sessions in this process, before their server goes
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def shop(spark_server: LocalSpark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh copy of the spark_shop fixture (not built), pointed at the tests' server; its
    Spark schemas are dropped afterwards, so modules do not see each other's tables."""
    ws = copy_shop(tmp_path_factory.mktemp("spark") / "shop", spark_server.remote)
    yield ws
    spark_server.drop_schemas()
