"""``splice serve`` refuses an address it cannot listen on at once, in one line, before the
workspace's graph loads; and ``GET /mcp`` on the stateless MCP endpoint is answered 405 at once
instead of holding a stream open. Real ``splice serve`` processes on 127.0.0.1."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from tests.serve.serve_support import make_key, running_server, served_copy, splice


@pytest.fixture(scope="module")
def served_ws(demo_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    tuple[Path, int]
]:  # fmt: skip
    """A copy of the demo set up for ``splice serve`` on a free port: (workspace, port)."""
    ws, idp, port = served_copy(demo_workspace, tmp_path_factory.mktemp("start") / "travel")
    yield ws, port
    idp.close()


def _one_red_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ") and "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("256.1.1.1", "--host '256.1.1.1' is not a valid IP address"),
        ("10.1.300.4", "--host '10.1.300.4' is not a valid IP address"),
        ("no-such-host.invalid", "--host 'no-such-host.invalid' is neither an IP address nor"),
    ],
)
def test_a_host_it_cannot_listen_on_is_one_line_naming_host(
    served_ws: tuple[Path, int], host: str, says: str
) -> None:
    ws, port = served_ws
    r = splice(ws, "serve", "--host", host, "--port", str(port))
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = _one_red_line(r.stderr)
    assert says in line and "Fix:" in line
    assert "Serving" not in r.stdout and "ValidationError" not in line


def test_a_host_in_splice_toml_is_checked_the_same_way(served_ws: tuple[Path, int]) -> None:
    ws, _ = served_ws
    toml = ws / "splice.toml"
    before = toml.read_text()
    toml.write_text(before.replace("[serve]\n", '[serve]\nhost = "256.1.1.1"\n', 1))
    try:
        r = splice(ws, "serve")
    finally:
        toml.write_text(before)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "[serve] host (splice.toml) '256.1.1.1' is not a valid IP address" in _one_red_line(
        r.stderr
    )


def test_a_busy_port_is_refused_before_the_workspace_loads(served_ws: tuple[Path, int]) -> None:
    ws, port = served_ws
    with socket.socket() as busy:  # another process's server holds the port
        busy.bind(("127.0.0.1", port))
        busy.listen()
        t0 = time.monotonic()
        r = splice(ws, "serve", "--port", str(port))
        took = time.monotonic() - t0
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = _one_red_line(r.stderr)
    assert f"--port {port}: the port is in use on 127.0.0.1 by another process" in line
    assert "Serving" not in r.stdout  # refused before it said it serves, and before the graph
    assert took < 30, took
    # from splice.toml's [serve] port, the line says so
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        r = splice(ws, "serve")
    assert r.returncode == 2 and f"[serve] port (splice.toml) {port}: the port is in use" in (
        _one_red_line(r.stderr)
    )


def test_get_mcp_is_405_at_once(served_ws: tuple[Path, int]) -> None:
    ws, port = served_ws
    key = make_key(ws, "rita", "person", "read")
    with running_server(ws, port) as base, httpx2.Client(timeout=10) as http:
        for headers in (
            {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
            {"Accept": "text/event-stream"},
            {},
        ):
            t0 = time.monotonic()
            r = http.get(f"{base}/mcp", headers=headers)  # a hang fails on the timeout
            assert time.monotonic() - t0 < 5
            assert r.status_code == 405, (headers, r.status_code, r.text)
            assert r.headers["allow"] == "POST"
            assert "POST" in r.text and len(r.text) < 200
        # and a POST still reaches the MCP app (which asks for credentials)
        assert http.post(f"{base}/mcp", json={}).status_code == 401
