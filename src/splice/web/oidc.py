"""Sign-in through the team's identity provider: OpenID Connect, authorization code with PKCE.

Not built yet: ``/signin/oidc`` says so (the API-key sign-in works).
"""

from __future__ import annotations

from typing import Any


def routes(web: Any) -> list[Any]:
    return []
