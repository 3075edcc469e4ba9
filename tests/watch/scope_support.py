"""Helpers for the scope tests on the Friday story (:func:`splice.demo.story.tell_friday_freeze`)."""

from __future__ import annotations

from pathlib import Path

from splice.demo.story import FRIDAY, FridayStory, tell_friday_freeze

__all__ = ["FRIDAY", "FridayStory", "tell_friday_freeze"]


def inflate_rate(workspace: Path, day: str = "2026-09-29", currency: str = "JPY") -> None:
    """One raw rate 100,000 times too large: fx.daily_rates' accepted_range audit (below 10)
    fails and blocks the models downstream."""
    import duckdb

    con = duckdb.connect(str(workspace / "warehouse.duckdb"))
    try:
        con.execute(
            "UPDATE raw.fx_rates SET rate_to_usd = rate_to_usd * 100000 "
            "WHERE rate_date = CAST(? AS DATE) AND currency = ?",
            [day, currency],
        )
    finally:
        con.close()
