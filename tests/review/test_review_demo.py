"""splice review on the demo under git: real SQLMesh plans, real dbt state:modified, real
builds of the head in the review target, compared with prod in the DuckDB warehouse."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
from tests.review.conftest import review_cli as cli

from splice.review import review
from splice.review.render import markdown


def relations(repo: Path, schema: str) -> list[str]:
    con = duckdb.connect(str(repo / "warehouse.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [schema]
        ).fetchall()
    finally:
        con.close()
    return sorted(r[0] for r in rows)


def test_a_logic_change_in_sqlmesh_reaches_dbt_metrics_and_dashboards(
    checkout: Callable[[str], Path],
) -> None:
    repo = checkout("markup")
    res = cli(
        repo, "--base", "main", "--json", "--fail-on", "breaking", "--fail-on", "metric-change"
    )
    assert res.returncode == 1, res.stderr  # both gates trip: breaking, and GMV moves
    assert "--fail-on breaking and metric-change" in res.stderr
    r = json.loads(res.stdout)

    # what changed, in SQLMesh's own terms
    changes = {c["node"]: c for c in r["changes"]}
    rates = changes["pricing:fx.daily_rates"]
    assert (rates["tool"], rates["change"], rates["category"]) == (
        "sqlmesh",
        "modified",
        "breaking",
    )
    assert rates["columns"]["changed"] == ["rate_to_usd"]
    assert changes["pricing:marts.agg_gmv_daily"]["category"] == "indirect-breaking"
    assert r["breaking"] == ["pricing:fx.daily_rates"]

    # the impact across tools, column by column, with the path
    reached = {(c["node"], c["column"]): c for c in r["impact"]["columns"]}
    qtd = reached[("finance:fct_gmv_qtd", "gmv_usd_qtd")]
    assert qtd["path"][0] == "pricing:fx.daily_rates.rate_to_usd"
    assert "pricing:marts.agg_gmv_daily.gmv_usd" in qtd["path"]
    assert ("finance:fct_gmv_by_currency", "gmv_usd") in reached
    assert ("finance:fct_gmv_qtd", "bookings") not in reached  # bookings do not depend on rates
    assert {m["name"] for m in r["impact"]["metrics"]} == {"gmv_usd", "gmv_semantic", "fx_rate"}
    assert {d["label"] for d in r["impact"]["dashboards"]} == {
        "GMV (USD)",
        "Q3 close",
        "FX monitor",
    }

    # the data: built in the review target, compared with prod by each model's key
    data = r["data"]
    assert data["run"]["status"] == "success"
    models = {m["node"]: m for m in data["models"]}
    fx = models["pricing:fx.daily_rates"]
    assert fx["key"] == ["rate_date", "currency"]
    assert fx["head_relation"] == "warehouse.fx__review.daily_rates"
    assert fx["changed"] == fx["rows"]["prod"] > 0 and fx["added"] == fx["removed"] == 0
    assert set(fx["changed_values"]) == {"rate_to_usd"}
    ex = fx["examples"]["rate_to_usd"][0]
    assert abs(ex["head"] / ex["prod"] - 1.01) < 1e-6
    qtd_diff = models["finance:fct_gmv_qtd"]
    assert qtd_diff["key"] == ["booking_date"]  # from dbt's unique test
    assert qtd_diff["head_relation"] == "warehouse.finance_review.fct_gmv_qtd"
    assert set(qtd_diff["changed_values"]) == {"gmv_usd", "gmv_usd_qtd"}
    gmv = next(m for m in data["metrics"] if m["name"] == "gmv_usd")
    assert gmv["changed"] and gmv["changed_intervals"] == 14
    assert all(abs(x["after"] / x["before"] - 1.01) < 1e-3 for x in gmv["rows"])
    assert "gmv_usd" in r["metric_changes"]

    # cleaned up: the SQLMesh environment and the dbt relations are gone, prod untouched
    assert data["cleaned"]["sqlmesh"] == ["pricing:review"]
    assert relations(repo, "marts__review") == [] and relations(repo, "fx__review") == []
    assert relations(repo, "finance_review") == []
    assert "fct_gmv_qtd" in relations(repo, "finance")

    # the comment: summary first, details folded, names the dashboards and the metric change
    md = markdown(r)
    assert md.startswith("<!-- splice-review -->")
    summary = md.split("<details>")[0]
    assert "**Breaking:** `pricing:fx.daily_rates`" in summary
    assert "GMV (USD)" in summary and "Q3 close" in summary
    assert "+1.00%" in summary
    assert md.count("<details>") == 4 and len(md) < 65_536


def test_b_a_new_dbt_column_is_not_breaking_and_changes_no_data(
    checkout: Callable[[str], Path],
) -> None:
    repo = checkout("new-column")
    result = review(repo, base="main", keep=True)  # --keep: the environment stays to look at
    r = result.to_dict()
    (change,) = r["changes"]
    assert change["node"] == "finance:fct_gmv_qtd"
    assert change["tool"] == "dbt" and "body" in change["reasons"]
    assert change["columns"]["added"] == ["bookings_doubled"]
    assert change["columns"]["changed"] == [] and not change["columns"]["rows_may_differ"]
    assert r["breaking"] == [] and r["metric_changes"] == []  # neither CI gate trips
    assert r["impact"]["columns"] == []
    assert r["build"] == ["finance:fct_gmv_qtd"]  # nothing downstream to build
    (m,) = r["data"]["models"]
    assert m["columns_added"] == ["bookings_doubled"]
    assert (m["added"], m["removed"], m["changed"]) == (0, 0, 0)
    assert m["rows"]["prod"] == m["rows"]["head"] > 0
    # kept: the head's table is there, beside prod's, until someone drops it
    assert r["data"]["cleaned"] is None
    con = duckdb.connect(str(repo / "warehouse.duckdb"))
    try:
        cols = [
            d[0]
            for d in con.execute("SELECT * FROM finance_review.fct_gmv_qtd LIMIT 0").description
        ]
        assert "bookings_doubled" in cols
        con.execute("DROP TABLE finance_review.fct_gmv_qtd")
    finally:
        con.close()


def test_c_descriptions_only_build_nothing(checkout: Callable[[str], Path]) -> None:
    repo = checkout("docs")
    r = review(repo, base="main")
    (change,) = r.changes  # dbt's state:modified sees no change in a source's description
    assert change.node == "pricing:fx.daily_rates"
    assert change.category == "metadata" and not change.changes_data
    assert r.build == [] and r.data is None
    assert "nothing to build" in " ".join(r.notes)
    assert r.breaking == []


def test_d_a_dbt_only_change_reads_prod_through_a_virtual_copy_and_keeps_the_grain(
    checkout: Callable[[str], Path],
) -> None:
    """A change to a dbt model alone: pricing (SQLMesh) is unchanged, so its review environment
    is a virtual copy of prod (the dbt sources follow the target to marts__review); the changed
    model and its downstream are built and compared, the staging model by the grain of the
    table it selects from (changed values, not every row added and removed)."""
    repo = checkout("staging")
    res = cli(repo, "--base", "main", "--json")
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    assert [c["node"] for c in r["changes"]] == ["finance:stg_gmv_daily"]
    data = r["data"]
    assert data["run"]["status"] == "success", data["run"]
    assert data["copied"] == ["pricing:review"]
    assert r["not_built"] == []
    models = {m["node"]: m for m in data["models"]}
    assert set(models) == {
        "finance:stg_gmv_daily",
        "finance:fct_gmv_qtd",
        "finance:fct_gmv_by_currency",
    }
    stg = models["finance:stg_gmv_daily"]
    assert stg["key"] == ["booking_date", "currency"]
    assert stg["key_from"] == "pricing:marts.agg_gmv_daily"
    assert stg["rows"]["prod"] == stg["rows"]["head"] > 0
    assert (stg["added"], stg["removed"]) == (0, 0)
    assert stg["changed"] == stg["rows"]["prod"]
    assert set(stg["changed_values"]) == {"gmv_usd"}
    ex = stg["examples"]["gmv_usd"][0]
    assert abs(ex["head"] / ex["prod"] - 1.01) < 1e-3
    qtd = models["finance:fct_gmv_qtd"]
    assert qtd["changed"] == qtd["rows"]["prod"] > 0
    assert set(qtd["changed_values"]) == {"gmv_usd", "gmv_usd_qtd"}
    summary = markdown(r).split("<details>")[0]
    assert "3 model(s) built in `review` and compared with prod: 3 differ" in summary
    assert "key (booking_date, currency) from `pricing:marts.agg_gmv_daily`" in markdown(r)
    # the copy is dropped with the rest; prod is untouched
    assert data["cleaned"]["sqlmesh"] == ["pricing:review"]
    assert relations(repo, "marts__review") == [] and relations(repo, "finance_review") == []
    assert "agg_gmv_daily" in relations(repo, "marts")


def test_e_a_head_that_does_not_build_compares_nothing_and_fails_the_gate(
    checkout: Callable[[str], Path],
) -> None:
    """The head's build fails: the summary says nothing was compared (never "0 differ") and
    every --fail-on gate fails, since a gate cannot pass on data not compared."""
    repo = checkout("staging-broken")
    res = cli(repo, "--base", "main", "--fail-on", "metric-change")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert "Data: nothing compared: none of the 3 model(s) to compare was built" in res.stdout
    assert "0 differ" not in res.stdout
    assert "The head's build failed" in res.stdout and "gmv_usd_net" in res.stdout
    assert "3 model(s) to compare were not built for the head" in res.stderr
    assert "the gate fails" in res.stderr
    # --fail-on metric-change cannot be judged without the data step
    refused = cli(repo, "--base", "main", "--no-data", "--fail-on", "metric-change")
    assert refused.returncode == 2 and "needs the data step" in refused.stderr


def test_markdown_comment_for_ci(checkout: Callable[[str], Path]) -> None:
    repo = checkout("new-column")
    res = cli(repo, "--base", "main", "--markdown", "--no-data")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("<!-- splice-review -->")
    assert "`finance:fct_gmv_qtd` | dbt: state:modified.body" in res.stdout
    assert "added: `bookings_doubled`" in res.stdout
    assert "Traceback" not in res.stderr
