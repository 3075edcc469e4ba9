"""A real Apache Superset on 127.0.0.1 (``make superset``'s environment), started by the test
over a copy of the demo's DuckDB warehouse and seeded with the "GMV" dashboard: what a person
opening it finds, through Superset's REST API, and the warehouse still Splice's to write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from superset_support import PASSWORD, USER, Served, needs_superset, seeded_superset

from splice.bi.superset_seed import (
    BAR_CHART,
    DASHBOARD,
    LINE_CHART,
    PHYSICAL,
    VIRTUAL,
    VIRTUAL_SQL,
    seed_demo,
)
from splice.demo import DemoResult
from splice.support import http

# Superset has an environment of its own (`make superset`); `make test` names it, and so does
# this for a pytest run started by hand (as tests/conftest.py does for Airflow).
pytestmark = needs_superset


class Superset(Served):
    def get(self, path: str) -> Any:
        login = {"username": USER, "password": PASSWORD, "provider": "db"}
        token = http.request("POST", f"{self.url}/api/v1/security/login", json=login).json()
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        return http.request("GET", self.url + path, headers=auth, timeout=60).json()


@pytest.fixture(scope="module")
def superset(demo_build: DemoResult, tmp_path_factory: pytest.TempPathFactory,
             ) -> Iterator[Superset]:  # fmt: skip
    """Superset serving a copy of the demo's warehouse, seeded; stopped at the end."""
    assert isinstance(demo_build.warehouse, Path)
    with seeded_superset(demo_build.warehouse, tmp_path_factory.mktemp("superset")) as s:
        yield Superset(s.url, s.home, s.warehouse, s.seeded)


def test_the_gmv_dashboard_shows_both_charts_with_data(superset: Superset) -> None:
    seeded = superset.seeded
    assert superset.seeded["dashboard_url"] == f"{superset.url}/superset/dashboard/gmv/"
    dash = superset.get(f"/api/v1/dashboard/{seeded['dashboard_id']}")["result"]
    assert dash["dashboard_title"] == DASHBOARD and dash["published"]
    charts = superset.get(f"/api/v1/dashboard/{seeded['dashboard_id']}/charts")["result"]
    assert {c["slice_name"]: c["form_data"]["datasource"] for c in charts} == {
        LINE_CHART: f"{seeded['datasets'][PHYSICAL]}__table",
        BAR_CHART: f"{seeded['datasets'][VIRTUAL]}__table",
    }
    for chart_id in seeded["charts"].values():  # each chart's query runs on the warehouse
        data = superset.get(f"/api/v1/chart/{chart_id}/data/")["result"][0]
        assert data["status"] == "success" and data["rowcount"] > 0, data.get("error")


def test_the_virtual_dataset_reads_the_sql_as_written(superset: Superset) -> None:
    ds = superset.get(f"/api/v1/dataset/{superset.seeded['datasets'][VIRTUAL]}")["result"]
    assert (ds["kind"], ds["sql"], ds["database"]["database_name"]) == (
        "virtual", VIRTUAL_SQL, "warehouse")  # fmt: skip
    assert {"currency_name", "region", "gmv_usd"} <= {c["column_name"] for c in ds["columns"]}


def test_seeding_again_makes_nothing_twice(superset: Superset) -> None:
    again = seed_demo(superset.url, USER, PASSWORD, superset.warehouse)
    assert again == superset.seeded
    names = [c["slice_name"] for c in superset.get("/api/v1/chart/?q=(page_size:100)")["result"]]
    assert sorted(names) == sorted([LINE_CHART, BAR_CHART])
    assert superset.get("/api/v1/dashboard/")["count"] == 1


def test_splice_still_writes_the_warehouse_while_superset_runs(superset: Superset) -> None:
    chart = superset.seeded["charts"][LINE_CHART]
    assert superset.get(f"/api/v1/chart/{chart}/data/")["result"][0]["status"] == "success"
    con = duckdb.connect(str(superset.warehouse))  # a writer: fails if Superset held a lock
    try:
        con.execute("CREATE TABLE finance.superset_probe AS SELECT 1 AS x")
        con.execute("DROP TABLE finance.superset_probe")
    finally:
        con.close()
    assert superset.get(f"/api/v1/chart/{chart}/data/")["result"][0]["rowcount"] == 92
