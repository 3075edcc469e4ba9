"""The operator's clock: the wall clock, or a clock a demo or a test moves.

A long-lived server reads the time at every pass; the schedules, the quiet period of
coalesced watches and the execution time of a scheduled run all come from here, never from
``time.time()`` alone, so a week of production can be played in minutes.

``SPLICE_OPERATOR_CLOCK=PATH`` makes ``splice serve`` read the time from the file ``PATH`` (an
ISO-8601 date-time, UTC unless it names its offset), moved by whoever plays the week. It is for
demos and tests: in production leave it unset.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "clock"
>>> _ = p.write_text("2026-09-28T06:00")
>>> FileClock(p).now().isoformat()
'2026-09-28T06:00:00+00:00'
>>> SystemClock().now().tzinfo is not None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from splice.errors import ConfigError

ENV = "SPLICE_OPERATOR_CLOCK"


class Clock(Protocol):
    """Anything that tells the time (timezone-aware)."""

    def now(self) -> datetime: ...

    def describe(self) -> str: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def describe(self) -> str:
        return "the system clock"


class FileClock:
    """The time written in a file (``SPLICE_OPERATOR_CLOCK``), read at every call."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def now(self) -> datetime:
        try:
            text = self.path.read_text().strip()
        except OSError as e:
            raise ConfigError(
                f"{ENV}={self.path}: the clock file cannot be read ({e.strerror}).",
                fix=f"write an ISO date-time into {self.path}, or unset {ENV}",
            ) from None
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(
                f"{ENV}={self.path}: {text[:40]!r} is not an ISO date-time.",
                fix="write e.g. 2026-09-28T06:00 (UTC) or 2026-09-28T06:00+02:00",
            ) from None
        return when if when.tzinfo else when.replace(tzinfo=UTC)

    def describe(self) -> str:
        return f"the time in {self.path} ({ENV})"


def from_env(environ: Mapping[str, str] | None = None) -> Clock:
    """The clock ``splice serve`` uses: :class:`FileClock` when ``SPLICE_OPERATOR_CLOCK`` is
    set, else the system clock."""
    env = os.environ if environ is None else environ
    path = env.get(ENV)
    return FileClock(path) if path else SystemClock()
