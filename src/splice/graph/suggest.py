"""Did you mean: the closest node ids to a name that matched none, for an error message."""

from __future__ import annotations

import difflib


def closest(name: str, candidates: list[str], n: int = 3) -> list[str]:
    """Closest candidate ids for an error message.

    >>> closest("pricing:fx.daly_rates", ["pricing:fx.daily_rates", "finance:stg"])
    ['pricing:fx.daily_rates']
    """
    found = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    if not found:
        short = {c.split(":", 1)[-1]: c for c in candidates}
        found = [
            short[s]
            for s in difflib.get_close_matches(name.split(":", 1)[-1], list(short), n=n, cutoff=0.5)
        ]
    return found
