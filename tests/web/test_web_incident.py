"""The incident page on the served stale-rates demo: the diagnosis in words, a chart per
anomalous metric with its baseline band and exactly the incident's intervals marked, the
lineage drawn from the ingestion job through the origin to the dashboards, the blast radius and
the scope; the incidents list; an unknown incident. Plus the SVG drawings on small inputs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.web.web_support import Site, served_site, text_of, web_workspace

from splice.web import svg

INCIDENT_DAYS = ["2026-09-28", "2026-09-29"]


@pytest.fixture(scope="module")
def site(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("web_incident") / "travel")
    with served_site(ws, people=("maria", "rita")) as s:
        yield s


@pytest.fixture(scope="module")
def page(site: Site) -> str:
    c = site.client("rita")
    r = c.get("/incidents/INC-1")
    assert r.status_code == 200, r.text[:2000]
    return r.text


def _figures(html: str) -> list[str]:
    return re.findall(r'<figure[^>]*data-testid="metric-chart".*?</figure>', html, flags=re.S)


def test_a_chart_per_anomalous_metric_with_its_band_and_the_incident_marked(page: str) -> None:
    figures = _figures(page)
    metrics = [re.search(r'data-metric="([^"]+)"', f).group(1) for f in figures]  # type: ignore[union-attr]
    # the diagnosis's evidence names three metrics: the declared fx_rate (no rate monitor
    # beside it: it measures the same), the as-of lag of the rates and of the bookings that
    # join them
    assert metrics == [
        "fx_rate",
        "pricing:fx.daily_rates/lag_days(as_of)",
        "pricing:marts.fct_bookings_usd/lag_days(rate_as_of)",
    ]
    for f in figures:
        assert f.count('data-testid="baseline-band"') == 1, f[:300]
        marked = re.findall(r'data-testid="anomaly-mark" data-interval="([^"]+)"', f)
        assert marked == INCIDENT_DAYS, f[:300]
        assert "<title" in f and "<desc" in f and "style=" not in f
    fx = text_of(figures[0])
    # the many-series metric says how many of its series were anomalous and which one is drawn
    assert "stopped moving in 29 of 30 series on 2026-09-28, 2026-09-29" in fx
    assert "Drawn: currency=AUD" in fx
    assert "0.703 (expected 0.703)" in fx
    # the axes are labelled with dates and values
    assert ">Sep 30</text>" in figures[0] and ">Aug " in figures[0]
    assert re.search(r'text-anchor="end"[^>]*>0\.\d+</text>', figures[0])


def test_the_band_is_what_the_detectors_tolerate(site: Site) -> None:
    """The as-of lag of the bookings is 1 on Saturdays and 2 on Sundays (forward-filled
    weekend rates): the weekday baseline takes them in, and the stale Monday's 3 is outside."""
    from splice import api

    ws = api.open_workspace(site.ws)
    try:
        charts = {c["metric"]: c for c in api.incident_charts(ws, "INC-1")}
    finally:
        ws.close()
    lag = charts["pricing:marts.fct_bookings_usd/lag_days(rate_as_of)"]
    assert lag["band"]["method"] == "weekday"
    by_day = {p["interval"]: p for p in lag["points"]}
    assert by_day["2026-09-27"]["value"] == 2.0
    assert by_day["2026-09-27"]["lower"] <= 2.0 <= by_day["2026-09-27"]["upper"]
    assert by_day["2026-09-28"]["value"] == 3.0 and by_day["2026-09-28"]["upper"] < 1
    # every point outside its band before the incident would be an anomaly: there are none
    outside = [
        p["interval"]
        for c in charts.values()
        for p in c["points"]
        if p["lower"] is not None
        and not (p["lower"] - 1e-9 <= p["value"] <= p["upper"] + 1e-9)
        and p["interval"] not in INCIDENT_DAYS
    ]
    assert outside == []
    fx = charts["fx_rate"]
    assert fx["band"]["method"] == "random_walk"
    assert (fx["series"], fx["series_total"], fx["series_anomalous"]) == ("currency=AUD", 30, 29)
    assert (
        fx["points"][0]["interval"] < "2026-08-01" and fx["points"][-1]["interval"] == "2026-09-30"
    )


def _figure(html: str, metric: str) -> str:
    return next(f for f in _figures(html) if f'data-metric="{metric}"' in f)


def test_every_series_of_the_metric_can_be_picked_and_drawn(site: Site, page: str) -> None:
    fx = _figure(page, "fx_rate")
    picker = re.search(r'<form[^>]*data-testid="series-picker".*?</form>', fx, flags=re.S)
    assert picker, fx[:500]
    options = re.findall(r'<option value="([^"]+)"( selected)?>([^<]*)</option>', picker.group(0))
    labels = [o[0] for o in options]
    assert len(labels) == 30 and len(set(labels)) == 30  # every series, not only the first
    anomalous = [o[0] for o in options if "(anomalous)" in o[2]]
    assert len(anomalous) == 29 and labels[:29] == anomalous  # the anomalous ones first
    assert [o[0] for o in options if o[1]] == ["currency=AUD"]  # the one drawn is selected
    calm = labels[-1]  # the one series that kept moving
    c = site.client("rita")
    for label, marks in (("currency=JPY", INCIDENT_DAYS), (calm, [])):
        r = c.get(f"/incidents/INC-1?metric=fx_rate&series={label.replace('=', '%3D')}")
        assert r.status_code == 200
        drawn = _figure(r.text, "fx_rate")
        assert f'data-series="{label}"' in drawn
        assert f'<option value="{label}" selected>' in drawn
        assert re.findall(r'data-testid="anomaly-mark" data-interval="([^"]+)"', drawn) == marks
        assert 'data-testid="remeasured"' not in drawn
        # the other metrics keep their own series
        lag = _figure(r.text, "pricing:fx.daily_rates/lag_days(as_of)")
        assert lag == _figure(page, "pricing:fx.daily_rates/lag_days(as_of)")
    c.close()


def test_the_detectors_own_rule_is_drawn(page: str) -> None:
    # stopped moving: the value repeated, drawn from the last interval it moved to the last
    # interval it repeated, and said in words
    fx = _figure(page, "fx_rate")
    rep = re.search(r'<g data-testid="repeat-line"[^>]*data-value="([^"]+)" '
                    r'data-from="([^"]+)" data-to="([^"]+)"', fx)  # fmt: skip
    assert rep, "no repeated value drawn for the stopped-moving detector"
    assert abs(float(rep.group(1)) - 0.703) < 5e-4
    assert rep.group(2) < INCIDENT_DAYS[0] and rep.group(3) == INCIDENT_DAYS[-1]
    words = text_of(re.search(r'<p class="rule" data-testid="repeat-rule">.*?</p>', fx,
                              flags=re.S).group(0))  # type: ignore[union-attr]  # fmt: skip
    assert words.startswith(f"Stopped moving: 0.703 on every interval from {rep.group(2)} to "
                            f"{INCIDENT_DAYS[-1]}")  # fmt: skip
    # a metric judged by its band has no repeat drawn
    lag = _figure(page, "pricing:fx.daily_rates/lag_days(as_of)")
    assert 'data-testid="repeat-line"' not in lag and 'data-testid="baseline-band"' in lag
    # lateness: how far behind its interval the payload's as-of date is, with the usual lag
    late = re.search(r'<figure[^>]*data-testid="lateness-chart".*?</figure>', page, flags=re.S)
    assert late, "no as-of lag chart"
    bars = re.findall(r'data-testid="lag-bar" data-interval="([^"]+)" data-stale="(\w+)"',
                      late.group(0))  # fmt: skip
    assert len(bars) >= 5
    assert [iv for iv, stale in bars if stale == "true"] == INCIDENT_DAYS
    assert 'data-testid="usual-lag"' in late.group(0)
    assert "How far behind is as_of?" in text_of(late.group(0))


def test_repeat_rule_and_lag_chart_on_small_inputs() -> None:
    from splice.reads.incident_charts import repeat_rule

    pts = [{"interval": f"2026-09-{d:02d}", "value": v}
           for d, v in [(20, 1.0), (21, 1.1), (22, 1.1), (23, 1.1)]]  # fmt: skip
    rule = repeat_rule(pts, [{"interval": "2026-09-23", "detector": "stopped_moving"}])
    assert rule == {"value": 1.1, "from": "2026-09-21", "to": "2026-09-23", "intervals": 2}
    chart = {"metric": "m", "series": "s", "points": [dict(p, lower=0.9, upper=1.2,
             expected=1.05) for p in pts], "intervals": ["2026-09-23"], "repeat": rule}  # fmt: skip
    drawn = str(svg.metric_chart(chart, uid="r"))
    assert 'data-testid="repeat-line"' in drawn and "unchanged at 1.1 since 2026-09-21" in drawn
    lag = str(svg.lag_chart({"column": "as_of", "usual_lag_days": 1, "days": [
        {"interval": "2026-09-22", "lag_days": 1, "stale": False},
        {"interval": "2026-09-23", "lag_days": 4, "stale": True}]}, uid="l"))  # fmt: skip
    assert lag.count('data-testid="lag-bar"') == 2 and "style=" not in lag


def test_restated_points_keep_the_incident_marked(stale_story: Any, tmp_path: Path) -> None:
    """Once a repair restated the intervals, watch measures them again and the incident's
    stored anomalies are gone: the chart draws today's values and still marks where the
    incident was found, from its evidence, saying so."""
    import sqlite3

    from splice import api

    ws_path = web_workspace(stale_story, tmp_path / "travel")
    con = sqlite3.connect(ws_path / ".splice" / "state.db")
    with con:
        con.execute(
            "DELETE FROM watch_anomalies WHERE incident_id = 'INC-1' AND metric = 'fx_rate'"
        )
    con.close()
    ws = api.open_workspace(ws_path)
    try:
        charts = {c["metric"]: c for c in api.incident_charts(ws, "INC-1")}
    finally:
        ws.close()
    fx = charts["fx_rate"]
    assert (fx["intervals"], fx["remeasured"], fx["anomalies"]) == (INCIDENT_DAYS, True, [])
    # the count of anomalous series is the evidence's, not the (gone) stored anomalies' 0
    assert (fx["series_anomalous"], fx["series_total"]) == (29, 30)
    assert charts["pricing:fx.daily_rates/lag_days(as_of)"]["remeasured"] is False
    marks = re.findall(r'data-testid="anomaly-mark" data-interval="([^"]+)"',
                       str(svg.metric_chart(fx, uid="x")))  # fmt: skip
    assert marks == INCIDENT_DAYS


def test_the_lineage_runs_from_the_ingestion_job_through_the_origin_to_the_dashboards(
    page: str,
) -> None:
    drawing = re.search(r'<svg data-testid="lineage-path".*?</svg>', page, flags=re.S)
    assert drawing is not None
    nodes = re.findall(
        r'<a href="([^"]+)" data-testid="lineage-node" data-node="([^"]+)" '
        r'data-origin="(true|false)"',
        drawing.group(0),
    )
    ids = [n for _, n, _ in nodes]
    assert [n for _, n, o in nodes if o == "true"] == ["pricing:fx.daily_rates"]
    assert ids[0] == "ingestion:fx_rates_ingest"
    for dash in ("dashboards:pricing_ops", "finance:exposure:gmv_usd_dashboard",
                 "finance:exposure:q3_close"):  # fmt: skip
        assert dash in ids
    assert all(href == f"/graph/node/{n}" for href, n, _ in nodes)
    # left to right: the ingestion job, then the origin, then the dashboards of finance
    x = {n: float(v) for n, v in re.findall(
        r'data-node="([^"]+)"[^>]*><title>[^<]*</title><rect x="([\d.]+)"', drawing.group(0)
    )}  # fmt: skip
    assert x["ingestion:fx_rates_ingest"] < x["pricing:fx.daily_rates"]
    assert x["pricing:fx.daily_rates"] < x["pricing:marts.fct_bookings_usd"]
    assert x["pricing:marts.fct_bookings_usd"] < x["finance:exposure:q3_close"]
    assert "through pricing:fx.daily_rates (the origin)" in drawing.group(0)


def test_a_large_blast_radius_is_drawn_in_part(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_DRAWN nodes the drawing keeps the path and the dashboards, joins them through
    the nodes left out, and says which are left out."""
    from splice import api
    from splice.reads import incident_lineage as mod

    monkeypatch.setattr(mod, "MAX_DRAWN", 8)
    ws = api.open_workspace(site.ws)
    try:
        drawing = api.incident_lineage(ws, "INC-1")
    finally:
        ws.close()
    col = {n["id"]: n["column"] for n in drawing["nodes"]}
    assert len(col) == 8 and len(drawing["hidden"]) == 3
    assert col["ingestion:fx_rates_ingest"] == 0 and col["pricing:fx.daily_rates"] == 1
    assert all(col[d] > 1 for d in drawing["dashboards"])
    to_dash = {e["to"]: e["via"] for e in drawing["edges"] if e["to"] in drawing["dashboards"]}
    assert set(to_dash) == set(drawing["dashboards"])
    assert any(set(via) & set(drawing["hidden"]) for via in to_dash.values())


def test_the_diagnosis_in_words(page: str) -> None:
    text = text_of(page)
    origin = re.search(r'data-testid="origin">(.*?)</dd>', page, flags=re.S)
    assert origin is not None and "pricing:fx.daily_rates" in origin.group(1)
    cause = re.search(r'data-testid="cause">(.*?)</dd>', page, flags=re.S)
    assert cause is not None and "the source re-served old data" in cause.group(1)
    scope = re.search(r'data-testid="scope">(.*?)</dd>', page, flags=re.S)
    assert scope is not None and "2026-09-28..2026-09-29" in scope.group(1)
    assert "confirmed by the source's stale as-of dates" in text_of(scope.group(1))
    # the payload's own dates, and the blast radius grouped by project, dashboards and metrics
    assert "2026-09-28 2026-09-25 3" in text
    for words in ("Project finance", "Project pricing", "Dashboards", "GMV (USD)", "Q3 close",
                  "Metrics", "gmv_usd"):  # fmt: skip
        assert words in text, words


def test_the_incidents_list_and_an_unknown_incident(site: Site) -> None:
    c = site.client("rita")
    r = c.get("/incidents")
    assert r.status_code == 200
    assert 'data-incident="INC-1"' in r.text and "No open incident" not in r.text
    assert "pricing:fx.daily_rates" in text_of(r.text)
    r = c.get("/incidents/INC-404")
    assert r.status_code == 404
    assert "no incident 'INC-404'" in text_of(r.text) and "INC-1" in text_of(r.text)


def test_the_page_is_quick_when_warm(site: Site) -> None:
    c = site.client("rita")
    c.get("/incidents/INC-1")
    took = []
    for _ in range(3):
        t = time.perf_counter()
        assert c.get("/incidents/INC-1").status_code == 200
        took.append(time.perf_counter() - t)
    assert min(took) < 0.5, took  # the budget is 200 ms of server time; the client adds its own


# -- the drawings on small inputs -------------------------------------------------------------------
def _chart(**kw: Any) -> dict[str, Any]:
    pts = [
        {"interval": f"2026-09-{d:02d}", "value": v, "lower": lo, "upper": hi, "expected": e}
        for d, v, lo, hi, e in [
            (21, 1.0, None, None, None), (22, 1.1, 0.8, 1.2, 1.0), (23, 0.9, 0.8, 1.2, 1.0),
            (24, 1.0, 0.8, 1.2, 1.0), (25, 5.0, 0.8, 1.2, 1.0),
        ]
    ]  # fmt: skip
    return {"metric": "m<x>", "series": "k=v&w", "points": pts, "intervals": ["2026-09-25"],
            "anomalies": [{"interval": "2026-09-25", "detector": "spike", "reason": "5 > 1"}],
            "other_intervals": ["2026-09-23"], **kw}  # fmt: skip


def test_chart_svg_marks_the_intervals_and_escapes_text() -> None:
    out = str(svg.metric_chart(_chart(), uid="c9"))
    assert out.startswith('<svg class="chart" viewBox="0 0 600 250" width="100%" role="img"')
    assert out.count('data-testid="anomaly-mark"') == 1
    assert 'data-interval="2026-09-25"' in out and "spike: 5 &gt; 1" in out
    # one band area over the points that have one (not the first), the expected value dashed
    band = re.search(r'<g data-testid="baseline-band".*?</g>', out, flags=re.S)
    assert band is not None and band.group(0).count("<polygon") == 1
    assert band.group(0).count(",") == 8 + 4  # 4 points up and back, 4 on the expected line
    assert '<g class="anomaly-other" data-interval="2026-09-23">' in out
    assert '<title id="c9-t">m&lt;x&gt;, k=v&amp;w, 2026-09-21 to 2026-09-25</title>' in out
    assert 'aria-labelledby="c9-t c9-d"' in out
    for label in ("Sep 21", "Sep 25", "2026"):
        assert f">{label}</text>" in out
    assert "style=" not in out and "<script" not in out


def test_chart_svg_without_a_band_or_points() -> None:
    pts = [{"interval": "2026-09-21", "value": 2.0, "lower": None, "upper": None}]
    out = str(svg.metric_chart({"metric": "m", "series": "(all)", "points": pts}, uid="a"))
    assert "baseline-band" not in out and "No baseline band yet" in out
    out = str(svg.metric_chart({"metric": "m", "series": "(all)", "points": []}, uid="b"))
    assert "No points measured" in out and "anomaly-mark" not in out


def test_lineage_svg_draws_left_to_right_and_routes_long_edges_around_nodes() -> None:
    nodes = [
        {"id": "ingestion:job", "label": "job", "kind": "ingestion", "column": 0, "row": 0,
         "source": True, "on_path": True},
        {"id": "p:origin", "label": "origin", "kind": "model", "column": 1, "row": 0,
         "origin": True, "on_path": True},
        {"id": "p:mid", "label": "mid", "kind": "model", "column": 2, "row": 0},
        {"id": "d:board", "label": "Board & co", "kind": "dashboard", "column": 3, "row": 0,
         "dashboard": True},
    ]  # fmt: skip
    edges = [
        {"from": "ingestion:job", "to": "p:origin", "on_path": True, "via": ["p:raw"]},
        {"from": "p:origin", "to": "p:mid"},
        {"from": "p:mid", "to": "d:board"},
        {"from": "p:origin", "to": "d:board"},
    ]
    out = str(svg.lineage({"nodes": nodes, "edges": edges, "origin": "p:origin",
                           "sources": ["ingestion:job"], "dashboards": ["d:board"]}))  # fmt: skip
    xs = [
        int(x)
        for x in re.findall(r'data-node="[^"]+"[^>]*><title>[^<]*</title><rect x="(\d+)"', out)
    ]
    assert xs == sorted(xs) and len(set(xs)) == 4
    assert out.count('data-origin="true"') == 1 and 'data-node="p:origin" data-origin="true"' in out
    assert "Board &amp; co" in out
    assert "through p:raw" in out and 'stroke-dasharray="5 3"' in out
    # the edge skipping a column bends below the box in between (an L segment on a lane)
    long_edge = re.search(r'<path d="([^"]+)"[^>]*><title>p:origin → d:board', out)
    assert long_edge is not None and " L" in long_edge.group(1)
    assert "From ingestion:job through p:origin (the origin) to 1 dashboard: Board &amp; co" in out


def test_numbers_on_the_axes() -> None:
    assert svg.nice_ticks(0.0, 0.0) == [0.0]
    ticks = svg.nice_ticks(-1.0, 4.6)
    assert ticks[0] <= -1.0 and ticks[-1] >= 4.6
    assert [svg.tick_label(t, [0.0, 0.25]) for t in (0.0, 0.25, 0.5)] == ["0", "0.25", "0.50"]


def test_served_files_exist() -> None:
    here = Path(svg.__file__).parent
    assert "metric-chart" in (here / "static" / "splice.css").read_text()
