"""What every warehouse's telling of the stale-rates story must find: one helper, so the
DuckDB, PostgreSQL and Spark stories assert the same diagnosis of INC-1."""

from __future__ import annotations

from typing import Any


def assert_stale_rates_diagnosed(told: Any, warehouse: str) -> None:
    """INC-1 opened on the frozen rates, diagnosed as the vendor's Friday as-of on Monday's
    load, scoped to the days it touched (``told``: :func:`splice.demo.story.tell`'s first)."""
    assert told.run.ok, warehouse  # every audit and test passed on the wrong inputs
    assert [i.incident_id for i in told.incidents] == ["INC-1"], warehouse
    d = told.incidents[0].as_dict()
    assert d["origin"] == "pricing:fx.daily_rates"
    assert (d["first_interval"], d["last_interval"]) == ("2026-09-28", "2026-09-29")
    diag = d["diagnosis"]
    assert diag["source"]["node"] == "ingestion:fx_rates_ingest"
    assert "as_of is 2026-09-25" in diag["cause"], (warehouse, diag["cause"])  # read in it
    scoped = {n["node"]: n["ranges"] for n in diag["scope"]["nodes"]}
    assert scoped["pricing:marts.fct_bookings_usd"] == [["2026-09-28", "2026-09-29"]]
    assert scoped["finance:fct_gmv_qtd"] == [["2026-09-28", "2026-09-30"]]
