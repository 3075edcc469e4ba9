"""Dashboards read from a real Superset (``[[bi]] type = "superset"``) over the stale-rates
story's warehouse: its charts are nodes with column lineage from the rates vendor, INC-1's blast
radius names the Superset dashboard with its link, and a wrong password, a server that is down
and a dataset on a relation Splice does not know are each one doctor line, nothing else broken
(the last read is kept)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from superset_support import USER, needs_superset

from cli_runner import run_cli
from splice.bi.superset_local import stop
from splice.demo import relocate
from splice.support.procs import quiet_local_starts
from splice.warehouse.postgres.local_server import free_port

pytestmark = needs_superset

ENV = "SPLICE_TEST_SUPERSET_PASSWORD"
LINE, BAR = "superset:chart:gmv_by_day", "superset:chart:gmv_by_region_and_month"
DASH = "superset:dashboard:gmv"


@dataclass
class Served:
    url: str
    home: Path
    workspace: Path
    seeded: dict[str, Any]
    password: str


@pytest.fixture(scope="module")
def served(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A copy of the story's workspace (INC-1 open) given the demo's Superset as
    ``splice demo --bi superset`` gives it (splice.demo.bi: a local Superset over the
    warehouse, the GMV dashboard, a [[bi]] entry that annotates); stopped at the end."""
    from splice.demo.bi import HOME, use_superset

    root = tmp_path_factory.mktemp("bi")
    ws = root / "travel"
    shutil.copytree(stale_story.build.workspace, ws, symlinks=True)
    relocate(ws)
    home = ws / HOME
    try:
        with quiet_local_starts():
            seeded = use_superset(ws)
        url = seeded["dashboard_url"].split("/superset/")[0]
        admin = json.loads((home / "admin.json").read_text())
        assert admin["username"] == USER
        yield Served(url, home, ws, seeded, admin["password"])
    finally:
        stop(home)


@pytest.fixture
def password(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, served.password)


def _json(args: list[str], cwd: Path) -> Any:
    r = run_cli([*args, "--json"], cwd=cwd)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_superset_charts_are_nodes_with_column_lineage(served: Served, password: None) -> None:
    nodes = {n["id"]: n for n in _json(["ls"], served.workspace)}
    assert nodes[DASH]["kind"] == "dashboard" and set(nodes[DASH]["upstream"]) == {LINE, BAR}
    assert nodes[LINE]["kind"] == "chart"
    assert "finance:fct_gmv_qtd" in nodes[LINE]["upstream"]
    # the virtual dataset's SQL joins two relations: the chart reads both
    assert {"finance:fct_gmv_by_currency", "finance:currency_regions"} <= set(
        nodes[BAR]["upstream"])  # fmt: skip
    down = _json(["lineage", "pricing:fx.daily_rates.rate_to_usd", "--downstream"],
                 served.workspace)  # fmt: skip
    reached = {(h["node"], h["column"]) for h in down["downstream"]}
    assert (LINE, "gmv (usd)") in reached, reached  # the metric the line chart shows
    assert any(n == BAR for n, _ in reached), reached


def test_the_incident_names_the_superset_dashboard_with_its_link(
    served: Served, password: None
) -> None:
    r = run_cli(["watch"], cwd=served.workspace)  # every watch derives the blast radius again
    assert r.returncode == 0, r.stderr[-3000:]
    blast = _json(["incident", "show", "INC-1"], served.workspace)["diagnosis"]["blast_radius"]
    dashboards = {d["node"]: d for d in blast["dashboards"]}
    assert dashboards[DASH]["url"] == f"{served.url}/superset/dashboard/gmv/"
    assert dashboards[DASH]["label"] == "GMV"
    charts = {c["node"]: c for c in blast.get("charts", [])}
    assert charts[LINE]["url"].startswith(served.url)


def test_the_incident_page_links_the_superset_dashboard_and_charts(
    served: Served, password: None
) -> None:
    from tests.web.web_support import served_site

    with served_site(served.workspace, people=("rita",)) as site:
        page = site.client("rita").get("/incidents/INC-1")
    assert page.status_code == 200
    html = page.text
    assert f'href="{served.url}/superset/dashboard/gmv/"' in html
    charts = html.split('data-testid="blast-charts"', 1)[1].split("</section>", 1)[0]
    assert "GMV by day" in charts and "GMV by region and month" in charts
    assert f'href="{served.url}/explore/?slice_id=' in charts


def _doctor(ws: Path) -> list[dict[str, Any]]:
    r = run_cli(["doctor", "--no-lineage", "--json"], cwd=ws)
    assert "Traceback" not in r.stderr
    return list(json.loads(r.stdout)["checks"])


def test_a_wrong_password_is_one_line_and_the_last_read_is_kept(served: Served) -> None:
    assert DASH in {n["id"] for n in _json(["ls"], served.workspace)}
    kept = served.home / "admin.json"
    right = kept.read_text()
    kept.write_text(json.dumps({"username": USER, "password": "not-the-password"}))
    try:
        found = [c for c in _doctor(served.workspace) if c["code"] == "SPL511"]
        assert len(found) == 1
        assert "refused the sign-in" in found[0]["message"] and "stale" in found[0]["message"]
        assert DASH in {n["id"] for n in _json(["ls"], served.workspace)}  # kept, not lost
    finally:
        kept.write_text(right)


def test_a_server_that_is_down_is_one_line(served: Served, password: None, tmp_path: Path) -> None:
    ws = tmp_path / "down"
    shutil.copytree(served.workspace, ws, symlinks=True)
    relocate(ws)
    text = (ws / "splice.toml").read_text().replace(served.url, f"http://127.0.0.1:{free_port()}")
    (ws / "splice.toml").write_text(text)
    found = [c for c in _doctor(ws) if c["code"] == "SPL511"]
    assert len(found) == 1 and "does not answer" in found[0]["message"]
    assert "a retry may help" in found[0]["message"]
    r = run_cli(["ls"], cwd=ws)  # the graph still loads
    assert r.returncode == 0, r.stderr


def test_a_dataset_on_an_unknown_relation_is_one_line(served: Served, password: None) -> None:
    from splice.bi.superset import Superset
    from splice.config.bi import BISection

    api = Superset(BISection(name="superset", type="superset", url=served.url, username=USER,
                             password_env=ENV))  # fmt: skip
    import duckdb

    with duckdb.connect(str(served.workspace / "warehouse.duckdb")) as con:  # typed by hand
        con.execute("CREATE TABLE finance.manual_adjustments AS SELECT 1 AS x")
    made = api.call("POST", "/api/v1/dataset/", {"database": served.seeded["database_id"],
                                                 "schema": "finance",
                                                 "table_name": "manual_adjustments"})  # fmt: skip
    ds = int(made["id"])
    chart = int(api.call("POST", "/api/v1/chart/", {
        "slice_name": "Adjustments", "viz_type": "table", "datasource_id": ds,
        "datasource_type": "table", "dashboards": [served.seeded["dashboard_id"]],
        "params": json.dumps({"all_columns": ["x"], "datasource": f"{ds}__table"})})["id"])  # fmt: skip
    try:
        found = [c for c in _doctor(served.workspace) if c["code"] == "SPL512"]
        assert [c["node"] for c in found] == ["superset:chart:adjustments"]
        assert "finance.manual_adjustments" in found[0]["message"]
        r = run_cli(["lineage", "pricing:fx.daily_rates.rate_to_usd", "--downstream"],
                    cwd=served.workspace)  # fmt: skip
        assert r.returncode == 0, r.stderr
    finally:
        api.call("DELETE", f"/api/v1/chart/{chart}")
        api.call("DELETE", f"/api/v1/dataset/{ds}")


def _shown(served: Served) -> list[dict[str, Any]]:
    from splice.bi.annotate import annotations
    from splice.bi.superset import Superset
    from splice.config.bi import BISection

    api = Superset(BISection(name="superset", type="superset", url=served.url, username=USER,
                             password_env=ENV))  # fmt: skip
    return annotations(api)


def _chart_layers(served: Served) -> dict[str, list[str]]:
    from splice.bi.superset import Superset
    from splice.config.bi import BISection

    api = Superset(BISection(name="superset", type="superset", url=served.url, username=USER,
                             password_env=ENV))  # fmt: skip
    out = {}
    for name, cid in served.seeded["charts"].items():
        params = json.loads(api.call("GET", f"/api/v1/chart/{cid}")["result"]["params"] or "{}")
        out[name] = [x["name"] for x in params.get("annotation_layers") or []]
    return out


def _audit(ws: Path, kind: str) -> list[dict[str, Any]]:
    import sqlite3

    con = sqlite3.connect(ws / ".splice" / "state.db")
    try:
        rows = con.execute("SELECT payload FROM repair_audit_log WHERE kind = ? ORDER BY seq",
                           (kind,)).fetchall()  # fmt: skip
    finally:
        con.close()
    return [json.loads(r[0]) for r in rows]


def test_the_incident_is_annotated_where_finance_looks_until_it_closes(
    served: Served, password: None
) -> None:
    """Runs last: it repairs INC-1."""
    from splice import api
    from splice.demo.story import tell_repair

    toml = served.workspace / "splice.toml"
    toml.write_text(
        toml.read_text().replace('refresh = "1m"\n', 'refresh = "1m"\nannotate = true\n')
    )
    with api.open_workspace(served.workspace) as ws:
        report = api.notify_pending(ws)
    assert not [e for e in report.errors if "bi superset" in e], report.errors
    shown = _shown(served)
    assert [a["key"] for a in shown] == ["INC-1"]
    assert shown[0]["short_descr"].startswith("INC-1 being repaired:")
    assert shown[0]["start"][:10] == "2026-09-28" and shown[0]["end"][:10] >= "2026-09-29"
    assert shown[0]["link"].endswith("/incidents/INC-1")
    assert all("Splice incidents" in layers for layers in _chart_layers(served).values())
    assert [p["incident"] for p in _audit(served.workspace, "bi-annotate")] == ["INC-1"]
    with api.open_workspace(served.workspace) as ws:  # nothing changed: nothing written
        api.notify_pending(ws)
    assert len(_audit(served.workspace, "bi-annotate")) == 1

    tell_repair(served.workspace, "INC-1")  # applied and verified
    with api.open_workspace(served.workspace) as ws:
        api.notify_pending(ws)
        status = api.incident(ws, "INC-1").status
    shown = _shown(served)
    if status == "resolved":  # the verified repair closed it: the annotation is gone
        assert shown == []
        assert [p["incident"] for p in _audit(served.workspace, "bi-annotation-end")] == ["INC-1"]
    else:
        assert shown[0]["short_descr"].startswith("INC-1 repaired and verified (PR-1)")
    r = run_cli(["watch"], cwd=served.workspace)  # the repaired days are clean: it resolves
    assert r.returncode == 0, r.stderr[-2000:]
    with api.open_workspace(served.workspace) as ws:
        assert api.incident(ws, "INC-1").status == "resolved"
    assert _shown(served) == []
    assert not any("Splice incidents" in layers for layers in _chart_layers(served).values())
    assert [p["incident"] for p in _audit(served.workspace, "bi-annotation-end")] == ["INC-1"]
    out = run_cli(["audit-log", "verify"], cwd=served.workspace)
    assert out.returncode == 0, out.stdout + out.stderr


def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=CI", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def test_a_review_names_the_charts_a_change_reaches_with_their_links(
    served: Served, password: None
) -> None:
    """A pull request changing the USD rates: the review's comment names the Superset
    dashboard and, under it, each chart the change reaches, linked, with the chart's columns.
    (Last in this module: the workspace is put under git, then the git folder is removed.)"""
    ws = served.workspace
    rates = ws / "pricing" / "models" / "fx" / "daily_rates.sql"
    before = rates.read_text()
    _git(ws, "init", "-q", "-b", "main")
    try:
        _git(ws, "add", "-A")
        _git(ws, "commit", "-q", "-m", "as built")
        _git(ws, "switch", "-q", "-c", "markup")
        rates.write_text(before.replace("rate_to_usd::DOUBLE AS", "rate_to_usd::DOUBLE * 1.01 AS"))
        assert rates.read_text() != before
        _git(ws, "commit", "-q", "-am", "a 1% markup on the USD rates")
        r = run_cli(["review", "--base", "main", "--no-data", "--json"], cwd=ws)
        assert r.returncode == 0, r.stderr[-3000:]
        impact = json.loads(r.stdout)["impact"]
        charts = {c["node"]: c for c in impact["charts"]}
        assert charts[LINE]["url"].startswith(served.url) and charts[LINE]["dashboards"] == [DASH]
        assert "gmv (usd)" in charts[LINE]["columns"]
        dash = next(d for d in impact["dashboards"] if d["node"] == DASH)
        assert set(dash["charts"]) == {LINE, BAR} <= set(charts)
        md = run_cli(["review", "--base", "main", "--no-data", "--markdown"], cwd=ws)
        assert md.returncode == 0, md.stderr[-3000:]
        assert f"[GMV]({served.url}/superset/dashboard/gmv/)" in md.stdout, md.stdout
        line_link = f"[{charts[LINE]['label']}]({charts[LINE]['url']})"
        assert f"  - {line_link} (`{LINE}`): " in md.stdout, md.stdout
        assert "**GMV** (2 chart(s))" in md.stdout
    finally:
        _git(ws, "switch", "-q", "--discard-changes", "main")
        shutil.rmtree(ws / ".git")
        assert rates.read_text() == before
