"""The peers a test needs are pytest markers, wherever the test lives: ``-m "not postgres"``
(spark, orchestrators, browser) leaves out exactly the tests that start that peer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = {
    "postgres": "tests/state/test_state_pg.py",
    "spark": "tests/warehouse/spark/test_spark_undo.py",
    "orchestrators": "tests/orchestrators/test_dagster_runner.py",
    "browser": "tests/web/test_web_layout.py",
}


def collected(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout


def test_each_peer_marker_selects_its_tests_and_leaving_it_out_leaves_none() -> None:
    files = list(PEERS.values())
    chosen = collected("-m", " or ".join(PEERS), *files)
    for marker, path in PEERS.items():
        assert f"{path}::" in chosen, f"{path} is not marked {marker}"
    left = collected("-m", "not (" + " or ".join(PEERS) + ")", *files)
    assert "::" not in left, f"tests left in when every peer is left out:\n{left}"
