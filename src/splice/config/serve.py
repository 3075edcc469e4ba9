"""``[serve]`` in splice.toml: where ``splice serve`` listens and how it authenticates.

>>> s = ServeSection.model_validate({"port": 9000})
>>> s.base_url, s.resource_url
('http://127.0.0.1:9000', 'http://127.0.0.1:9000/mcp')
>>> ServeSection.model_validate({"host": "::1"}).base_url
'http://[::1]:8765'

>>> ServeSection.model_validate({"auth": {"api_keys": False}}).auth.methods()
[]
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from splice.support.principals import KINDS, parse_scopes


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OAuthSection(_Strict):
    """Bearer tokens from the team's identity provider (OAuth 2.1 / OIDC), verified through
    its JWKS: signature, issuer, audience, expiry."""

    issuer: str
    jwks_url: str
    #: The web page's client at the provider (sign-in with OpenID Connect, authorization code
    #: with PKCE); without it the page offers only the API-key sign-in.
    client_id: str | None = None
    #: The environment variable holding the client's secret (a confidential client); none for a
    #: public client (PKCE alone).
    client_secret_env: str | None = None
    #: The scopes the page asks the provider for at sign-in; default ``openid``, ``email``,
    #: ``profile`` and every key of ``scopes``.
    web_scopes: list[str] | None = None
    #: The audience a token must be issued for; default: this server's resource URL
    #: (``[serve] url`` + ``/mcp``).
    audience: str | None = None
    algorithms: list[str] = Field(default_factory=lambda: ["RS256"])
    #: The claim naming the principal (``email``, ``preferred_username``, ``sub``...).
    name_claim: str = "email"
    #: A claim saying whether the caller is a person or an agent (its value ``person`` or
    #: ``agent``); without it every token is ``default_kind``.
    kind_claim: str | None = None
    default_kind: str = "person"
    #: Client ids (the ``azp`` or ``client_id`` claim) whose tokens are always agents.
    agent_clients: list[str] = Field(default_factory=list)
    #: The claim holding the token's scopes (space-separated string or list).
    scopes_claim: str = "scope"
    #: The identity provider's scopes (or group names) -> Splice scopes they grant.
    scopes: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "splice:read": ["read"],
            "splice:propose": ["read", "propose"],
            "splice:approve": ["read", "propose", "approve"],
        }
    )
    #: Seconds between two fetches of the JWKS caused by an unknown key id.
    refetch_interval: float = 30.0
    leeway_seconds: int = 30

    @field_validator("algorithms")
    @classmethod
    def _asymmetric(cls, v: list[str]) -> list[str]:
        bad = [a for a in v if not a.upper().startswith(("RS", "PS", "ES", "EDDSA"))]
        if bad or not v:
            raise ValueError(
                f"algorithms must be asymmetric (RS256, PS256, ES256, EdDSA...), got {bad or v}: "
                "a shared-secret or 'none' algorithm cannot be verified through a JWKS"
            )
        return v

    @field_validator("default_kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in KINDS:
            raise ValueError(f"default_kind must be one of {', '.join(KINDS)}")
        return v

    @field_validator("scopes")
    @classmethod
    def _known_scopes(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for granted in v.values():
            parse_scopes(granted)
        return v


class AuthSection(_Strict):
    #: API keys made by ``splice keys create``.
    api_keys: bool = True
    oauth: OAuthSection | None = None

    def methods(self) -> list[str]:
        return (["api-key"] if self.api_keys else []) + (["oauth"] if self.oauth else [])


class ServeSection(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    #: Server processes sharing the port (each loads the graph once; requests stand alone).
    workers: int = Field(default=1, ge=1, le=64)
    #: The URL clients reach this server at (behind a proxy, its public URL); default
    #: ``http://HOST:PORT``.
    url: str | None = None
    #: Seconds between two housekeeping passes (approval escalation and expiry,
    #: notifications) while the server runs.
    housekeeping_seconds: float = Field(default=60.0, gt=0)
    #: Seconds between two checks that the workspace's files are unchanged (the graph is
    #: reloaded as soon as one changed).
    recheck_seconds: float = Field(default=1.0, ge=0)
    auth: AuthSection = Field(default_factory=AuthSection)
    #: the server's Ed25519 key that signs the audit-log entries it writes: a PEM file
    #: (made, mode 0600, when missing), or the key in an environment variable, or a command
    #: that signs (a KMS) with its public key named (splice.state.signing)
    signing_key: str = ".splice/keys/serve-ed25519.pem"
    signing_key_env: str | None = None
    signing_command: list[str] | None = None
    signing_public_key: str | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        return (self.url or f"http://{host}:{self.port}").rstrip("/")

    @property
    def resource_url(self) -> str:
        return f"{self.base_url}/mcp"
