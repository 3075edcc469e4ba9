"""The page's basics on a served copy of the stale-rates demo (issue 35, item 19): the apply of a
repair runs in the background with its progress on the page, once however often Apply is
pressed; the lists filter by query parameters and refresh themselves while something runs; a
run's page shows each segment's tool output; a node's page its SQL as written and compiled;
the whole graph drawn; the graph's search by kind."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.serve.serve_support import child_env
from tests.web.test_web_pages import page, tree
from tests.web.web_support import PageClient, Site, served_site, splice, text_of, web_workspace

pytestmark = pytest.mark.slow


@dataclass
class Applied:
    site: Site
    ws: Path
    post_seconds: float  # how long the Apply POST took to answer
    answers: list[tuple[int, str]]  # (status, path) of each Apply pressed
    progress: list[str] = field(default_factory=list)  # the progress fragments seen, in order
    # the lists' fragments while the apply ran and after it ended
    polling_while: dict[str, bool] = field(default_factory=dict)
    polling_after: dict[str, bool] = field(default_factory=dict)


def _polls(client: PageClient, path: str) -> bool:
    r = client.get(path)
    assert r.status_code == 200, (path, text_of(r.text)[:300])
    return 'data-poll="' in r.text


@pytest.fixture(scope="module")
def story(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Applied]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("web_basics") / "travel")
    with served_site(ws, people=("agent", "sam", "lee", "rita")) as site:
        agent, sam, sam2 = site.client("agent"), site.client("sam"), site.client("sam")
        agent.get("/incidents/INC-1")
        assert agent.post("/incidents/INC-1/propose").url.path == "/proposals/PR-1"
        sam.get("/proposals/PR-1")
        r = sam.post("/proposals/PR-1/approve", {"comment": "vendor confirmed"})
        assert r.status_code == 200, text_of(r.text)[:500]
        lee = site.client("lee")  # finance's owner, for the dbt models the repair rebuilds
        lee.get("/proposals/PR-1")
        r = lee.post("/proposals/PR-1/approve", {"comment": "finance models checked"})
        assert r.status_code == 200, text_of(r.text)[:500]
        sam2.get("/proposals/PR-1")
        # Apply pressed twice at once (a double click, or two tabs)
        answers: list[tuple[int, str]] = []
        started = time.monotonic()

        def press(c: PageClient) -> None:
            resp = c.post("/proposals/PR-1/apply")
            answers.append((resp.status_code, resp.url.path))

        both = [threading.Thread(target=press, args=(c,)) for c in (sam, sam2)]
        for t in both:
            t.start()
        for t in both:
            t.join()
        took = time.monotonic() - started
        out = Applied(site, ws, took, answers)
        lists = ("/proposals?partial=1", "/runs?partial=1", "/incidents?partial=1")
        deadline = time.monotonic() + 600
        while True:
            r = sam.get("/proposals/PR-1/applying?partial=1")
            assert r.status_code == 200, text_of(r.text)[:500]
            out.progress.append(r.text)
            if 'data-poll="' not in r.text:
                break
            for path in lists:
                out.polling_while[path] = out.polling_while.get(path, False) or _polls(sam, path)
            assert time.monotonic() < deadline, "the apply never ended"
            time.sleep(0.3)
        for path in lists:
            out.polling_after[path] = _polls(sam, path)
        yield out
        for c in (agent, sam, sam2):
            c.close()


@pytest.fixture(scope="module")
def sam(story: Applied) -> Iterator[PageClient]:
    c = story.site.client("sam")
    yield c
    c.close()


def _runs(ws: Path) -> list[dict[str, Any]]:
    r = splice(ws, "runs", "--json", "-n", "50")
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout))


# -- 6: the apply in the background ----------------------------------------------------------------
def test_apply_answers_at_once_with_its_progress_and_runs_once(story: Applied) -> None:
    # both presses answered with the progress view, long before the repair's run could end
    assert sorted(story.answers) == [(200, "/proposals/PR-1/applying")] * 2
    assert story.post_seconds < 8, f"the Apply POST took {story.post_seconds:.1f} s"
    first = tree(story.progress[0]).one("apply-progress")
    assert first.attrs["data-state"] == "running"
    last = tree(story.progress[-1]).one("apply-progress")
    assert last.attrs["data-state"] == "done"
    assert last.attrs["data-done-url"] == "/proposals/PR-1"  # the script goes on to it
    assert "PR-1 is applied" in last.text
    lines = [li.text for li in last.one("apply-lines").all(tag="li")]
    # the steps in words and the run's segments and nodes as they finished, in order
    assert "apply started by sam" in lines[0] and "done: PR-1 is applied" in lines[-1]
    joined = "\n".join(lines)
    assert re.search(r"segment s\d+ \(pricing\): success", joined)
    assert re.search(r"finance:fct_gmv_qtd: success \(\d", joined)
    assert joined.index("Verifying") > joined.index("segment")
    # the repair ran once: one run, one apply in the audit log, the proposal applied
    repair_runs = [x for x in _runs(story.ws) if x.get("selector") == "repair:PR-1"]
    assert len(repair_runs) == 1 and repair_runs[0]["status"] == "success"
    con = sqlite3.connect(story.ws / ".splice" / "state.db")
    try:
        applies = con.execute(
            "SELECT count(*) FROM repair_audit_log WHERE kind = 'apply' AND proposal_id = 'PR-1'"
        ).fetchone()[0]
    finally:
        con.close()
    assert applies == 1
    c = story.site.client("sam")
    assert page(c, "/proposals/PR-1").one("proposal-status").text == "applied"
    # Apply again after it ran: refused as the rules say, nothing run again
    c.get("/proposals/PR-1")
    r = c.post("/proposals/PR-1/apply")
    assert r.status_code == 403 and "cannot be applied" in text_of(r.text)
    assert len([x for x in _runs(story.ws) if x.get("selector") == "repair:PR-1"]) == 1
    c.close()


# -- 1: lists refresh themselves while something runs; filters are query parameters ---------------
def test_lists_refresh_while_the_apply_runs_and_stop_when_it_ended(story: Applied) -> None:
    assert story.polling_while == {
        "/proposals?partial=1": True,
        "/runs?partial=1": True,
        "/incidents?partial=1": True,
    }
    assert not any(story.polling_after.values()), story.polling_after


def test_the_lists_filter_by_status_domain_project_and_kind(
    story: Applied, sam: PageClient
) -> None:
    runs = _runs(story.ws)
    repair = [x["run_id"] for x in runs if x.get("selector") == "repair:PR-1"]
    doc = page(sam, "/runs?kind=repair")
    assert [r.attrs["data-run"] for r in doc.all("run-row")] == repair
    assert doc.one("filter-kind").one(tag="option", selected="").text == "repair"
    every = {r.attrs["data-run"] for r in page(sam, "/runs").all("run-row")}
    assert every == {x["run_id"] for x in runs} and len(every) > len(repair)
    finance = {r.attrs["data-run"] for r in page(sam, "/runs?project=finance").all("run-row")}
    assert repair[0] in finance
    doc = page(sam, "/runs?status=success&kind=repair")
    assert len(doc.all("run-row")) == 1
    assert page(sam, "/proposals?status=applied").one("proposal-row").text.startswith("PR-1")
    assert "No proposal matches" in page(sam, "/proposals?status=rejected&domain=pricing").text
    assert page(sam, "/proposals?domain=pricing").all("proposal-row")
    inc = page(sam, "/incidents?status=resolved&project=pricing")
    assert [r.attrs["data-incident"] for r in inc.all("incident-row")] == ["INC-1"]
    assert page(sam, "/incidents?domain=pricing").all("incident-row")
    assert not page(sam, "/incidents?status=open").all("incident-row")
    # a value no row holds: an empty list, and the values there are
    doc = page(sam, "/runs?status=nonsense")
    assert not doc.all("run-row") and "No run matches" in doc.text
    assert (
        "this list holds" in doc.one("filter-absent").text
        and "success" in doc.one("filter-absent").text
    )


# -- 2: the tools' own output per segment ----------------------------------------------------------
def test_a_runs_page_shows_each_segments_tool_output(story: Applied, sam: PageClient) -> None:
    run_id = next(x["run_id"] for x in _runs(story.ws) if x.get("selector") == "repair:PR-1")
    r = sam.get(f"/runs/{run_id}")
    doc = tree(r.text)
    logs = {}
    for seg in doc.all("segment"):
        lane_log = seg.all("segment-log-lines")
        if lane_log:
            logs[seg.attrs["data-segment"]] = lane_log[0].text
    segs = {s.attrs["data-segment"]: s for s in doc.all("segment")}
    assert set(logs) == set(segs), "a segment without its tool's output"
    by_tool = {segs[s].text.split("·")[1].split()[0]: text for s, text in logs.items()}
    # dbt's own lines, SQLMesh's, and the ingestion job's command and output
    assert re.search(r"START sql \w+ model finance\.stg_gmv_daily", by_tool["dbt"])
    assert "Completed successfully" in by_tool["dbt"] and "\x1b" not in by_tool["dbt"]
    assert "fx.daily_rates" in by_tool["sqlmesh"]
    assert by_tool["ingestion"].startswith("$ ")
    # escaped as text: dbt quotes the target (target='prod') and the page shows the quote
    assert "(target=&#39;" in r.text and "(target='" in by_tool["dbt"]


# -- 3: raw and compiled SQL -----------------------------------------------------------------------
def test_a_node_page_shows_its_sql_as_written_and_compiled(sam: PageClient) -> None:
    doc = page(sam, "/graph/node/finance:fct_gmv_qtd")
    raw = doc.one("raw-sql").text
    assert "{{ ref('stg_gmv_daily') }}" in raw
    compiled = doc.one("compiled-sql").text
    assert "{{" not in compiled and re.search(
        r'from "?warehouse"?\."?finance"?\."?stg_gmv_daily', compiled
    )
    assert "target/prod/compiled/finance/models/marts/fct_gmv_qtd.sql" in doc.one("node-sql").text
    # a SQLMesh model: its file, and its rendered SQL (the server's warm SQLMesh, or on request)
    doc = page(sam, "/graph/node/pricing:fx.daily_rates")
    assert doc.one("raw-sql").text.startswith("MODEL (")
    if not doc.all("compiled-sql"):
        assert doc.one("render-sql").one(tag="a").attrs["href"] == "?render=1#sql"
        doc = page(sam, "/graph/node/pricing:fx.daily_rates?render=1")
    rendered = doc.one("compiled-sql").text
    assert (
        rendered.startswith("SELECT")
        and "MODEL" not in rendered
        and "rendered by SQLMesh" in doc.text
    )
    # a source has no SQL of its own
    doc = page(sam, "/graph/node/finance:source:pricing.agg_gmv_daily")
    assert not doc.all("raw-sql") and "has no SQL" in doc.one("node-sql").text


def test_a_nodes_sql_is_read_without_loading_a_tool(story: Applied) -> None:
    """A warm read (the graph from its cache) shows the SQL without importing dbt or SQLMesh."""
    code = (
        "import sys, json; from splice import api; from splice.workspace.core import Workspace\n"
        f"ws = Workspace.open({str(story.ws)!r})\n"
        "dbt = api.node_sql(ws, 'finance:fct_gmv_qtd')\n"
        "sm = api.node_sql(ws, 'pricing:fx.daily_rates')\n"
        "print(json.dumps([dbt['compiled'] is not None, sm['raw'] is not None, sm['can_render'],"
        " sorted(m for m in ('dbt.cli', 'sqlmesh') if m in sys.modules)]))\n"
    )
    for _warm in (False, True):  # the first read may fill the graph cache; the second is warm
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, env=child_env())  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [True, True, True, []]


# -- 4: the whole graph ----------------------------------------------------------------------------
def test_the_whole_graph_is_drawn_every_node_a_link(story: Applied, sam: PageClient) -> None:
    r = splice(story.ws, "ls", "--json")
    nodes = json.loads(r.stdout)
    checks = {n["id"] for n in nodes if n["kind"] in ("test", "audit")}
    rest = {n["id"] for n in nodes} - checks
    r = sam.get("/graph/all")
    doc = tree(r.text)
    drawn = doc.one("whole-graph").all("lineage-node")
    assert {a.attrs["data-node"] for a in drawn} == rest
    assert all(a.attrs["href"].startswith("/graph/node/") for a in drawn)
    assert f"{len(checks)} checks" in doc.text and '<script src="/static/panzoom.js"' in r.text
    assert sam.get("/static/panzoom.js").status_code == 200
    with_checks = page(sam, "/graph/all?checks=1").one("whole-graph").all("lineage-node")
    assert {a.attrs["data-node"] for a in with_checks} == rest | checks
    finance = page(sam, "/graph/all?project=finance").one("whole-graph").all("lineage-node")
    assert {a.attrs["data-node"].split(":")[0] for a in finance} == {"finance"}
    choices = {o.text for o in doc.one("graph-filters").all(tag="option")}
    assert {"ingestion", "pricing", "finance", "dashboards"} <= choices  # every project drawn
    # each node drawn right of what it reads
    x = {a.attrs["data-node"]: float(a.one(tag="rect").attrs["x"]) for a in drawn}
    assert x["ingestion:fx_rates_ingest"] < x["pricing:fx.daily_rates"] < x["finance:fct_gmv_qtd"]


# -- 5: search by kind ------------------------------------------------------------------------------
def test_graph_search_filters_by_kind(sam: PageClient) -> None:
    found = page(sam, "/graph?q=gmv&kind=model").all("search-result")
    ids = [f.attrs["data-node"] for f in found]
    assert "finance:fct_gmv_qtd" in ids and "pricing:marts.agg_gmv_daily" in ids
    assert all(" model · " in f.text for f in found)
    every = [f.attrs["data-node"] for f in page(sam, "/graph?q=gmv").all("search-result")]
    assert len(every) > len(ids)  # tests, sources and dashboards match "gmv" too
    dashboards = page(sam, "/graph?kind=dashboard").all("search-result")
    assert {f.attrs["data-node"] for f in dashboards} == {
        "dashboards:pricing_ops", "finance:exposure:gmv_usd_dashboard", "finance:exposure:q3_close"
    }  # fmt: skip
    r = sam.get("/graph?q=gmv&kind=nonsense")
    assert r.status_code == 400 and "choose one of:" in text_of(r.text)


def test_sql_on_the_page_is_escaped(story: Applied, sam: PageClient) -> None:
    """(last: it adds a model to the served workspace)"""
    probe = story.ws / "finance" / "models" / "marts" / "escape_probe.sql"
    probe.write_text("select '<script>alert(1)</script>' as x\n")
    deadline = time.monotonic() + 180  # the server reloads its graph when a file changes
    while (r := sam.get("/graph/node/finance:escape_probe")).status_code == 404:
        assert time.monotonic() < deadline, "the new model never reached the graph"
        time.sleep(1)
    assert r.status_code == 200, text_of(r.text)[:500]
    assert "<script>alert(1)</script>" not in r.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert tree(r.text).one("raw-sql").text == "select '<script>alert(1)</script>' as x"
