"""Accepting an incident's new level on its page, at the protocol level: only an owner of the
domain where it starts sees the button; everyone else is told why and refused (403) whatever
the page showed, writing nothing; the owner's decision shows on the page afterwards."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from tests.web.web_support import Site, served_site, text_of, web_workspace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("web_accept") / "travel")
    with served_site(ws) as s:
        yield s


def _button(html: str) -> bool:
    return 'data-testid="accept-level"' in html


def _written(site: Site) -> tuple[tuple[int, int, int], int, str]:
    con = sqlite3.connect(site.ws / ".splice" / "state.db")
    try:
        levels = con.execute("SELECT count(*) FROM watch_levels").fetchone()[0]
        status = con.execute("SELECT status FROM incidents WHERE incident_id = 'INC-1'").fetchone()
    finally:
        con.close()
    return site.written(), levels, status[0]


def test_only_an_owner_sees_the_button_and_the_others_are_told_why(site: Site) -> None:
    pages = {who: site.client(who).get("/incidents/INC-1") for who in ("agent", "lee", "rita")}
    maria = site.client("maria").get("/incidents/INC-1")
    assert maria.status_code == 200 and _button(maria.text)
    assert "Accept the new level" in text_of(maria.text)
    for who, page in pages.items():
        assert page.status_code == 200 and not _button(page.text), who
    assert "never decides" in text_of(pages["agent"].text)
    assert "lee may not accept the new level of INC-1: only an owner of domain pricing" in text_of(
        pages["lee"].text
    )
    assert "'approve' scope" in text_of(pages["rita"].text)


def test_a_forged_accept_is_refused_and_writes_nothing(site: Site) -> None:
    before = _written(site)
    for who in ("agent", "lee", "rita"):
        c = site.client(who)
        c.get("/incidents/INC-1")  # a valid CSRF token of their own session
        r = c.post("/incidents/INC-1/accept-level", {"note": "fine by me"})
        assert r.status_code == 403, (who, r.text[:400])
        assert "Refused" in r.text
    maria, lee = site.client("maria"), site.client("lee")
    lee.get("/incidents/INC-1")
    # the owner's request without her session's CSRF token, or with another session's
    assert maria.post("/incidents/INC-1/accept-level", {}, csrf=False).status_code == 403
    assert maria.post("/incidents/INC-1/accept-level", {"csrf": lee.csrf or ""}).status_code == 403
    assert site.client().post("/incidents/INC-1/accept-level", csrf=False).status_code == 401
    assert _written(site) == before
    assert before[1:] == (0, "open")


def test_the_owner_accepts_and_the_page_shows_who_and_when(site: Site) -> None:
    maria = site.client("maria")
    maria.get("/incidents/INC-1")
    r = maria.post("/incidents/INC-1/accept-level", {"note": "the ECB moved the rates for good"})
    assert r.status_code == 200 and str(r.url).endswith("/incidents/INC-1"), r.text[:600]
    page = text_of(r.text)
    assert re.search(r"INC-1 accepted", page)
    assert re.search(r"closed \d{4}-\d\d-\d\d \d\d:\d\d", page)
    assert "new level accepted by maria (person, signed in with an API key" in page
    assert "the ECB moved the rates for good" in page
    assert 'data-testid="levels"' in r.text and not _button(r.text)
    assert re.search(r"fx_rate currency=JPY 2026-09-28 maria \(person, signed in with an API key\)",
                     page)  # fmt: skip
    _, levels, status = _written(site)
    assert status == "accepted" and levels == 60  # every series of the declared metrics
    # the list files it under the past incidents, as accepted
    listing = text_of(maria.get("/incidents").text)
    assert "No open incident." in listing and re.search(r"INC-1 accepted", listing)
    # accepting again is refused, in words
    again = maria.post("/incidents/INC-1/accept-level", {})
    assert again.status_code == 403 and "INC-1 is closed already" in text_of(again.text)
