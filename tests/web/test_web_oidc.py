"""Signing in to the page through a real OpenID Connect provider on 127.0.0.1
(oidc-provider-mock): the authorization code flow with PKCE, the ID token verified against the
provider's keys, the principal's Splice scopes from its groups; and every way it must fail."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from tests.web.web_support import Site, served_site, text_of, web_workspace

pytestmark = [pytest.mark.slow, pytest.mark.browser]


class EnforcePKCE:
    """Refuses a code whose ``code_verifier`` does not hash to the S256 challenge its
    authorization request carried (RFC 7636), as real providers do: the mock itself does not
    check PKCE. WSGI middleware around it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.challenges: dict[str, str] = {}
        self.checked = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        if path == "/oauth2/token" and method == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            form = parse_qs(body.decode())
            want = self.challenges.pop(form.get("code", [""])[0], None)
            verifier = form.get("code_verifier", [""])[0].encode()
            got = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if want is None or got.decode() != want:
                start_response("400 Bad Request", [("Content-Type", "application/json")])
                return [b'{"error": "invalid_grant", "error_description": "PKCE failed"}']
            self.checked += 1
        elif path == "/oauth2/authorize" and method == "POST":
            q = parse_qs(environ.get("QUERY_STRING", ""))
            challenge = q.get("code_challenge", [""])[0]
            s256 = q.get("code_challenge_method") == ["S256"]

            def remember(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
                for k, v in headers:
                    code = (
                        parse_qs(urlsplit(v).query).get("code") if k.lower() == "location" else None
                    )
                    if code and challenge and s256:
                        self.challenges[code[0]] = challenge
                return start_response(status, headers, *exc)

            return self.app(environ, remember)
        return self.app(environ, start_response)


class Provider:
    """oidc-provider-mock (enforcing PKCE) served by werkzeug on 127.0.0.1 in a thread."""

    def __init__(self) -> None:
        import werkzeug.serving
        from oidc_provider_mock import User, app

        users = [
            User(sub="maria", claims={"email": "maria@example.com", "groups": ["pricing-owners"]}),
            User(sub="carol", claims={"email": "carol@example.com", "groups": ["everyone"]}),
        ]
        self.pkce = EnforcePKCE(app(user_claims=users, require_nonce=True))
        self.server = werkzeug.serving.make_server("127.0.0.1", 0, self.pkce, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.1,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    p = Provider()
    yield p
    p.close()


@pytest.fixture(scope="module")
def site(
    stale_story: Any, provider: Provider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    oauth = f"""
[serve.auth.oauth]
issuer = "{provider.url}"
jwks_url = "{provider.url}/jwks"
client_id = "splice-web"
client_secret_env = "SPLICE_TEST_OIDC_SECRET"
name_claim = "sub"
scopes_claim = "groups"

[serve.auth.oauth.scopes]
"pricing-owners" = ["read", "propose", "approve"]
"everyone" = ["read"]
"""
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("oidc") / "travel", extra_toml=oauth)
    os.environ["SPLICE_TEST_OIDC_SECRET"] = "s3cret:with/odd chars"  # a confidential client
    try:
        with served_site(ws, people=("agent",)) as s:
            yield s
    finally:
        os.environ.pop("SPLICE_TEST_OIDC_SECRET", None)


def _sign_in(
    site: Site, sub: str, *, nxt: str = "/proposals"
) -> tuple[httpx2.Client, httpx2.Response, str]:
    """The browser's part: /signin/oidc -> the provider's form -> submit ``sub`` -> back."""
    c = httpx2.Client(base_url=site.base, timeout=60)
    page = c.get("/signin")
    assert 'data-testid="signin-oidc"' in page.text
    r = c.get("/signin/oidc", params={"next": nxt})
    assert r.status_code == 303
    authorize = r.headers["location"]
    form = c.get(authorize)
    assert form.status_code == 200 and 'name="sub"' in form.text
    back = c.post(authorize, data={"sub": sub})
    assert back.status_code in (302, 303), back.text[:500]
    return c, c.get(back.headers["location"]), authorize


def test_an_owner_signs_in_through_the_provider_with_pkce(site: Site, provider: Provider) -> None:
    c, r, authorize = _sign_in(site, "maria")
    q = parse_qs(urlsplit(authorize).query)
    assert authorize.startswith(f"{provider.url}/oauth2/authorize")
    assert q["response_type"] == ["code"] and q["client_id"] == ["splice-web"]
    assert q["code_challenge_method"] == ["S256"] and len(q["code_challenge"][0]) == 43
    assert q["redirect_uri"] == [f"{site.base}/signin/callback"]
    assert {"openid", "pricing-owners"} <= set(q["scope"][0].split())
    assert q["state"][0] and q["nonce"][0]
    assert r.status_code == 303 and r.headers["location"] == "/proposals", text_of(r.text)
    assert provider.pkce.checked >= 1  # the provider saw the verifier match the challenge
    cookie = r.headers["set-cookie"]
    assert "splice_session=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    page = c.get("/proposals")
    assert page.status_code == 200
    me = re.search(r'data-testid="me">(.*?)</span>', page.text, re.S)
    assert me and "maria" in me.group(1) and "person, oauth" in me.group(1)
    # her groups grant approve: she may decide (the stop form is offered to people who may)
    assert "Stop every repair" in page.text


def test_the_groups_decide_the_scopes(site: Site) -> None:
    c, r, _ = _sign_in(site, "carol", nxt="/incidents/INC-1")
    assert r.status_code == 303 and r.headers["location"] == "/incidents/INC-1"
    page = c.get("/incidents/INC-1")
    assert page.status_code == 200 and "carol" in page.text
    assert 'data-testid="propose"' not in page.text  # read only: no Propose button
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    before = site.written()
    refused = c.post("/incidents/INC-1/propose", data={"csrf": token.group(1)})
    assert refused.status_code == 403 and site.written() == before


def test_a_forged_or_replayed_callback_signs_nobody_in(site: Site, provider: Provider) -> None:
    c = httpx2.Client(base_url=site.base, timeout=60)
    r = c.get("/signin/callback", params={"code": "made-up", "state": "made-up"})
    assert r.status_code == 401 and "state does not match" in text_of(r.text)
    assert "splice_session" not in c.cookies
    # a real flow whose state is swapped on the way back
    r = c.get("/signin/oidc")
    authorize = r.headers["location"]
    back = c.post(authorize, data={"sub": "maria"})
    loc = back.headers["location"]
    forged = re.sub(r"state=[^&]+", "state=someone-elses", loc)
    r = c.get(forged)
    assert r.status_code == 401 and "splice_session" not in c.cookies
    # the right state from another browser (no pending sign-in cookie there)
    other = httpx2.Client(base_url=site.base, timeout=60)
    r = other.get(loc)
    assert r.status_code == 401 and "splice_session" not in other.cookies


def test_denying_at_the_provider_ends_on_a_clear_page(site: Site) -> None:
    c = httpx2.Client(base_url=site.base, timeout=60)
    authorize = c.get("/signin/oidc").headers["location"]
    back = c.post(authorize, data={"action": "deny"})
    r = c.get(back.headers["location"])
    assert r.status_code == 403
    assert "did not sign you in: access_denied" in text_of(r.text)
    assert "splice_session" not in c.cookies


def test_next_never_leaves_the_server(site: Site) -> None:
    c, r, _ = _sign_in(site, "maria", nxt="https://evil.example/steal")
    assert r.headers["location"] == "/"


def test_signing_in_through_the_provider_in_a_browser(site: Site) -> None:
    from tests.web.browser_support import chromium, shot

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        page.goto(f"{site.base}/proposals")
        assert "/signin" in page.url
        shot(page, "20-signin")
        page.locator("[data-testid=signin-oidc]").click()
        page.locator("input[name=sub]").wait_for()  # the provider's own page
        shot(page, "21-provider")
        page.fill("input[name=sub]", "maria")
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url(f"{site.base}/proposals")
        assert "maria" in page.locator("[data-testid=me]").inner_text()
        assert "oauth" in page.locator("[data-testid=me]").inner_text()
        shot(page, "22-signed-in-oidc")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(f"{site.base}/signin?message=Signed+out.")
        page.goto(f"{site.base}/proposals")
        assert "/signin" in page.url  # signed out means signed out


def test_an_owner_signed_in_through_the_provider_approves_and_it_is_recorded(site: Site) -> None:
    agent = site.client("agent")
    agent.get("/incidents/INC-1")
    r = agent.post("/incidents/INC-1/propose")
    assert r.status_code == 200 and str(r.url).endswith("/proposals/PR-1"), text_of(r.text)[:300]
    c, r, _ = _sign_in(site, "maria", nxt="/proposals/PR-1")
    page = c.get("/proposals/PR-1")
    assert 'data-testid="approve"' in page.text
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    r = c.post("/proposals/PR-1/approve", data={"csrf": token.group(1), "comment": "checked"})
    assert r.status_code == 303
    con = sqlite3.connect(site.ws / ".splice" / "state.db")
    try:
        row = con.execute(
            "SELECT actor, principal_kind, principal_auth, principal_credential FROM "
            "repair_decisions WHERE proposal_id = 'PR-1' AND decision = 'approve'"
        ).fetchone()
    finally:
        con.close()
    assert row[:3] == ("maria", "person", "oauth") and row[3].endswith("#maria")
