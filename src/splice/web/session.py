"""The page's session: a signed cookie that names the signed-in principal, and the CSRF token
every change must carry.

The cookie holds ``{principal, csrf, exp}`` as JSON, signed with HMAC-SHA256 under the server's
secret (``.splice/serve-secret``, made at first start with mode 0600 and shared by every worker;
``SPLICE_SERVE_SECRET`` overrides it). It is ``HttpOnly``, ``SameSite=Lax`` and ``Secure`` when
the server's URL is https, so script on a page cannot read it and another site's form cannot
send it on a POST. A cookie whose signature, format or expiry does not check is ignored: the
visitor is simply not signed in.

>>> s = Sessions(b"k" * 32)
>>> value = s.dumps({"principal": {"name": "maria"}, "csrf": "c", "exp": 4102444800})
>>> s.loads(value)["principal"]["name"]
'maria'
>>> s.loads(value[:-2] + "xx") is None
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

COOKIE = "splice_session"
#: Seconds a sign-in lasts (a key's or a token's own expiry shortens it).
LIFETIME = 12 * 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def server_secret(root: Path) -> bytes:
    """The signing secret: ``SPLICE_SERVE_SECRET``, else ``.splice/serve-secret`` (made once,
    0600, atomically, so workers starting together agree)."""
    env = os.environ.get("SPLICE_SERVE_SECRET")
    if env:
        return env.encode()
    path = root / ".splice" / "serve-secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"serve-secret.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
        try:
            os.link(tmp, path)  # the first writer wins; the others read its secret
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip().encode()


class Sessions:
    """Signs and checks session cookies (and the short-lived sign-in state of OIDC)."""

    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"splice-session\0" + secret).digest()

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode(), hashlib.sha256).digest())

    def dumps(self, data: dict[str, Any]) -> str:
        body = _b64(json.dumps(data, separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{self._sign(body)}"

    def loads(self, value: str | None, *, now: float | None = None) -> dict[str, Any] | None:
        """The data of a cookie this server signed and that has not expired, else None."""
        if not value or value.count(".") != 1:
            return None
        body, sig = value.split(".")
        if not hmac.compare_digest(sig, self._sign(body)):
            return None
        try:
            data = json.loads(_unb64(body))
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict):
            return None
        exp = data.get("exp")
        if not isinstance(exp, (int, float)) or exp < (time.time() if now is None else now):
            return None
        return data

    def new(self, principal: dict[str, Any], *, expires: float | None = None) -> dict[str, Any]:
        """A session for ``principal`` (a :meth:`Principal.as_dict`), with a fresh CSRF token."""
        exp = time.time() + LIFETIME
        if expires is not None:
            exp = min(exp, expires)
        return {"principal": principal, "csrf": secrets.token_urlsafe(24), "exp": int(exp)}


def csrf_ok(session: dict[str, Any] | None, sent: str | None) -> bool:
    """Whether a form's ``csrf`` field matches the session's token (compared in constant time).

    >>> csrf_ok({"csrf": "abc"}, "abc"), csrf_ok({"csrf": "abc"}, "abd"), csrf_ok(None, "abc")
    (True, False, False)
    """
    want = (session or {}).get("csrf")
    return bool(want and sent and hmac.compare_digest(str(want), str(sent)))
