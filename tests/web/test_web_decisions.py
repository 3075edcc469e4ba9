"""Decisions on the web page, at the protocol level (the browser test drives the same pages in
Chromium): who sees which button, and that the server refuses everyone else whatever the page
showed, writing nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.serve.serve_support import server_decides
from tests.web.web_support import (
    Site,
    apply_and_follow,
    served_site,
    splice,
    text_of,
    web_workspace,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("web") / "travel")
    server_decides(ws)  # decisions only through the server, each signed by its key
    with served_site(ws) as s:
        agent = s.client("agent")
        r = agent.get("/incidents/INC-1")
        assert r.status_code == 200 and 'data-testid="propose"' in r.text
        r = agent.post("/incidents/INC-1/propose")
        assert r.status_code == 200 and str(r.url).endswith("/proposals/PR-1"), r.text[:800]
        yield s


def _approve_button(html: str) -> bool:
    return 'data-testid="approve"' in html


def test_every_page_needs_a_principal(site: Site) -> None:
    anon = site.client()
    r = anon.http.get("/proposals/PR-1", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/signin?next=/proposals/PR-1"
    before = site.written()
    r = anon.post("/proposals/PR-1/approve", {"comment": "ok"}, csrf=False)
    assert r.status_code == 401 and "sign in first" in text_of(r.text)
    assert site.written() == before
    r = anon.post("/signin/key", {"key": "spk_0000_not-a-key", "next": "/"}, csrf=False)
    assert r.status_code == 401 and "not accepted" in r.text
    assert "splice_session" not in anon.http.cookies


def test_the_session_cookie_is_signed_httponly_and_samesite(site: Site) -> None:
    c = site.client()
    r = c.http.post("/signin/key", data={"key": site.keys["rita"], "next": "/proposals"},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == "/proposals"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert site.keys["rita"] not in cookie  # the key itself is never in the cookie
    value = c.http.cookies["splice_session"]
    assert c.http.get("/proposals").status_code == 200
    body, sig = value.split(".")
    forged = {
        "signature changed": f"{body}.{sig[:-3]}{'AAA' if sig[-3:] != 'AAA' else 'BBB'}",
        "body changed": f"{body[:-2]}xx.{sig}",
        "no signature": body,
    }
    for what, cookie_value in forged.items():
        r = httpx2.get(
            f"{site.base}/proposals", headers={"Cookie": f"splice_session={cookie_value}"}
        )
        assert r.status_code == 303 and r.headers["location"].startswith("/signin"), what


def test_sign_in_never_sends_the_browser_to_another_site(site: Site) -> None:
    c = site.client()
    for nxt in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        r = c.http.post("/signin/key", data={"key": site.keys["rita"], "next": nxt},
                        follow_redirects=False)  # fmt: skip
        assert r.status_code == 303 and r.headers["location"] == "/", nxt
    r = c.http.post("/signin/key", data={"key": site.keys["rita"]},
                    headers={"Origin": "https://evil.example"}, follow_redirects=False)  # fmt: skip
    assert r.status_code == 403


def test_only_a_named_owner_who_is_not_the_requester_sees_approve(site: Site) -> None:
    pages = {
        who: site.client(who).get("/proposals/PR-1")
        for who in ("agent", "ana", "lee", "rita", "sam")
    }
    assert all(p.status_code == 200 for p in pages.values())
    assert "pending" in text_of(pages["sam"].text)
    # an owner of each domain the repair rewrites: pricing (sam) and finance (lee)
    assert _approve_button(pages["sam"].text) and _approve_button(pages["lee"].text)
    for who in ("agent", "ana", "rita"):
        assert not _approve_button(pages[who].text), who
    # each is told why, in words
    assert "never decides" in text_of(pages["agent"].text)
    assert "ana is not an owner of any domain PR-1 rewrites (pricing, finance)" in text_of(
        pages["ana"].text
    )
    assert "'approve' scope" in text_of(pages["rita"].text)
    # the page says which domains decide it and that both still have to
    assert "Domains pricing, finance" in text_of(pages["sam"].text)
    assert "Waiting for pricing" in text_of(pages["sam"].text)
    # the requester may withdraw; a non-owner may not reject
    assert 'data-testid="reject"' not in pages["ana"].text
    # with PR-1 open, the incident offers no second proposal
    assert 'data-testid="propose"' not in site.client("agent").get("/incidents/INC-1").text


def test_a_forged_approval_is_refused_and_writes_nothing(site: Site) -> None:
    before = site.written()
    for who in ("agent", "ana", "rita"):
        c = site.client(who)
        c.get("/proposals/PR-1")  # a valid CSRF token of their own session
        r = c.post("/proposals/PR-1/approve", {"comment": "looks fine"})
        assert r.status_code == 403, (who, r.text[:400])
        assert "Refused" in r.text
    # an owner's request without the session's CSRF token, or with another session's
    sam, lee = site.client("sam"), site.client("lee")
    lee.get("/proposals/PR-1")
    assert sam.post("/proposals/PR-1/approve", {"comment": "x"}, csrf=False).status_code == 403
    assert sam.post("/proposals/PR-1/approve", {"csrf": lee.csrf or ""}).status_code == 403
    assert site.written() == before
    assert "pending" in text_of(sam.get("/proposals/PR-1").text)


def test_the_owner_approves_applies_and_the_receipt_names_them(site: Site) -> None:
    sam = site.client("sam")
    sam.get("/proposals/PR-1")
    r = sam.post("/proposals/PR-1/approve", {"comment": "vendor confirmed the fix"})
    assert r.status_code == 200 and str(r.url).endswith("/proposals/PR-1")
    page = text_of(r.text)
    # pricing has approved; finance's dbt models still wait for lee: no apply yet
    assert re.search(r"PR-1 pending", page), page[:400]
    assert re.search(r"Approved for ?pricing by sam", page), page[:1200]
    assert re.search(r"Waiting for ?finance \(owners: lee\)", page), page[:1200]
    assert 'data-testid="apply"' not in r.text and not _approve_button(r.text)
    lee = site.client("lee")
    lee.get("/proposals/PR-1")
    r = lee.post("/proposals/PR-1/approve", {"comment": "finance models checked"})
    assert r.status_code == 200
    page = text_of(r.text)
    assert re.search(r"PR-1 approved", page)
    assert re.search(r"approve by sam \(person, api-key\) ?: vendor confirmed the fix", page)
    assert re.search(r"Approved for ?pricing by sam; finance by lee", page), page[:1200]
    assert 'data-testid="apply"' in r.text and not _approve_button(r.text)
    r = apply_and_follow(sam, "PR-1")
    assert r.status_code == 200, r.text[:800]
    assert re.search(r"PR-1 applied", text_of(r.text))
    receipt = sam.get("/receipts/PR-1")
    text = text_of(receipt.text)
    assert "sam (person, signed in with an API key" in text and "vendor confirmed the fix" in text
    assert re.search(r"Verified ?:", text) and re.search(
        r"\d+ value\(s\) in scope changed · 0 outside the scope", text
    )
    incident = text_of(sam.get("/incidents/INC-1").text)
    assert "INC-1 resolved" in incident
    # the page's decisions were signed by the server; the log verifies with its key required
    r = splice(site.ws, "audit-log", "verify", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "by a server key" in r.stdout
    r = splice(site.ws, "receipt", "PR-1", "--json")
    import json

    assert json.loads(r.stdout)["audit_standing"]["verified"] is True


def test_the_org_wide_stop_and_resume_from_the_page(site: Site) -> None:
    lee = site.client("lee")
    lee.get("/proposals")
    r = lee.post("/stop", {"reason": "quarter close in progress"})
    assert r.status_code == 200
    assert "Org-wide stop" in text_of(r.text) and "quarter close in progress" in r.text
    sam = site.client("sam")
    assert "Org-wide stop" in text_of(sam.get("/proposals").text)
    r = lee.post("/resume")
    assert r.status_code == 200 and "Org-wide stop" not in text_of(r.text)


def test_a_revoked_key_ends_its_page_session(site: Site, tmp_path: Path) -> None:
    c = site.client("rita")
    assert c.get("/incidents").status_code == 200
    key_id = site.keys["rita"].split("_")[1]
    r = splice(site.ws, "keys", "revoke", key_id)
    assert r.returncode == 0, r.stderr
    r = c.get("/incidents")
    assert r.status_code == 401 and "revoked" in text_of(r.text)
    assert c.http.get("/incidents", follow_redirects=False).status_code == 303
