"""``[[schedule]]`` and ``[operator]`` in splice.toml: what ``splice serve`` does by itself.

>>> s = ScheduleSection.model_validate({"name": "daily", "cron": "0 6 * * *",
...                                     "timezone": "Europe/Amsterdam"})
>>> s.do, s.runs, s.watches
('run+watch', True, True)
>>> ScheduleSection.model_validate({"name": "x", "cron": "0 25 * * *"})
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for ScheduleSection
cron
  Value error, '0 25 * * *' is not a cron expression (minute hour day-of-month month day-of-week, e.g. '0 6 * * *'): ...
...
>>> OperatorSection().agent
'splice-operator'
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from splice.config.base import NAME_PATTERN, Strict

#: What a schedule does at each tick.
DOES: tuple[str, ...] = ("run", "watch", "run+watch")


class ScheduleSection(Strict):
    """One ``[[schedule]]``: a cron expression in a time zone, a target and what to do."""

    name: str = Field(pattern=NAME_PATTERN)
    #: five fields (minute hour day-of-month month day-of-week), as cron reads them
    cron: str
    #: an IANA time zone name; the cron expression is read in it (daylight saving included)
    timezone: str = "UTC"
    #: the Splice target; default ``[workspace] default_target``
    target: str | None = None
    #: ``run`` (plan and run across tools, as ``splice run``), ``watch`` or ``run+watch``
    do: Literal["run", "watch", "run+watch"] = "run+watch"
    #: a node selector for the run (``splice run --select``); default: every node
    select: str | None = None
    description: str | None = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        from croniter import croniter

        text = " ".join(v.split())
        if len(text.split()) != 5 or not croniter.is_valid(text):
            raise ValueError(
                f"{v!r} is not a cron expression (minute hour day-of-month month day-of-week, "
                "e.g. '0 6 * * *'): check each of the five fields"
            )
        return text

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{v!r} is not a time zone: give an IANA name such as 'UTC' or 'Europe/Amsterdam'"
            ) from None
        return v

    @property
    def runs(self) -> bool:
        return self.do in ("run", "run+watch")

    @property
    def watches(self) -> bool:
        return self.do in ("watch", "run+watch")


class OperatorSection(Strict):
    """``[operator]``: how ``splice serve`` acts between plans."""

    #: the agent principal the operator's own steps are recorded under
    agent: str = Field(default="splice-operator", pattern=NAME_PATTERN)
    #: keep running the ``run`` schedules while an org-wide stop is active (nothing is proposed
    #: or applied either way)
    run_during_stop: bool = False
    #: watches triggered within this many seconds of each other become one watch per target
    quiet_seconds: float = Field(default=30.0, ge=0, le=86400)
    #: seconds between two looks at the orchestrators' finished runs and Splice's journal
    poll_seconds: float = Field(default=30.0, gt=0, le=86400)
    #: seconds between two passes of the operator (schedules due, triggered watches)
    tick_seconds: float = Field(default=5.0, gt=0, le=3600)
    #: turn the operator off (``splice serve`` then only serves and does housekeeping)
    enabled: bool = True
