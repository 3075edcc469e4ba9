"""The demo's "GMV" dashboard in a Superset, made through its REST API (:func:`seed_demo`).

Over a DuckDB warehouse file: the database ``warehouse`` (opened read-only: DuckDB lets one
process write a file, and Superset must never be it), the physical dataset
``finance.fct_gmv_qtd``, the virtual dataset ``gmv_by_currency_region`` (:data:`VIRTUAL_SQL`),
a chart on each and the dashboard ``GMV`` holding both. Everything is looked up by name first
and updated in place, so seeding twice makes nothing twice. The calls go through
:class:`splice.bi.superset.Superset` (its errors are :class:`splice.errors.BIError`).

REST facts observed on Superset 6.1.0
-------------------------------------

Observed against ``superset run`` from ``make superset`` (:mod:`splice.bi.superset_local`),
trimmed. ``q=`` is a URL-encoded Rison object (:func:`splice.bi.superset.rison`); a column that
is not a list column is dropped from ``columns:`` without an error.

Sign in (every later call sends ``Authorization: Bearer ACCESS``)::

    POST /api/v1/security/login
      {"username": "admin", "password": "...", "provider": "db", "refresh": true}
    200 {"access_token": "eyJ...", "refresh_token": "eyJ..."}

With ``WTF_CSRF_ENABLED = False`` (the local config) no CSRF token is needed. Otherwise
``GET /api/v1/security/csrf_token/`` answers ``{"result": "ImVl..."}``, to be sent as
``X-CSRFToken`` with the session cookie that answer set.

Dashboards, newest change first (``changed_on`` itself is not a list column: it is dropped;
``changed_on_utc`` is ISO 8601 with ``+0000``)::

    GET /api/v1/dashboard/?q=(columns:!(id,dashboard_title,slug,url,changed_on_utc,published),
                              order_column:changed_on_delta_humanized,order_direction:desc,
                              page:0,page_size:100)
    200 {"count": 1, "ids": [1], "result": [{"id": 1, "dashboard_title": "GMV", "slug": "gmv",
         "url": "/superset/dashboard/gmv/", "changed_on_utc": "2026-12-07T13:02:34.726102+0000",
         "published": true}]}

    GET /api/v1/dashboard/1
    200 {"result": {"id": 1, "dashboard_title": "GMV", "changed_on": "2026-12-07T13:02:34.726102",
         "charts": ["GMV by day"], "position_json": "{...}" or null, "json_metadata": ...,
         "url": "/superset/dashboard/gmv/", "uuid": "5b22...", "owners": [...]}}

A dashboard's ``changed_on`` moves when the dashboard itself is saved (title, layout,
metadata), not when one of its charts is: a chart's own ``changed_on`` says that.

A dashboard's charts (its datasource only as ``form_data.datasource``, ``"ID__table"``)::

    GET /api/v1/dashboard/1/charts
    200 {"result": [{"id": 1, "slice_name": "GMV by day", "changed_on": "2026-12-07T13:02:37",
         "form_data": {"datasource": "1__table", "viz_type": "echarts_timeseries_line",
                       "x_axis": "booking_date", "metrics": [...], "annotation_layers": [],
                       "slice_id": 1, ...},
         "slice_url": "/explore/?slice_id=1&form_data=...", "description": null}]}

    GET /api/v1/dashboard/1/datasets      (the datasets its charts read, columns and metrics
    200 {"result": [{"id": 1, "table_name": "fct_gmv_qtd", "schema": "finance", "sql": null,
         "database": {"id": 1, "name": "warehouse", "backend": "duckdb"}, "columns": [...],
         "metrics": [...], ...}]}          included; "kind" is null here: use the dataset API)

A chart's datasource (``params`` and ``query_context`` are JSON strings)::

    GET /api/v1/chart/1
    200 {"result": {"id": 1, "slice_name": "GMV by day", "viz_type": "echarts_timeseries_line",
         "datasource_id": 1, "datasource_type": "table",
         "datasource_name_text": "finance.fct_gmv_qtd", "datasource_uuid": "8590...",
         "dashboards": [{"id": 1, "dashboard_title": "GMV", "json_metadata": null}],
         "params": "{...}", "query_context": "{...}", "url": "/explore/?slice_id=1"}}

A dataset (``kind`` "physical" or "virtual"; a virtual one's ``sql`` comes back as written)::

    GET /api/v1/dataset/2
    200 {"result": {"id": 2, "kind": "virtual", "table_name": "gmv_by_currency_region",
         "schema": "finance", "catalog": null, "sql": "SELECT g.month, ...",
         "main_dttm_col": "month", "changed_on": "2026-12-07T13:02:22.934056",
         "database": {"id": 1, "database_name": "warehouse", "backend": "duckdb", "uuid": ...},
         "columns": [{"column_name": "month", "type": "DATETIME", "is_dttm": true,
                      "expression": null, ...}, ...,
                     {"column_name": "gmv_usd", "type": null, ...}],
         "metrics": [{"metric_name": "count", "expression": "COUNT(*)", ...}]}}

The dataset's ``database`` carries no URI; the database's connection does::

    GET /api/v1/database/1/connection
    200 {"result": {"database_name": "warehouse", "backend": "duckdb",
         "driver": "duckdb_engine", "extra": "{\\"engine_params\\": {...read_only: true}}",
         "parameters": {"database": "/abs/warehouse.duckdb", ...}, ...}}
    (GET /api/v1/database/1 has neither sqlalchemy_uri nor extra.)

Annotation layers and annotations (times without a zone are taken as UTC; a create or
update answers them as RFC 1123 dates, a read as ISO 8601)::

    POST /api/v1/annotation_layer/  {"name": "Splice incidents", "descr": "..."}
    201 {"id": 1, "result": {"name": "Splice incidents", "descr": "..."}}
    GET  /api/v1/annotation_layer/?q=(filters:!((col:name,opr:eq,value:'Splice incidents')))
    200 {"count": 1, "ids": [1], "result": [{"id": 1, "name": ..., "changed_on": ...}]}
    POST /api/v1/annotation_layer/1/annotation/
         {"short_descr": "INC-1 stale rates", "long_descr": "...",
          "start_dttm": "2026-09-28T00:00:00", "end_dttm": "2026-09-29T23:59:59",
          "json_metadata": "{\\"incident\\": \\"INC-1\\"}"}
    201 {"id": 1, "result": {"layer": 1, "start_dttm": "Mon, 28 Sep 2026 00:00:00 GMT", ...}}
    GET  /api/v1/annotation_layer/1/annotation/?q=(page_size:100)
    200 {"count": 1, "ids": [1], "result": [{"id": 1, "short_descr": ..., "long_descr": ...,
         "start_dttm": "2026-09-28T00:00:00", "end_dttm": "2026-09-29T23:59:59"}]}
         (json_metadata only in GET .../annotation/1, with "layer": {"id": 1, "name": ...})
    PUT  /api/v1/annotation_layer/1/annotation/1  {"short_descr": "...", "end_dttm": "..."}
    200 {"id": 1, "result": {...the fields sent...}}
    DELETE /api/v1/annotation_layer/1/annotation/1   200 {"message": "OK"}
    DELETE /api/v1/annotation_layer/1   200 {"message": "OK"}; while it holds annotations:
    422 {"message": "Annotation layer has associated annotations."}

A chart shows a layer when its ``params`` (and, for ``/api/v1/chart/ID/data/``, its
``query_context``: ``form_data`` and each of ``queries``) list it in ``annotation_layers``;
``PUT /api/v1/chart/1 {"params": "...", "query_context": "..."}`` sets both::

    {"name": "Splice incidents", "annotationType": "EVENT" (or "INTERVAL"),
     "sourceType": "NATIVE", "value": 1 (the layer's id), "show": true, "showLabel": true,
     "showMarkers": false, "hideLine": false, "color": null, "opacity": "", "style": "solid",
     "width": 1, "overrides": {"time_range": null}, "titleColumn": "",
     "descriptionColumns": [], "timeColumn": "", "intervalEndColumn": ""}

    GET /api/v1/chart/1/data/
    200 {"result": [{"status": "success", "rowcount": 92, "annotation_data":
         {"Splice incidents": {"columns": ["start_dttm", "end_dttm", "short_descr",
          "long_descr", "json_metadata"], "records": [{"start_dttm": 1790553600000.0, ...}]}},
         "query": "SELECT DATE_TRUNC('day', booking_date) ...", ...}]}

Deleting a layer that a chart still lists breaks that chart: its data answers 500
(``KeyError: 1`` in the log). Take the layer out of the chart's ``params`` and
``query_context`` first. The charts that list it are found with
``GET /api/v1/chart/?q=(columns:!(id,params))`` (``params`` is a list column,
``query_context`` is not). A chart's ``annotation_data`` holds every annotation of each layer
it lists (keyed by the ``name`` in the chart's entry), not only those meant for that chart.

Reads open the DuckDB file only for a query (no pool): a writer's connection opens between
them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from splice.bi.superset import Superset, rison
from splice.config.bi import BISection

DATABASE = "warehouse"
PHYSICAL = "fct_gmv_qtd"
VIRTUAL = "gmv_by_currency_region"
DASHBOARD = "GMV"
LINE_CHART = "GMV by day"
BAR_CHART = "GMV by region and month"

#: The virtual dataset: each currency's monthly GMV with the currency's name and region.
VIRTUAL_SQL = (
    "SELECT g.month, g.currency, r.currency_name, r.region, g.bookings, g.gmv_usd\n"
    "FROM finance.fct_gmv_by_currency AS g\n"
    "JOIN finance.currency_regions AS r ON r.currency = g.currency"
)

#: Superset's metric "SUM(gmv_usd)", labelled.
GMV_METRIC = {
    "expressionType": "SIMPLE",
    "column": {"column_name": "gmv_usd"},
    "aggregate": "SUM",
    "label": "GMV (USD)",
}


#: The environment variable, in a mapping of the seed's own (never ``os.environ``), that hands
#: the admin's password to :class:`splice.bi.superset.Superset`.
_PASSWORD_ENV = "_SPLICE_SEED_PW"


def _api(url: str, user: str, password: str) -> Superset:
    """Superset's REST API as ``user`` (signed in on the first call)."""
    cfg = BISection(name="superset", type="superset", url=url, username=user,
                    password_env=_PASSWORD_ENV)  # fmt: skip
    return Superset(cfg, env={_PASSWORD_ENV: password})


def _find(api: Superset, kind: str, column: str, value: str) -> list[dict[str, Any]]:
    """The ``kind`` objects (dashboard, chart, dataset, ...) whose ``column`` is ``value``."""
    q = rison({"filters": [{"col": column, "opr": "eq", "value": value}], "page_size": 100})
    return list(api.call("GET", f"/api/v1/{kind}/?q={quote(q)}")["result"])


def _upsert(api: Superset, kind: str, found: list[dict[str, Any]], create: dict[str, Any],
            update: dict[str, Any] | None = None) -> int:  # fmt: skip
    """The id of the first ``found`` (sent ``update`` when there is one), else of a new one
    made of ``create``."""
    if found:
        pk = int(found[0]["id"])
        if update:
            api.call("PUT", f"/api/v1/{kind}/{pk}", update)
        return pk
    return int(api.call("POST", f"/api/v1/{kind}/", create)["id"])


def _changed(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``want`` whose value differs in ``have`` (JSON strings compared parsed).

    >>> _changed({"a": 1, "p": '{"x": 1}', "d": [2]}, {"a": 1, "p": '{"x":1}', "d": [3]})
    {'d': [2]}
    """

    def norm(v: Any) -> Any:
        if isinstance(v, str) and v[:1] in "{[":
            try:
                return json.loads(v)
            except ValueError:
                return v
        return v

    return {k: v for k, v in want.items() if norm(v) != norm(have.get(k))}


def _chart(dataset_id: int, viz: str, x_axis: str, grain: str, groupby: list[str],
           layers: list[Any]) -> dict[str, str]:  # fmt: skip
    """A time-series chart's ``params`` and ``query_context`` (the latter makes
    ``/api/v1/chart/ID/data/`` answer, as a report or a thumbnail asks), showing the
    annotation ``layers``."""
    params = {
        "datasource": f"{dataset_id}__table",
        "viz_type": viz,
        "x_axis": x_axis,
        "time_grain_sqla": grain,
        "metrics": [GMV_METRIC],
        "groupby": groupby,
        "adhoc_filters": [],
        "row_limit": 10000,
        "annotation_layers": layers,
    }
    axis = {"columnType": "BASE_AXIS", "sqlExpression": x_axis, "label": x_axis,
            "expressionType": "SQL", "timeGrain": grain}  # fmt: skip
    query = {"columns": [axis, *groupby], "metrics": [GMV_METRIC], "orderby": [],
             "filters": [], "extras": {}, "row_limit": 10000, "annotation_layers": layers}  # fmt: skip
    context = {"datasource": {"id": dataset_id, "type": "table"}, "force": False,
               "queries": [query], "form_data": params, "result_format": "json",
               "result_type": "full"}  # fmt: skip
    return {"params": json.dumps(params), "query_context": json.dumps(context)}


def _position(charts: list[tuple[int, str]]) -> str:
    """A dashboard layout: the charts side by side in one row."""
    row = "ROW-splice"
    layout: dict[str, Any] = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
        "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": [row], "parents": ["ROOT_ID"]},
        "HEADER_ID": {"type": "HEADER", "id": "HEADER_ID", "meta": {"text": DASHBOARD}},
        row: {
            "type": "ROW",
            "id": row,
            "children": [],
            "parents": ["ROOT_ID", "GRID_ID"],
            "meta": {"background": "BACKGROUND_TRANSPARENT"},
        },
    }
    for chart_id, name in charts:
        key = f"CHART-splice-{chart_id}"
        layout[row]["children"].append(key)
        layout[key] = {"type": "CHART", "id": key, "children": [],
                       "parents": ["ROOT_ID", "GRID_ID", row],
                       "meta": {"chartId": chart_id, "sliceName": name, "width": 6,
                                "height": 50}}  # fmt: skip
    return json.dumps(layout)


def seed_demo(url: str, user: str, password: str, warehouse: Path) -> dict[str, Any]:
    """Make (or bring up to date) the demo's GMV dashboard over ``warehouse`` in the
    Superset at ``url``, signing in as ``user``; what is already as it should be is left
    untouched (its ``changed_on`` too). Its ids and address::

        {"database_id": 1, "datasets": {"fct_gmv_qtd": 1, "gmv_by_currency_region": 2},
         "charts": {"GMV by day": 1, "GMV by region and month": 2}, "dashboard_id": 1,
         "dashboard_url": "http://127.0.0.1:PORT/superset/dashboard/gmv/"}
    """
    api = _api(url, user, password)

    found = _find(api, "database", "database_name", DATABASE)
    extra = json.dumps({"engine_params": {"connect_args": {"read_only": True}}})
    database = {"sqlalchemy_uri": f"duckdb:///{warehouse.resolve()}", "extra": extra,
                "expose_in_sqllab": True, "allow_dml": False}  # fmt: skip
    update = None
    if found:  # the connection has no URI to compare: its file and its extra
        conn = api.call("GET", f"/api/v1/database/{found[0]['id']}/connection")["result"]
        if (conn.get("parameters") or {}).get("database") != str(warehouse.resolve()) or (
            _changed({"extra": extra}, conn)
        ):
            update = database
    db_id = _upsert(api, "database", found, {"database_name": DATABASE, **database}, update)

    def dataset(name: str, sql: str | None) -> int:
        found = [d for d in _find(api, "dataset", "table_name", name)
                 if d["database"]["id"] == db_id and d["schema"] == "finance"]  # fmt: skip
        create = {"database": db_id, "schema": "finance", "table_name": name}
        create |= {"sql": sql} if sql is not None else {}
        update = _changed({"sql": sql}, found[0]) if found and sql is not None else None
        return _upsert(api, "dataset", found, create, update or None)

    datasets = {PHYSICAL: dataset(PHYSICAL, None), VIRTUAL: dataset(VIRTUAL, VIRTUAL_SQL)}
    dash_id = _upsert(api, "dashboard", _find(api, "dashboard", "dashboard_title", DASHBOARD),
                         {"dashboard_title": DASHBOARD, "slug": "gmv", "published": True})  # fmt: skip
    specs = {
        LINE_CHART: ("echarts_timeseries_line", datasets[PHYSICAL], "booking_date", "P1D", []),
        BAR_CHART: ("echarts_timeseries_bar", datasets[VIRTUAL], "month", "P1M", ["region"]),
    }
    charts: dict[str, int] = {}
    for name, (viz, ds, x_axis, grain, groupby) in specs.items():
        found = _find(api, "chart", "slice_name", name)
        have: dict[str, Any] = {}
        if found:  # an existing chart keeps the annotation layers it shows
            have = api.call("GET", f"/api/v1/chart/{found[0]['id']}")["result"]
            have["dashboards"] = sorted(d["id"] for d in have.get("dashboards") or [])
        layers = json.loads(have.get("params") or "{}").get("annotation_layers") or []
        want = {"viz_type": viz, "datasource_id": ds, "datasource_type": "table",
                "dashboards": sorted({dash_id, *have.get("dashboards", [])}),
                **_chart(ds, viz, x_axis, grain, groupby, layers)}  # fmt: skip
        charts[name] = _upsert(api, "chart", found, {"slice_name": name, **want},
                                  _changed(want, have) or None)  # fmt: skip
    dash = api.call("GET", f"/api/v1/dashboard/{dash_id}")["result"]
    layout = {"position_json": _position([(pk, name) for name, pk in charts.items()])}
    if _changed(layout, dash):
        api.call("PUT", f"/api/v1/dashboard/{dash_id}", layout)
    return {"database_id": db_id, "datasets": datasets, "charts": charts,
            "dashboard_id": dash_id, "dashboard_url": api.url + dash["url"]}  # fmt: skip
