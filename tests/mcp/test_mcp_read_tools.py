"""Every reading tool over a real stdio session on the demo story answers what the CLI does
(the same splice.api functions), as one JSON object."""

from __future__ import annotations

from typing import Any

import anyio
from tests.mcp.mcp_support import call, stdio_session


def test_every_reading_tool_answers_over_stdio(stale_story: Any) -> None:
    ws = stale_story.build.workspace  # read-only: the tools below write nothing

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_session(ws, "catalog", "quality", "connectors") as s:
            out["search"] = await call(s, "search_nodes", query="gmv", limit=5)
            out["node"] = await call(s, "get_node", node_id="pricing:fx.daily_rates")
            out["graph"] = await call(s, "get_graph", selector="+pricing:marts.agg_gmv_daily")
            out["doctor"] = await call(s, "run_doctor")
            out["metrics"] = await call(s, "list_metrics")
            out["history"] = await call(s, "get_metric_history", name="fx_rate", series="EUR")
            out["anomalies"] = await call(s, "list_anomalies", metric="fx_rate")
            out["monitors"] = await call(s, "list_default_monitors")
            out["jobs"] = await call(s, "list_ingestion_jobs")
            out["dashboards"] = await call(s, "list_dashboards")
            out["runs"] = await call(s, "list_runs", limit=3)
            out["journal"] = await call(
                s, "get_run_journal", run_id=out["runs"]["runs"][0]["run_id"]
            )
        return out

    r = anyio.run(main)
    assert r["search"]["nodes"][0]["id"] == "pricing:marts.agg_gmv_daily"
    assert "rate_to_usd" in str(r["node"]["columns"])
    assert any("agg_gmv_daily" in str(n) for n in r["graph"]["nodes"])
    assert r["doctor"]["count"] == len(r["doctor"]["checks"])
    fx = next(m for m in r["metrics"]["metrics"] if m["name"] == "fx_rate")
    assert fx["open_anomalies"] > 0
    assert r["history"]["series"] and r["anomalies"]["count"] > 0
    assert r["monitors"]["count"] > 0
    assert any(j["loads"] for j in r["jobs"]["jobs"])
    assert any("q3_close" in d["id"] for d in r["dashboards"]["dashboards"])
    assert r["journal"]["events"]
