"""seeded/: a dbt project whose source is its own seed, written in Snowflake SQL, run on DuckDB.

    shop: seed orders (lands in raw.orders) ..matched..> source:raw.orders (no columns declared)
          -> fct_orders (incremental, customerNumber AS customer_number)
          -> renewals (DATEADD(month, 1, ordered_at): Snowflake SQL, `dialect = "snowflake"`)

dbt knows no edge from the seed to the source. Splice binds them as it binds projects, so the
first run loads the seed before the model reads it, a new row in the seed reaches the
incremental model, and the graph, doctor and the column lineage agree.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixture_projects import copy_fixture, splice_cli

from splice.config.workspace import WorkspaceConfig

SEED, SOURCE, FCT, RENEWALS = (
    "shop:orders",
    "shop:source:raw.orders",
    "shop:fct_orders",
    "shop:renewals",
)


def splice(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return splice_cli(root, *args, columns=250)


def fct_rows(root: Path) -> list[tuple[object, ...]]:
    import duckdb

    with duckdb.connect(str(root / "warehouse.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT order_id, customer_number FROM main.fct_orders ORDER BY 1"
        ).fetchall()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """The fixture planned (before anything is built) and run once through Splice."""
    root = copy_fixture("seeded", tmp_path_factory.mktemp("seeded"))
    plan = splice(root, "plan", "--json")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    run = splice(root, "run")
    assert run.returncode == 0, run.stdout + run.stderr
    return root, json.loads(plan.stdout), run.stdout


def test_the_first_run_loads_the_seed_before_the_model_that_reads_it(built: tuple) -> None:
    """One `dbt build` of both would race them (dbt knows no edge): two segments, in order."""
    root, plan, _ = built
    segments = {s["id"]: s for s in plan["segments"]}
    (first,) = [s for s in segments.values() if SEED in s["node_ids"]]
    (second,) = [s for s in segments.values() if FCT in s["node_ids"]]
    assert first["id"] != second["id"]
    assert first["id"] in second["depends_on"]
    assert RENEWALS in second["node_ids"]  # dbt orders fct_orders -> renewals itself
    assert fct_rows(root) == [(1, 101), (2, 102), (3, 101)]


def test_graph_doctor_and_lineage_agree(built: tuple) -> None:
    root = built[0]
    listed = splice(root, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    records = {r["id"]: r for r in json.loads(listed.stdout)}
    assert records[SOURCE]["upstream"] == [SEED]
    assert records[SEED]["downstream"] == [SOURCE]
    doc = splice(root, "doctor", "--json")
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert not [c for c in json.loads(doc.stdout)["checks"] if c["code"] in ("SPL101", "SPL102")]
    res = splice(root, "lineage", f"{FCT}.customer_number", "--upstream", "--json")
    assert res.returncode == 0, res.stderr
    assert (SEED, "customernumber", "direct") in {
        (h["node"], h["column"], h["kind"]) for h in json.loads(res.stdout)["upstream"]
    }


# -- [[projects]] dialect -------------------------------------------------------------------------
def test_snowflake_sql_is_parsed_as_snowflake_and_says_so(built: tuple) -> None:
    root = built[0]
    res = splice(root, "lineage", f"{RENEWALS}.renews_on", "--upstream", "--json")
    assert res.returncode == 0, res.stderr
    ups = {(h["node"], h["column"]) for h in json.loads(res.stdout)["upstream"]}
    assert (FCT, "ordered_at") in ups
    assert not [c for _, c in ups if c == "month"], ups  # DATEADD's date part is no column
    records = {r["id"]: r for r in json.loads(splice(root, "ls", "--json").stdout)}
    assert records[RENEWALS]["dialect"] == records[FCT]["dialect"] == "snowflake"
    doc = json.loads(splice(root, "doctor", "--json").stdout)
    assert doc["projects"] == {
        "shop": {
            "format": "dbt",
            "dialects": ["snowflake"],
            "from": "splice.toml: [[projects]] dialect",
        }
    }
    assert "shop (dbt): SQL parsed as snowflake (splice.toml: [[projects]] dialect)" in (
        splice(root, "doctor").stdout
    )


def test_without_the_setting_the_adapters_dialect_reads_a_column_month(tmp_path: Path) -> None:
    root = copy_fixture("seeded", tmp_path)
    toml = root / "splice.toml"
    toml.write_text(toml.read_text().replace('dialect = "snowflake"\n', ""))
    res = splice(root, "lineage", f"{RENEWALS}.renews_on", "--upstream", "--json")
    assert res.returncode == 0, res.stderr
    assert (FCT, "month") in {(h["node"], h["column"]) for h in json.loads(res.stdout)["upstream"]}
    doc = json.loads(splice(root, "doctor", "--no-lineage", "--json").stdout)
    assert doc["projects"]["shop"] == {
        "format": "dbt",
        "dialects": ["duckdb"],
        "from": "dbt's duckdb adapter",
    }


def test_a_sqlmesh_project_names_its_dialect_itself() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="dialect is for dbt projects"):
        WorkspaceConfig.model_validate(
            {"projects": [{"name": "p", "format": "sqlmesh", "path": ".", "dialect": "snowflake"}]}
        )
    with pytest.raises(ValidationError, match="unknown dialect 'snowflak'"):
        WorkspaceConfig.model_validate(
            {"projects": [{"name": "p", "format": "dbt", "path": ".", "dialect": "snowflak"}]}
        )


# -- column names ---------------------------------------------------------------------------------
def test_a_mixed_case_column_finds_its_users(built: tuple) -> None:
    root = built[0]
    for spelt in ("customerNumber", "customernumber", "CUSTOMERNUMBER"):
        res = splice(root, "lineage", f"source:raw.orders.{spelt}", "--downstream", "--json")
        assert res.returncode == 0, res.stderr
        down = {(h["node"], h["column"]) for h in json.loads(res.stdout)["downstream"]}
        assert (FCT, "customer_number") in down, (spelt, down)
    text = splice(root, "lineage", "source:raw.orders.customerNumber", "--downstream").stdout
    assert "shop:fct_orders.customer_number" in text and "none uses" not in text


def test_a_column_a_source_does_not_have_is_an_error(built: tuple) -> None:
    res = splice(built[0], "lineage", "source:raw.orders.customerNumbr", "--downstream")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "shop:source:raw.orders has no column 'customerNumbr'" in res.stderr
    assert "Closest: customernumber" in res.stderr
    assert "Traceback" not in res.stderr and "none uses" not in res.stdout


# -- last: changes the built workspace ---------------------------------------------------------------
def test_a_new_row_in_the_seed_reaches_the_incremental_model(built: tuple) -> None:
    root = built[0]
    with (root / "shop" / "seeds" / "orders.csv").open("a") as f:
        f.write("4,103,2024-01-04,9.5\n")
    run = splice(root, "run")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 built" in run.stdout, run.stdout  # the seed, fct_orders and renewals
    assert fct_rows(root) == [(1, 101), (2, 102), (3, 101), (4, 103)]
