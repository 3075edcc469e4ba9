"""Real servers for the ``splice serve`` tests, all on 127.0.0.1: Splice itself (``splice
serve`` as a child process), an identity provider's JWKS endpoint with keys made in the test,
and MCP client sessions over streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from tests.cli_runner import run_cli
from tests.mcp.mcp_support import child_env, modern_client


def splice(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``splice -w WS ARGS...`` (:mod:`tests.cli_runner`; output captured)."""
    return run_cli(["-w", str(ws), *args], env=child_env())


def make_key(ws: Path, name: str, kind: str, scopes: str) -> str:
    """An API key for ``name``, made as ``splice keys create`` makes it (by the operating-system
    user), in this process: the command itself is tested in tests/repair/test_identities.py."""
    from splice import api

    with api.open_workspace(ws) as w:
        _rec, raw = api.create_key(w, name=name, kind=kind, scopes=scopes)
    return raw


def server_decides(ws: Path) -> str:
    """``[policy] decisions = "server"`` with the server's own key listed: every decision is
    made through the server and signed by it (returns the key)."""
    r = splice(ws, "audit-log", "server-key")
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip()
    toml = ws / "splice.toml"
    text = toml.read_text()
    assert "[policy]\n" in text
    toml.write_text(
        text.replace("[policy]\n", f'[policy]\ndecisions = "server"\nserver_keys = ["{key}"]\n', 1)
    )
    return key


ISSUER = "https://idp.test.example"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class IdentityProvider:
    """Signing keys made here, published as a JWKS by a stdlib HTTP server on 127.0.0.1."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}
        self.published: list[str] = []
        self.fetches = 0
        self.add_key("k1")
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                provider.fetches += 1
                body = json.dumps(provider.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def add_key(self, kid: str, *, publish: bool = True) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid in self.published:
            jwk = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            out.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": out}

    def token(
        self,
        audience: str,
        *,
        kid: str = "k1",
        email: str = "maria@example.com",
        scope: str = "splice:approve",
        issuer: str = ISSUER,
        expires_in: int = 600,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        body = {
            "iss": issuer, "aud": audience, "sub": email.split("@")[0], "email": email,
            "scope": scope, "iat": now, "exp": now + expires_in, **claims,
        }  # fmt: skip
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def served_copy(src: Path, dest: Path) -> tuple[Path, IdentityProvider, int]:
    """A copy of workspace ``src`` at ``dest``, set up for ``splice serve`` on a free port with
    a test identity provider: (workspace, provider, port)."""
    import shutil

    from splice.demo import relocate

    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)
    idp = IdentityProvider()
    port = free_port()
    with (dest / "splice.toml").open("a") as f:
        f.write(serve_config(port, idp))
    return dest, idp, port


class Served:
    """A running ``splice serve`` of a workspace: its URL, identity provider and API keys."""

    def __init__(self, ws: Path, base: str, idp: IdentityProvider, keys: dict[str, str],
                 protocol: str = "legacy"):  # fmt: skip
        self.ws, self.base, self.idp, self.keys = ws, base, idp, keys
        self.audience = f"{base}/mcp"
        self.protocol = protocol

    def session(self, token: str | None, client: str = "test") -> Any:
        """A client session of this server (an async context manager) in its protocol."""
        return http_session(self.base, token, client, self.protocol)

    def post(self, token: str | None) -> tuple[int, dict[str, str]]:
        """One raw MCP POST in this server's protocol: the HTTP status and headers."""
        return raw_post(self.base, token, self.protocol)

    def token(self, **kw: Any) -> str:
        """A token of the identity provider for this server's /mcp."""
        return self.idp.token(self.audience, **kw)


def serve_config(port: int, idp: IdentityProvider | None) -> str:
    lines = ["", "[serve]", f"port = {port}", "housekeeping_seconds = 1"]
    if idp is not None:
        lines += [
            "[serve.auth.oauth]",
            f'issuer = "{ISSUER}"',
            f'jwks_url = "{idp.url}"',
            "refetch_interval = 0.5",
            'name_claim = "sub"',
            'agent_clients = ["ci-bot"]',
        ]
    return "\n".join(lines) + "\n"


@contextmanager
def running_server(
    workspace: Path, port: int, *, timeout: float = 180.0, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``splice serve`` on 127.0.0.1:port for the block; yields its base URL (``env``: more
    environment for the server; its output is appended to ``serve.log``)."""
    log = open(workspace / "serve.log", "a")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "splice", "--workspace", str(workspace), "serve"],
        env={**child_env(), **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError((workspace / "serve.log").read_text())
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError((workspace / "serve.log").read_text())
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@asynccontextmanager
async def http_session(
    base: str, token: str | None, client: str = "test", protocol: str = "legacy"
) -> AsyncIterator[Any]:
    """A client of ``base``/mcp with ``token``, speaking ``protocol`` (see
    :data:`tests.mcp.mcp_support.PROTOCOLS`)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if protocol == "modern":
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            modern_client(streamable_http_client(f"{base}/mcp", http_client=http), client) as c,
        ):
            yield c
        return
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(
            read, write, client_info=Implementation(name=client, version="1.0")
        ) as session,
    ):
        await session.initialize()
        yield session


def raw_post(base: str, token: str | None, protocol: str = "legacy") -> tuple[int, dict[str, str]]:
    """One MCP POST with ``token`` (or none): the legacy protocol's ``initialize``, or the
    modern one's self-contained ``tools/call``; the HTTP status and headers."""
    body: dict[str, Any] = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }  # fmt: skip
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if protocol == "modern":
        from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
        from mcp_types.version import LATEST_MODERN_VERSION

        meta = {PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION, CLIENT_CAPABILITIES_META_KEY: {}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_incidents", "arguments": {}, "_meta": meta}}  # fmt: skip
        headers.update({"MCP-Protocol-Version": LATEST_MODERN_VERSION,
                        "Mcp-Method": "tools/call", "Mcp-Name": "list_incidents"})  # fmt: skip
    if token:
        headers["Authorization"] = f"Bearer {token}"
    with httpx2.Client(timeout=30) as c:
        r = c.post(f"{base}/mcp", json=body, headers=headers)
        return r.status_code, dict(r.headers)
