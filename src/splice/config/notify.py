"""``[[notify]]`` in splice.toml: where notifications go, and which events each channel gets.

>>> c = NotifySection.model_validate({"name": "ops", "type": "webhook", "format": "slack",
...                                   "url_env": "SLACK_WEBHOOK_URL",
...                                   "events": ["proposal_requested"]})
>>> c.wants("proposal_requested"), c.wants("stop_started")
(True, False)
>>> NotifySection.model_validate({"name": "mail", "type": "email", "host": "smtp.example.com",
...                               "from": "splice@example.com", "to": ["oncall@example.com"]}).sender
'splice@example.com'
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Every event a channel can be told of, in the order a repair meets them.
EVENTS: tuple[str, ...] = (
    "incident_opened",  # splice watch opened an incident
    "proposal_requested",  # a proposal's undo is captured; it waits for an owner
    "request_escalated",  # unanswered: the next owner is asked as well
    "request_expired",  # unanswered (or approved, not applied) past the expiry
    "proposal_approved",  # an owner (or Splice at L3/L4) approved it
    "proposal_rejected",  # an owner rejected it, or its proposer withdrew it
    "repair_verified",  # applied, and the incident's metrics are back within their baseline
    "repair_unverified",  # applied, but verification failed
    "repair_failed",  # the repair's run failed (or was interrupted); the undo put the rows back
    "repair_undone",  # an applied repair was undone
    "stop_started",  # splice stop: nothing is approved or applied
    "stop_ended",  # splice resume
    "level_accepted",  # a person accepted an incident's new level as the normal
    "access_requested",  # read access was asked for; it waits for an owner of the domain
    "access_granted",  # an owner approved: the role reads the relations until its time is up
    "access_ended",  # a grant was revoked: its time was up, or a person ended it early
)
_NAME = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
_ENV = r"^[A-Za-z_][A-Za-z0-9_]*$"


class NotifySection(BaseModel):
    """One ``[[notify]]`` channel."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME)
    type: Literal["webhook", "email"]
    events: list[str] | None = None  # default: every event
    timeout: float = Field(default=5.0, gt=0, le=60)  # seconds per attempt
    max_attempts: int = Field(default=5, ge=1, le=50)
    # webhook
    format: Literal["json", "slack"] = "json"
    url: str | None = None
    url_env: str | None = Field(default=None, pattern=_ENV)  # the URL from this variable
    # email
    host: str | None = None
    port: int = Field(default=25, ge=1, le=65535)
    sender: str | None = None  # the From address (``from`` is accepted too)
    to: list[str] = Field(default_factory=list)
    starttls: bool = False
    username: str | None = None
    password_env: str | None = Field(default=None, pattern=_ENV)  # never the password itself

    @model_validator(mode="before")
    @classmethod
    def _aliases_and_secrets(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "password" in data:
            raise ValueError(
                'a password is never written in splice.toml: set password_env = "VAR" and '
                "put the password in that environment variable"
            )
        if "from" in data:
            data = dict(data)
            if "sender" in data:
                raise ValueError("give the From address once: sender or from, not both")
            data["sender"] = data.pop("from")
        return data

    @field_validator("events")
    @classmethod
    def _known_events(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        unknown = [e for e in v if e not in EVENTS]
        if unknown:
            raise ValueError(f"unknown event {unknown[0]!r} (events: {', '.join(EVENTS)})")
        return v

    @model_validator(mode="after")
    def _complete(self) -> NotifySection:
        if self.type == "webhook":
            if (self.url is None) == (self.url_env is None):
                raise ValueError(
                    f"webhook {self.name!r} needs exactly one of url or url_env (the name of "
                    "an environment variable holding the URL, for URLs that carry a secret)"
                )
            if self.url is not None and not self.url.startswith(("http://", "https://")):
                raise ValueError(f"webhook {self.name!r}: url must start with http:// or https://")
            extra = [k for k in ("host", "sender", "username", "password_env") if getattr(self, k)]
            if extra or self.to:
                raise ValueError(
                    f"webhook {self.name!r} takes no email settings ({', '.join(extra or ['to'])})"
                )
        else:
            missing = [k for k in ("host", "sender") if not getattr(self, k)]
            if not self.to:
                missing.append("to")
            if missing:
                raise ValueError(f"email channel {self.name!r} needs {', '.join(missing)}")
            if self.url or self.url_env or self.format != "json":
                raise ValueError(f"email channel {self.name!r} takes no url, url_env or format")
            if self.password_env and not self.username:
                raise ValueError(f"email channel {self.name!r}: password_env needs a username")
        return self

    def wants(self, event: str) -> bool:
        """Whether this channel is told of ``event`` (every event when ``events`` is not set)."""
        return self.events is None or event in self.events
