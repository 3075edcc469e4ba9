from __future__ import annotations

import shutil
from pathlib import Path

import anyio
from tests.mcp_server.mcp_support import call
from tests.serve.serve_support import (
    IdentityProvider,
    free_port,
    http_session,
    raw_post,
    running_server,
    serve_config,
)

from splice.demo import relocate


def test_quick(stale_demo_build, tmp_path: Path) -> None:
    ws = tmp_path / "travel"
    shutil.copytree(stale_demo_build.workspace, ws, symlinks=True)
    relocate(ws)
    idp = IdentityProvider()
    port = free_port()
    with (ws / "splice.toml").open("a") as f:
        f.write(serve_config(port, idp))
    with running_server(ws, port) as base:
        aud = f"{base}/mcp"
        print(raw_post(base, None))
        print(raw_post(base, idp.token(aud, audience_wrong=1)))
        print(raw_post(base, idp.token("https://other/mcp")))

        async def main() -> None:
            async with http_session(base, idp.token(aud)) as s:
                print(await call(s, "list_incidents"))

        anyio.run(main)
    idp.close()
