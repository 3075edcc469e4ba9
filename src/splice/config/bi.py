"""``[[bi]]``: a BI tool whose dashboards Splice reads (and, when asked, annotates).

>>> BISection.model_validate({"name": "superset", "type": "superset", "url": "http://127.0.0.1:8088",
...                           "username": "admin", "password_env": "SUPERSET_PASSWORD"}).refresh_seconds
60
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from splice.config.base import NAME_PATTERN, Strict
from splice.config.durations import parse_duration

BITool = Literal["superset", "lightdash", "metabase"]


class BISection(Strict):
    """One BI tool: its dashboards become nodes of project ``name`` (``superset:dashboard:gmv``,
    ``superset:chart:gmv_by_day``), reading the relations their datasets read."""

    name: str = Field(pattern=NAME_PATTERN)
    type: BITool
    url: str
    username: str | None = None  # who Splice signs in as (not a secret)
    username_env: str | None = None  # ... or the environment variable holding it
    password_env: str | None = None  # the environment variable holding the password
    token_env: str | None = None  # or holding an API token (Lightdash, Metabase)
    dashboards: list[str] = Field(default_factory=list)  # only these (titles or ids); [] = all
    annotate: bool = False  # write open incidents onto the affected dashboards' charts
    refresh: str = "1m"  # how often a command asks the tool whether anything changed
    owner: str | None = None
    #: Splice's own Superset on this machine (the demo's): its home, relative to the workspace,
    #: holding the admin's credentials Splice made (admin.json); listed by `splice local status`
    local: str | None = None

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r} is not an http(s):// URL")
        return v.rstrip("/")

    @field_validator("refresh")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration(v)
        return v

    @property
    def refresh_seconds(self) -> int:
        return parse_duration(self.refresh)

    @model_validator(mode="after")
    def _credentials(self) -> BISection:
        if self.type == "superset" and not (self.password_env or self.token_env or self.local):
            raise ValueError(
                f"bi {self.name!r}: Superset signs in with a user and password: set "
                "password_env to the environment variable that holds the password"
            )
        if self.password_env and not (self.username or self.username_env):
            raise ValueError(f"bi {self.name!r}: set username (or username_env) with password_env")
        return self
