"""`splice run --target dev` builds SQLMesh's dev environment and dbt's dev target together
(real SQLMesh, real dbt, one DuckDB file), and leaves prod alone."""

from __future__ import annotations

import json
from pathlib import Path

from run_support import query, splice_cli, versions


def test_dev_target_builds_both_tools_dev_environments_and_leaves_prod_alone(
    fresh_demo: Path,
) -> None:
    assert splice_cli("run", cwd=fresh_demo, timeout=300).returncode == 0  # prod first
    prod_before = versions(fresh_demo, "prod")
    prod_qtd = query(fresh_demo, "SELECT * FROM finance.fct_gmv_qtd ORDER BY ALL")

    r = splice_cli("--target", "dev", "run", "--json", cwd=fresh_demo, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["status"] == "success" and report["target"] == "dev"
    # the semantic layer's calendar reads nothing: its own dbt segment, ahead of SQLMesh's
    assert [(s["project"], s["environment"]) for s in report["segments"]] == [
        ("finance", "dev"),
        ("pricing", "dev"),
        ("finance", "dev"),
    ]

    # SQLMesh's virtual dev environment, and dbt's dev target, both in the warehouse
    dev = {
        (s, t)
        for s, t in query(
            fresh_demo,
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema IN ('marts__dev', 'fx__dev', 'finance_dev')",
        )
    }
    assert {("marts__dev", "agg_gmv_daily"), ("fx__dev", "daily_rates")} <= dev
    assert {("finance_dev", "stg_gmv_daily"), ("finance_dev", "fct_gmv_qtd")} <= dev
    # dbt's dev model reads SQLMesh's dev view (the target's mapping), not prod's
    (stg_sql,) = query(
        fresh_demo,
        "SELECT sql FROM duckdb_views() WHERE schema_name = 'finance_dev' "
        "AND view_name = 'stg_gmv_daily'",
    )[0]
    assert "marts__dev.agg_gmv_daily" in stg_sql.replace('"', "")
    assert "marts.agg_gmv_daily" not in stg_sql.replace('"', "")
    assert query(fresh_demo, "SELECT * FROM finance_dev.fct_gmv_qtd ORDER BY ALL") == prod_qtd

    # prod: no evidence moved, no data changed
    assert versions(fresh_demo, "prod") == prod_before
    assert query(fresh_demo, "SELECT * FROM finance.fct_gmv_qtd ORDER BY ALL") == prod_qtd
    assert set(versions(fresh_demo, "dev")) >= {"finance:stg_gmv_daily", "finance:fct_gmv_qtd"}

    again = splice_cli("--target", "dev", "run", "--json", cwd=fresh_demo, timeout=300)
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert second["segments"] == [], json.dumps(second["nodes"], indent=1)[:3000]
