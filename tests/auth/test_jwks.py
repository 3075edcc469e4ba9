"""The identity provider's keys (splice.auth.jwks: PyJWT's client over Splice's HTTP transport)
against a real JWKS endpoint on 127.0.0.1: fetched once, fetched again for a rotated key at
most once per refetch interval, a token without a key id checked against the only key, and
the provider down said in one line that a retry may help."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.serve.serve_support import ISSUER, IdentityProvider, free_port

from splice.auth.jwks import ProviderKeys
from splice.auth.tokens import verify_jwt
from splice.errors import AccessError

AUD = "http://127.0.0.1:9/mcp"


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider()
    yield provider
    provider.close()


def verify(token: str, keys: ProviderKeys) -> dict[str, object]:
    return verify_jwt(token, keys, issuer=ISSUER, audience=AUD, algorithms=["RS256"])


def test_keys_are_fetched_once_and_again_for_a_rotated_one(idp: IdentityProvider) -> None:
    keys = ProviderKeys(idp.url, refetch_interval=0.3)
    assert verify(idp.token(AUD), keys)["email"] == "maria@example.com"
    assert verify(idp.token(AUD), keys) and idp.fetches == 1
    idp.add_key("k2")
    for _ in range(5):  # within the interval: a flood of new kids costs nothing more
        with pytest.raises(AccessError, match="unknown key id 'k2'"):
            verify(idp.token(AUD, kid="k2"), keys)
    assert idp.fetches == 1
    time.sleep(0.35)
    assert verify(idp.token(AUD, kid="k2"), keys) and idp.fetches == 2
    idp.add_key("rogue", publish=False)
    time.sleep(0.35)
    with pytest.raises(AccessError, match="unknown key id 'rogue'"):
        verify(idp.token(AUD, kid="rogue"), keys)
    assert idp.fetches == 3


def test_a_token_without_a_key_id_needs_exactly_one_published_key(
    idp: IdentityProvider,
) -> None:
    import jwt

    def kidless() -> str:
        claims = {"iss": ISSUER, "aud": AUD, "email": "maria@example.com",
                  "exp": int(time.time()) + 60}  # fmt: skip
        return jwt.encode(claims, idp.keys["k1"], algorithm="RS256")

    assert verify(kidless(), ProviderKeys(idp.url))["email"] == "maria@example.com"
    idp.add_key("k2")
    with pytest.raises(AccessError, match="publishes 2 signing keys"):
        verify(kidless(), ProviderKeys(idp.url))


def test_a_provider_that_is_down_is_one_line_that_a_retry_may_help() -> None:
    url = f"http://127.0.0.1:{free_port()}/jwks.json"
    with pytest.raises(AccessError) as e:
        ProviderKeys(url).key("k1")
    line = e.value.one_line()
    assert line.startswith(f"the identity provider's keys could not be fetched from {url}: ")
    assert "Connection refused" in line and line.endswith("(a retry may help)")
