"""While ``splice serve`` runs, requests escalate and expire on time and the channels are told,
with no command run by anyone; a decision over /mcp is told at once; a dead channel never
blocks a decision."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from tests.mcp.mcp_support import call
from tests.notify.notify_support import http_receiver
from tests.serve.serve_support import (
    IdentityProvider,
    free_port,
    http_session,
    running_server,
    serve_config,
)


def _wait_for(rx: Any, path: str, event: str, timeout: float) -> tuple[dict, float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for body in rx.on(path):
            if body.get("event") == event:
                return body, time.monotonic()
        time.sleep(0.1)
    raise AssertionError(
        f"no {event} within {timeout} s; got {[b.get('event') for b in rx.on(path)]}"
    )


def test_requests_escalate_and_expire_on_time_while_the_server_runs(story_copy: Path) -> None:
    toml = story_copy / "splice.toml"
    text = toml.read_text().replace(
        'approval_expiry = "4h"', 'approval_expiry = "10s"\nescalate_after = "4s"'
    )
    idp = IdentityProvider()
    port = free_port()
    dead = free_port()  # nothing listens there
    with http_receiver() as rx:
        toml.write_text(
            text
            + serve_config(port, idp)
            + f'\n[[notify]]\nname = "ops"\ntype = "webhook"\nurl = "{rx.url}/ops"\n'
            + f'\n[[notify]]\nname = "gone"\ntype = "webhook"\nurl = "http://127.0.0.1:{dead}/x"\n'
            + "timeout = 1\n"
        )
        with running_server(story_copy, port) as base:
            agent = idp.token(f"{base}/mcp", sub="ci-bot", azp="ci-bot", scope="splice:propose")

            async def propose() -> str:
                async with http_session(base, agent) as s:
                    inc = (await call(s, "list_incidents"))["incidents"][0]["id"]
                    return (await call(s, "propose_repair", incident_id=inc))["proposal_id"]

            t0 = time.monotonic()
            pid = anyio.run(propose)
            asked, t_asked = _wait_for(rx, "/ops", "proposal_requested", 10)
            assert asked["proposal_id"] == pid and asked["actor"] == "ci-bot"
            assert t_asked - t0 < 8, "a decision over /mcp is told at once, not at the next pass"
            escalated, t_esc = _wait_for(rx, "/ops", "request_escalated", 20)
            assert t_esc - t0 >= 4 - 0.5, "not before its time"
            expired, t_exp = _wait_for(rx, "/ops", "request_expired", 30)
            assert t_exp - t0 >= 10 - 0.5
            assert escalated["proposal_id"] == expired["proposal_id"] == pid
    idp.close()
