"""What every section of splice.toml shares: unknown keys are errors, names have one pattern."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: A name in splice.toml (a project, a domain, a metric): letters, digits, ``_`` and ``-``.
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"


class Strict(BaseModel):
    """A section whose misspelt key is an error naming the file and the key."""

    model_config = ConfigDict(extra="forbid")
