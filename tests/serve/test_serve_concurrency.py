"""The server keeps answering while ``splice run`` writes the warehouse, and never holds
DuckDB's single-writer lock between requests (the run succeeds)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
from tests.mcp.mcp_support import call, child_env
from tests.serve.serve_support import (
    IdentityProvider,
    free_port,
    http_session,
    running_server,
    serve_config,
)


@contextmanager
def reader_server(workspace: Path) -> Iterator[tuple[str, str]]:
    """``splice serve`` on the workspace; yields its URL and a read-only person's token."""
    idp = IdentityProvider()
    port = free_port()
    with (workspace / "splice.toml").open("a") as f:
        f.write(serve_config(port, idp))
    try:
        with running_server(workspace, port) as base:
            yield base, idp.token(f"{base}/mcp", sub="rita", scope="splice:read")
    finally:
        idp.close()


def test_reads_keep_answering_during_a_run(story_copy: Path) -> None:
    with reader_server(story_copy) as (base, token):

        async def main() -> tuple[int, int, list[float]]:
            async with http_session(base, token) as s:
                await call(s, "list_incidents")  # warm
                run = subprocess.Popen(
                    [sys.executable, "-m", "splice", "-w", str(story_copy), "run", "--full"],
                    env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )  # fmt: skip
                answered, latencies = 0, []
                while run.poll() is None:
                    t0 = time.perf_counter()
                    incs = await call(s, "list_incidents")
                    lin = await call(
                        s, "get_column_lineage", column="marts.agg_gmv_daily.gmv_usd",
                        direction="up",
                    )  # fmt: skip
                    runs = await call(s, "list_runs", limit=3)
                    latencies.append(time.perf_counter() - t0)
                    assert incs["count"] == 1 and lin and runs["count"] >= 1
                    answered += 1
                    await anyio.sleep(0.05)
                out = run.communicate()[0]
                assert run.returncode == 0, out
                return answered, run.returncode, latencies

        answered, code, latencies = anyio.run(main)
    assert code == 0
    assert answered >= 3, "the server answered during the run"


def test_the_graph_is_loaded_once_and_reloaded_when_a_project_changes(story_copy: Path) -> None:
    import httpx2

    with reader_server(story_copy) as (base, token):

        async def search(q: str) -> list[str]:
            async with http_session(base, token) as s:
                return [n["id"] for n in (await call(s, "search_nodes", query=q))["nodes"]]

        assert anyio.run(search, "gmv")
        assert anyio.run(search, "gmv")
        loads = httpx2.get(f"{base}/healthz").json()["graph_loads"]
        assert loads == 1, "one load at start, reused by every request"
        assert "finance:fct_refunds_probe" not in anyio.run(search, "refunds_probe")

        model = story_copy / "finance" / "models" / "marts" / "fct_refunds_probe.sql"
        model.write_text("select 1 as refund_id, 2.5 as refunds_probe_usd\n")
        time.sleep(1.5)  # [serve] recheck_seconds is 1
        found = anyio.run(search, "refunds_probe")
        assert found and found[0] == "finance:fct_refunds_probe", found
        assert httpx2.get(f"{base}/healthz").json()["graph_loads"] == 2
