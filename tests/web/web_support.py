"""The web page's tests: a served copy of the stale-rates demo (INC-1 open, the vendor's feed
fixed so a repair can reload good rates), API keys for its people and its agent, and a page
client that signs in and posts forms with the page's own CSRF token.

People in the demo: maria and sam own the ``pricing`` domain (the repair's origin), lee owns
``finance`` (whose dbt models the repair rebuilds: every domain a repair touches approves it),
ana owns neither (a non-owner with the approve scope), rita may only read; ``ci-agent`` is an
agent that reads and proposes.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from tests.serve.serve_support import free_port, make_key, running_server, splice  # noqa: F401

from splice.demo import relocate

PEOPLE = {
    "agent": ("ci-agent", "agent", "read,propose"),
    "maria": ("maria", "person", "read,propose,approve"),
    "sam": ("sam", "person", "read,propose,approve"),
    "lee": ("lee", "person", "read,propose,approve"),
    "ana": ("ana", "person", "read,propose,approve"),
    "rita": ("rita", "person", "read"),
}


def web_workspace(stale_story: Any, dest: Path, *, extra_toml: str = "") -> Path:
    """A private copy of the told stale-rates story (INC-1 open), its vendor fixed."""
    from splice.demo.vendor import set_incident

    shutil.copytree(stale_story.build.workspace, dest, symlinks=True)
    relocate(dest)
    set_incident(dest, None)
    if extra_toml:
        with (dest / "splice.toml").open("a") as f:
            f.write(extra_toml)
    return dest


@dataclass
class Site:
    ws: Path
    base: str
    keys: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None = None) -> PageClient:
        c = PageClient(self.base)
        if who is not None:
            c.signin(self.keys[who])
        return c

    def written(self) -> tuple[int, int, int]:
        """(audit-log entries, proposals, decisions): what a refused request must not change."""
        import sqlite3

        con = sqlite3.connect(self.ws / ".splice" / "state.db")
        try:
            return tuple(  # type: ignore[return-value]
                con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("repair_audit_log", "repair_proposals", "repair_decisions")
            )
        finally:
            con.close()


@contextmanager
def served_site(ws: Path, *, people: tuple[str, ...] = tuple(PEOPLE)) -> Iterator[Site]:
    """``splice serve`` on the workspace (API keys on), with a key for each of ``people``."""
    port = free_port()
    with (ws / "splice.toml").open("a") as f:
        f.write(f"\n[serve]\nport = {port}\nhousekeeping_seconds = 1\n")
    keys = {who: make_key(ws, *PEOPLE[who]) for who in people}
    with running_server(ws, port) as base:
        yield Site(ws, base, keys)


_CSRF = re.compile(r'name="csrf" value="([^"]*)"')


class PageClient:
    """A browser's part of the protocol: cookies, redirects, and the CSRF token of the page it
    last read."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx2.Client(base_url=base, follow_redirects=True, timeout=120)
        self.csrf: str | None = None

    def signin(self, key: str) -> httpx2.Response:
        r = self.http.post("/signin/key", data={"key": key, "next": "/"})
        assert r.status_code == 200 and "/signin" not in str(r.url), r.text[:500]
        self._remember(r)
        return r

    def _remember(self, r: httpx2.Response) -> None:
        m = _CSRF.search(r.text)
        if m:
            self.csrf = html.unescape(m.group(1))

    def get(self, path: str) -> httpx2.Response:
        r = self.http.get(path)
        self._remember(r)
        return r

    def post(
        self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True
    ) -> httpx2.Response:
        body = dict(data or {})
        if csrf and self.csrf is not None:
            body.setdefault("csrf", self.csrf)
        r = self.http.post(path, data=body)
        self._remember(r)
        return r

    def close(self) -> None:
        self.http.close()


def text_of(page: str) -> str:
    """The visible text of a page's main part, whitespace folded (for assertions)."""
    main = page.split("<main", 1)[-1]
    main = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", main, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", main))).strip()


def apply_and_follow(
    client: PageClient, proposal_id: str, *, timeout: float = 600
) -> httpx2.Response:
    """Apply a proposal from its page and follow the progress view as the page's script does
    (the apply runs in the background) until it ends; the proposal's page afterwards."""
    import time

    r = client.post(f"/proposals/{proposal_id}/apply")
    assert r.status_code == 200 and r.url.path == f"/proposals/{proposal_id}/applying", (
        r.status_code, text_of(r.text)[:800])  # fmt: skip
    deadline = time.monotonic() + timeout
    while 'data-poll="' in r.text:
        assert time.monotonic() < deadline, f"{proposal_id} still applying after {timeout} s"
        time.sleep(0.5)
        r = client.get(f"/proposals/{proposal_id}/applying?partial=1")
        assert r.status_code == 200, text_of(r.text)[:500]
    assert 'data-testid="apply-error"' not in r.text, text_of(r.text)[:1500]
    return client.get(f"/proposals/{proposal_id}")
