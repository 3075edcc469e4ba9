"""A real Superset (``make superset``) over a copy of the demo's warehouse: the GMV dashboard
seeded as a person opening it finds it, and the warehouse still Splice's to write; then an
incident written onto its charts (:mod:`splice.bi.annotate`): the demo's
GMV dashboard is seeded, INC-1 is annotated on both charts and read back through Superset's REST
API (the annotation, each chart's params and query_context, each chart's data call), annotated
again (no write at all), retitled (the same annotation), and ended (the layer taken out of the
charts and deleted, the charts still answering)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from superset_support import PASSWORD, USER, Served, needs_superset, seeded_superset

from splice.bi.annotate import LAYER, annotate, end
from splice.bi.annotate import annotations as read_back
from splice.bi.superset import Superset
from splice.bi.superset_seed import (
    BAR_CHART,
    DASHBOARD,
    LINE_CHART,
    PHYSICAL,
    VIRTUAL,
    VIRTUAL_SQL,
    seed_demo,
)
from splice.config.bi import BISection
from splice.demo import DemoResult
from splice.errors import BIError
from splice.support import http

pytestmark = needs_superset

ENV = "SPLICE_TEST_SUPERSET_PASSWORD"
LINK = "http://127.0.0.1:8000/incidents/INC-1"
INC: dict[str, Any] = {"key": "INC-1", "title": "stale rates", "description": "fx_rates stopped loading.",
       "start": dt.date(2026, 9, 14), "end": dt.date(2026, 9, 16), "link": LINK}  # fmt: skip


class Recording(Superset):
    """The client, keeping each call's method and path."""

    def __init__(self, cfg: BISection) -> None:
        super().__init__(cfg)
        self.calls: list[tuple[str, str]] = []

    def call(self, method: str, path: str, body: Any = None) -> Any:
        self.calls.append((method, path.split("?")[0]))
        return super().call(method, path, body)

    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET"]


@pytest.fixture(scope="module")
def served(demo_build: DemoResult, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Superset serving a copy of the demo's warehouse, seeded; stopped at the end."""
    assert isinstance(demo_build.warehouse, Path)
    with seeded_superset(demo_build.warehouse, tmp_path_factory.mktemp("superset-annotate")) as s:
        yield s


class Opened(Served):
    """What a person opening Superset sees (through its REST API, signed in as the admin)."""

    def get(self, path: str) -> Any:
        login = {"username": USER, "password": PASSWORD, "provider": "db"}
        token = http.request("POST", f"{self.url}/api/v1/security/login", json=login).json()
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        return http.request("GET", self.url + path, headers=auth, timeout=60).json()


@pytest.fixture
def superset(served: Served) -> Opened:
    return Opened(served.url, served.home, served.warehouse, served.seeded)


# -- the seeded dashboard, as a person opening it finds it (before any annotation) -----------
def test_the_gmv_dashboard_shows_both_charts_with_data(superset: Opened) -> None:
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


def test_the_virtual_dataset_reads_the_sql_as_written(superset: Opened) -> None:
    ds = superset.get(f"/api/v1/dataset/{superset.seeded['datasets'][VIRTUAL]}")["result"]
    assert (ds["kind"], ds["sql"], ds["database"]["database_name"]) == (
        "virtual", VIRTUAL_SQL, "warehouse")  # fmt: skip
    assert {"currency_name", "region", "gmv_usd"} <= {c["column_name"] for c in ds["columns"]}


def test_seeding_again_makes_nothing_twice(superset: Opened) -> None:
    again = seed_demo(superset.url, USER, PASSWORD, superset.warehouse)
    assert again == superset.seeded
    names = [c["slice_name"] for c in superset.get("/api/v1/chart/?q=(page_size:100)")["result"]]
    assert sorted(names) == sorted([LINE_CHART, BAR_CHART])
    assert superset.get("/api/v1/dashboard/")["count"] == 1


def test_splice_still_writes_the_warehouse_while_superset_runs(superset: Opened) -> None:
    chart = superset.seeded["charts"][LINE_CHART]
    assert superset.get(f"/api/v1/chart/{chart}/data/")["result"][0]["status"] == "success"
    con = duckdb.connect(str(superset.warehouse))  # a writer: fails if Superset held a lock
    try:
        con.execute("CREATE TABLE finance.superset_probe AS SELECT 1 AS x")
        con.execute("DROP TABLE finance.superset_probe")
    finally:
        con.close()
    assert superset.get(f"/api/v1/chart/{chart}/data/")["result"][0]["rowcount"] == 92


@pytest.fixture
def api(served: Served, monkeypatch: pytest.MonkeyPatch) -> Recording:
    monkeypatch.setenv(ENV, PASSWORD)
    return Recording(BISection(name="superset", type="superset", url=served.url,
                               username=USER, password_env=ENV))  # fmt: skip


def chart_layers(api: Superset, chart_id: int) -> list[list[dict[str, Any]]]:
    """The annotation layers the chart lists: in its params, its query_context's form_data and
    each of its queries."""
    chart = api.call("GET", f"/api/v1/chart/{chart_id}")["result"]
    context = json.loads(chart["query_context"])
    return [json.loads(chart["params"])["annotation_layers"],
            context["form_data"]["annotation_layers"],
            *(q["annotation_layers"] for q in context["queries"])]  # fmt: skip


def chart_data(api: Superset, chart_id: int) -> dict[str, Any]:
    data = api.call("GET", f"/api/v1/chart/{chart_id}/data/")["result"][0]
    assert data["status"] == "success" and data["rowcount"] > 0, data.get("error")
    return dict(data)


def test_an_incident_shows_on_both_charts(served: Served, api: Recording) -> None:
    done = annotate(api, charts=served.charts, **INC)
    assert done["charts"] == served.charts
    layer = api.call("GET", f"/api/v1/annotation_layer/{done['layer']}")["result"]
    assert layer["name"] == LAYER
    got = api.call("GET", f"/api/v1/annotation_layer/{done['layer']}/annotation/"
                          f"{done['annotation']}")["result"]  # fmt: skip
    assert (got["short_descr"], got["long_descr"]) == (
        "INC-1 stale rates",
        f"fx_rates stopped loading.\n{LINK}",
    )
    assert (got["start_dttm"][:19], got["end_dttm"][:19]) == (
        "2026-09-14T00:00:00",
        "2026-09-16T23:59:59",
    )
    assert json.loads(got["json_metadata"]) == {"incident": "INC-1", "link": LINK}
    assert read_back(api) == [{"id": done["annotation"], "key": "INC-1",
                                 "short_descr": "INC-1 stale rates",
                                 "long_descr": f"fx_rates stopped loading.\n{LINK}",
                                 "start": "2026-09-14T00:00:00", "end": "2026-09-16T23:59:59",
                                 "link": LINK}]  # fmt: skip
    for chart_id in served.charts:
        for listed in chart_layers(api, chart_id):
            ours = [e for e in listed if e["name"] == LAYER]
            assert [(e["value"], e["annotationType"], e["sourceType"]) for e in ours] == [
                (done["layer"], "INTERVAL", "NATIVE")]  # fmt: skip
        records = chart_data(api, chart_id)["annotation_data"][LAYER]["records"]
        assert [r["short_descr"] for r in records] == ["INC-1 stale rates"]
        assert records[0]["end_dttm"] - records[0]["start_dttm"] == (3 * 86400 - 1) * 1000


def test_annotating_again_writes_nothing(served: Served, api: Recording) -> None:
    first = annotate(api, charts=served.charts, **INC)
    api.calls.clear()
    assert annotate(api, charts=served.charts, **INC) == first
    assert api.writes() == []
    assert len(read_back(api)) == 1


def test_the_rest_of_a_chart_is_kept(served: Served, api: Recording) -> None:
    before = {c: json.loads(api.call("GET", f"/api/v1/chart/{c}")["result"]["params"])
              for c in served.charts}  # fmt: skip
    annotate(api, charts=served.charts, **INC)
    for c in served.charts:
        after = json.loads(api.call("GET", f"/api/v1/chart/{c}")["result"]["params"])
        assert {k: v for k, v in after.items() if k != "annotation_layers"} == {
            k: v for k, v in before[c].items() if k != "annotation_layers"}  # fmt: skip
    # seeding the demo again keeps the layer the charts show
    assert seed_demo(served.url, USER, PASSWORD, served.warehouse) == served.seeded
    assert all(any(e["name"] == LAYER for e in chart_layers(api, c)[0]) for c in served.charts)


def test_a_new_title_updates_the_same_annotation(served: Served, api: Recording) -> None:
    first = annotate(api, charts=served.charts, **INC)
    api.calls.clear()
    again = annotate(api, charts=served.charts, **{**INC, "title": "repair verified"})
    assert again == first
    assert api.writes() == [("PUT", f"/api/v1/annotation_layer/{first['layer']}/annotation/"
                                    f"{first['annotation']}")]  # fmt: skip
    assert [a["short_descr"] for a in read_back(api)] == ["INC-1 repair verified"]
    records = chart_data(api, served.charts[0])["annotation_data"][LAYER]["records"]
    assert [r["short_descr"] for r in records] == ["INC-1 repair verified"]


def test_ending_removes_the_annotation_and_the_layer(served: Served, api: Recording) -> None:
    first = annotate(api, charts=served.charts, **INC)
    done = end(api, key="INC-1")
    assert done == {"annotation": first["annotation"], "layer": first["layer"],
                    "layer_deleted": True, "detached": sorted(served.charts)}  # fmt: skip
    assert read_back(api) == []
    assert api.listing("annotation_layer", ["id", "name"]) == []
    for chart_id in served.charts:
        assert chart_layers(api, chart_id) == [[], [], []]
        assert chart_data(api, chart_id)["annotation_data"] == {}
    api.calls.clear()
    assert end(api, key="INC-1") == {"annotation": None, "layer": None,
                                     "layer_deleted": False, "detached": []}  # fmt: skip
    assert api.writes() == []


def test_ending_one_incident_keeps_the_layer_for_another(served: Served, api: Recording) -> None:
    annotate(api, charts=served.charts, **INC)
    other = annotate(api, charts=served.charts[:1], **{**INC, "key": "INC-2", "title": "late"})
    done = end(api, key="INC-1")
    assert (done["layer_deleted"], done["detached"]) == (False, [])
    assert [a["key"] for a in read_back(api)] == ["INC-2"]
    for chart_id in served.charts:  # a layer is Superset's: both charts list it, both show INC-2
        records = chart_data(api, chart_id)["annotation_data"][LAYER]["records"]
        assert [r["short_descr"] for r in records] == ["INC-2 late"]
    assert end(api, key="INC-2")["layer"] == other["layer"]
    assert read_back(api) == [] and api.listing("annotation_layer", ["id"]) == []


def test_a_wrong_password_is_a_refused_sign_in(served: Served,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv(ENV, "not-the-password")
    api = Superset(BISection(name="superset", type="superset", url=served.url, username=USER,
                             password_env=ENV))  # fmt: skip
    with pytest.raises(BIError) as e:
        annotate(api, charts=served.charts, **INC)
    assert "refused the sign-in of admin" in e.value.message and "\n" not in e.value.message
    assert e.value.retry is False and e.value.__cause__ is None and e.value.__suppress_context__
