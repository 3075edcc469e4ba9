"""Sign-in through the team's identity provider for the web page: OpenID Connect, the
authorization code flow with PKCE (S256).

1. :meth:`OIDCClient.start` makes the request's secrets (``state``, ``nonce``, the PKCE
   verifier) and the provider's authorization URL; the page keeps the secrets in a short-lived
   signed cookie and sends the browser to the URL.
2. The provider sends the browser back to ``{[serve] url}/signin/callback`` with a ``code``;
   :meth:`OIDCClient.finish` checks the ``state``, exchanges the code (with the verifier, and
   the client secret for a confidential client) at the token endpoint, verifies the ID token
   (signature against the provider's published keys, issuer, audience = the client id, expiry,
   nonce) and returns the principal: named by ``name_claim``, a person unless the kind rules
   say otherwise, with the Splice scopes that ``[serve.auth.oauth] scopes`` maps the
   ``scopes_claim`` to, as for bearer tokens: the OAuth scopes granted to the sign-in (the
   default, ``scope``) or a claim of the ID token such as ``groups``.

The provider's endpoints come from its discovery document
(``{issuer}/.well-known/openid-configuration``), fetched once and kept; every request to the
provider goes through Splice's one HTTP transport (:mod:`splice.support.http`).

>>> v, c = pkce_pair()
>>> len(v) >= 43 and c == _s256(v)
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any

from splice.auth.tokens import oauth_principal, verify_jwt
from splice.errors import AccessError, ConfigError
from splice.support import http
from splice.support.principals import Principal

if TYPE_CHECKING:
    from splice.auth.jwks import ProviderKeys

TIMEOUT = 10.0


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge) for one sign-in (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    return verifier, _s256(verifier)


class OIDCClient:
    """The web page's client at the provider configured in ``[serve.auth.oauth]``."""

    def __init__(self, oauth: Any, redirect_uri: str) -> None:
        if oauth is None or not oauth.client_id:
            raise ConfigError(
                "the page's sign-in through the identity provider needs [serve.auth.oauth] "
                "client_id.",
                fix="set [serve.auth.oauth] client_id (and client_secret_env for a confidential "
                "client), or sign in with an API key",
            )
        self.cfg = oauth
        self.redirect_uri = redirect_uri
        self._meta: dict[str, Any] | None = None
        self._jwks: ProviderKeys | None = None
        self._lock = threading.Lock()

    # -- the provider ---------------------------------------------------------------------
    def _get_json(
        self, url: str, data: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        """GET ``url`` (POST ``data`` when given: tried once more only if it was never sent)."""
        try:
            return http.request(
                "POST" if data is not None else "GET", url, content=data, timeout=TIMEOUT,
                headers={"Accept": "application/json", **(headers or {})},
            ).json()  # fmt: skip
        except http.ErrorStatus as e:
            raise AccessError(
                f"the identity provider answered {e.status} at {url}: {e.text[:300]}",
                retry=e.status >= 500,
            ) from e
        except (http.NoAnswer, ValueError) as e:
            raise AccessError(
                f"the identity provider could not be reached at {url}: "
                f"{e.reason if isinstance(e, http.NoAnswer) else e}",
                fix="check [serve.auth.oauth] issuer and that the provider is up",
                retry=True,
            ) from e

    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (fetched once)."""
        with self._lock:
            if self._meta is None:
                url = self.cfg.issuer.rstrip("/") + "/.well-known/openid-configuration"
                meta = self._get_json(url)
                for key in ("authorization_endpoint", "token_endpoint"):
                    if not isinstance(meta.get(key), str):
                        raise AccessError(
                            f"the provider's discovery document at {url} has no {key}."
                        )
                if meta.get("issuer") and meta["issuer"].rstrip("/") != self.cfg.issuer.rstrip("/"):
                    raise AccessError(
                        f"the provider at {url} calls itself {meta['issuer']!r}, not the "
                        f"configured issuer {self.cfg.issuer!r}.",
                        fix="set [serve.auth.oauth] issuer to exactly the provider's issuer",
                    )
                from splice.auth.jwks import ProviderKeys

                self._meta = meta
                self._jwks = ProviderKeys(
                    self.cfg.jwks_url or meta.get("jwks_uri"),
                    refetch_interval=self.cfg.refetch_interval,
                )
            return self._meta

    # -- the flow -------------------------------------------------------------------------
    def scope(self) -> str:
        wanted = self.cfg.web_scopes or ["openid", "email", "profile", *self.cfg.scopes]
        if "openid" not in wanted:
            wanted = ["openid", *wanted]
        return " ".join(dict.fromkeys(wanted))

    def start(self) -> tuple[str, dict[str, str]]:
        """(the authorization URL to send the browser to, the secrets to keep until it is back)."""
        meta = self.metadata()
        verifier, challenge = pkce_pair()
        pending = {"state": secrets.token_urlsafe(24), "nonce": secrets.token_urlsafe(24),
                   "verifier": verifier}  # fmt: skip
        query = {
            "response_type": "code",
            "client_id": self.cfg.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": self.scope(),
            "state": pending["state"],
            "nonce": pending["nonce"],
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        sep = "&" if "?" in meta["authorization_endpoint"] else "?"
        return meta["authorization_endpoint"] + sep + urllib.parse.urlencode(query), pending

    def finish(
        self, pending: dict[str, str] | None, params: dict[str, str]
    ) -> tuple[Principal, int | None]:
        """The principal the provider signed in, from the callback's ``params``; AccessError
        saying why not (a refusal by the person, a stale or forged state, a bad token)."""
        if params.get("error"):
            raise AccessError(
                f"the identity provider did not sign you in: {params['error']}"
                + (f" ({params['error_description']})" if params.get("error_description") else ""),
                fix="sign in again",
            )
        if (
            not pending
            or not params.get("state")
            or not hmac.compare_digest(str(pending.get("state", "")), params["state"])
        ):
            raise AccessError(
                "this sign-in's state does not match the one this browser started (a stale, "
                "replayed or forged callback): nothing was signed in.",
                fix="start the sign-in again from /signin",
            )
        code = params.get("code")
        if not code:
            raise AccessError("the provider sent no authorization code.", fix="sign in again")
        tokens = self._exchange(code, pending["verifier"])
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise AccessError("the provider's answer has no ID token (is 'openid' granted?).")
        assert self._jwks is not None
        claims = verify_jwt(
            id_token,
            self._jwks,
            issuer=self.cfg.issuer,
            audience=self.cfg.client_id,
            algorithms=self.cfg.algorithms,
            leeway=self.cfg.leeway_seconds,
        )
        if not hmac.compare_digest(str(claims.get("nonce", "")), pending["nonce"]):
            raise AccessError("the ID token's nonce is not this sign-in's: refused.")
        granted = tokens.get("scope")
        if self.cfg.scopes_claim == "scope" and isinstance(granted, str) and "scope" not in claims:
            claims = {**claims, "scope": granted}  # the OAuth scopes granted to this sign-in
        exp = claims.get("exp")
        return oauth_principal(claims, self.cfg), int(exp) if isinstance(
            exp, (int, float)
        ) else None

    def _exchange(self, code: str, verifier: str) -> dict[str, Any]:
        meta = self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "client_id": self.cfg.client_id,
            "code_verifier": verifier,
        }
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        env = self.cfg.client_secret_env
        if env:
            secret = os.environ.get(env)
            if not secret:
                raise ConfigError(
                    f"[serve.auth.oauth] client_secret_env names {env}, which is not set in the "
                    "server's environment.",
                    fix=f"export {env}=... before splice serve, or drop client_secret_env for a "
                    "public client",
                )
            pair = f"{urllib.parse.quote(self.cfg.client_id, safe='')}:{urllib.parse.quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        data = urllib.parse.urlencode(form).encode()
        tokens = self._get_json(meta["token_endpoint"], data, headers)
        if not isinstance(tokens, dict):
            raise AccessError("the provider's token answer is not a JSON object.")
        return tokens
