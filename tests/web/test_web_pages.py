"""The runs, graph, receipt and audit-log pages on a served copy of the stale-rates demo, after
the agent proposed the repair, sam (an owner) approved and applied it through the pages, and a
broken dbt model made one run fail: each run drawn as lanes of segments per project, the failure
with the tool's error and the skipped nodes with their reason; a node found by a column; a
node's upstream and downstream across tools; a column's lineage back to the ingestion job; the
receipt with its approver and verification; the audit log verified, and NOT verified once a row
of the state database is edited."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from tests.web.web_support import (
    PageClient,
    Site,
    apply_and_follow,
    served_site,
    splice,
    text_of,
    web_workspace,
)

# -- a small HTML tree (the standard library's parser): find elements, read their text --------
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip

BLOCK = {"br", "dd", "div", "dt", "figure", "h1", "h2", "h3", "li", "ol", "p", "pre", "section",
         "table", "tbody", "td", "th", "thead", "title", "tr", "ul"}  # fmt: skip


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    children: list[El | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        parts = [
            c if isinstance(c, str) else (f" {c.text} " if c.tag in BLOCK else c.text)
            for c in self.children
        ]
        return re.sub(r"\s+", " ", "".join(parts)).strip()

    def all(self, testid: str | None = None, tag: str | None = None, **attrs: str) -> list[El]:
        out = []
        for c in self.children:
            if isinstance(c, str):
                continue
            if (
                (testid is None or c.attrs.get("data-testid") == testid)
                and (tag is None or c.tag == tag)
                and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                out.append(c)
            out += c.all(testid, tag, **attrs)
        return out

    def one(self, testid: str | None = None, tag: str | None = None, **attrs: str) -> El:
        found = self.all(testid, tag, **attrs)
        assert len(found) == 1, f"{len(found)} elements {testid or tag} {attrs}"
        return found[0]


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = El(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(El(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def tree(html: str) -> El:
    t = _Tree()
    t.feed(html)
    return t.root


def page(client: PageClient, path: str) -> El:
    r = client.get(path)
    assert r.status_code == 200, (path, r.status_code, text_of(r.text)[:500])
    return tree(r.text)


# -- the served story -------------------------------------------------------------------------
@dataclass
class Story:
    site: Site
    ws: Path
    applied_run: str
    failed_run: str


def _runs(ws: Path) -> list[dict[str, Any]]:
    r = splice(ws, "runs", "--json", "-n", "50")
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout))


@pytest.fixture(scope="module")
def story(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("web_pages") / "travel")
    with served_site(ws, people=("agent", "sam", "lee", "rita")) as site:
        agent, sam, lee = site.client("agent"), site.client("sam"), site.client("lee")
        agent.get("/incidents/INC-1")
        r = agent.post("/incidents/INC-1/propose")
        assert r.status_code == 200 and r.url.path == "/proposals/PR-1", text_of(r.text)[:500]
        sam.get("/proposals/PR-1")
        r = sam.post("/proposals/PR-1/approve", {"comment": "rates confirmed with the vendor"})
        assert r.status_code == 200, text_of(r.text)[:500]
        lee.get("/proposals/PR-1")  # finance's owner, for the dbt models it rebuilds
        r = lee.post("/proposals/PR-1/approve", {"comment": "finance models checked"})
        assert r.status_code == 200, text_of(r.text)[:500]
        r = apply_and_follow(sam, "PR-1")
        assert r.status_code == 200, text_of(r.text)[:500]
        assert tree(r.text).one("proposal-status").text == "applied"
        applied = [x for x in _runs(ws) if x.get("selector") == "repair:PR-1"]
        assert len(applied) == 1 and applied[0]["status"] == "success"
        # a typo in a dbt model: the next run fails on it and skips what reads it
        model = ws / "finance" / "models" / "staging" / "stg_gmv_daily.sql"
        good = model.read_text()
        model.write_text(re.sub(r"(?i)\bselect\b", "selec", good, count=1))
        r = splice(ws, "run")
        assert r.returncode != 0, r.stdout
        model.write_text(good)
        failed = [x for x in _runs(ws) if x["status"] == "failed"]
        assert len(failed) == 1
        yield Story(site, ws, applied[0]["run_id"], failed[0]["run_id"])
        for c in (agent, sam, lee):
            c.close()


@pytest.fixture(scope="module")
def sam(story: Story) -> Iterator[PageClient]:
    c = story.site.client("sam")
    yield c
    c.close()


# -- runs -------------------------------------------------------------------------------------
def test_runs_page_lists_every_run_newest_first(story: Story, sam: PageClient) -> None:
    rows = page(sam, "/runs").all("run-row")
    ids = [r.attrs["data-run"] for r in rows]
    assert ids == [x["run_id"] for x in _runs(story.ws)]  # every run, newest first
    assert ids.index(story.failed_run) < ids.index(story.applied_run)
    failed = rows[ids.index(story.failed_run)]
    assert "failed" in failed.text and "splice run" in failed.text
    applied = rows[ids.index(story.applied_run)]
    assert "success" in applied.text
    assert failed.one(tag="a").attrs["href"] == f"/runs/{story.failed_run}"


def test_a_runs_timeline_has_a_lane_per_project_with_its_segments(
    story: Story, sam: PageClient
) -> None:
    doc = page(sam, f"/runs/{story.applied_run}")
    assert doc.one("run-status").text == "success"
    lanes = doc.all("lane")
    # the repair ran ingestion, then SQLMesh, then dbt: a lane each, in that order
    assert [ln.attrs["data-project"] for ln in lanes] == ["ingestion", "pricing", "finance"]
    starts = []
    for lane, tool, node in (
        (lanes[0], "ingestion reload", "ingestion:fx_rates_ingest"),
        (lanes[1], "sqlmesh plan", "pricing:fx.daily_rates"),
        (lanes[2], "dbt build", "finance:fct_gmv_qtd"),
    ):
        seg = lane.one("segment")
        assert seg.attrs["data-status"] == "success"
        head = seg.one(tag="tr", **{"class": "seg"})
        assert tool in head.text and "prod" in head.text
        assert re.search(r"\d+(\.\d+)? (ms|s)\b", head.text)  # its duration
        row = seg.one("timeline-node", data_node=node)
        assert row.attrs["data-status"] == "success"
        assert re.search(r"\d+(\.\d+)? (ms|s)\b", row.text)
        bar = [r for r in head.all(tag="rect") if r.attrs.get("class", "").startswith("st-")][0]
        x, w = float(bar.attrs["x"]), float(bar.attrs["width"])
        assert x >= 0 and x + w <= 1000.5 and w > 0
        starts.append(x)
    assert starts == sorted(starts) and starts[0] < starts[2]  # drawn in the order they ran
    # every model the repair rebuilt in finance is on the finance lane
    finance = {r.attrs["data-node"] for r in lanes[2].all("timeline-node")}
    assert {"finance:stg_gmv_daily", "finance:fct_gmv_by_currency"} <= finance
    assert re.search(r"Checks: \d+ pass", lanes[2].text)


def test_a_failed_run_shows_the_tools_error_and_why_nodes_were_skipped(
    story: Story, sam: PageClient
) -> None:
    doc = page(sam, f"/runs/{story.failed_run}")
    assert doc.one("run-status").text == "failed"
    failure = doc.one("failure", data_node="finance:stg_gmv_daily")
    error = failure.one("failure-error").text
    assert "selec" in error and "syntax error" in error.lower()  # dbt's own message
    group = doc.one("skip-group")
    assert "finance:stg_gmv_daily failed upstream" in group.text
    skipped = {a.text for a in group.all("skipped-node")}
    assert skipped == {"finance:fct_gmv_by_currency", "finance:fct_gmv_qtd"}
    lane = doc.one("lane", data_project="finance")
    assert lane.one("segment").attrs["data-status"] == "failed"
    bad = lane.one("timeline-node", data_node="finance:stg_gmv_daily")
    assert bad.attrs["data-status"] == "failed" and "Error in model stg_gmv_daily" in bad.text
    for nid in skipped:
        row = lane.one("timeline-node", data_node=nid)
        assert row.attrs["data-status"] == "skipped"
        assert row.one("why").text == "skipped: finance:stg_gmv_daily failed upstream"


def test_an_unknown_run_is_a_404_that_names_the_latest(story: Story, sam: PageClient) -> None:
    r = sam.get("/runs/r19990101-nope")
    assert r.status_code == 404
    assert "no run" in text_of(r.text) and story.failed_run in text_of(r.text)


# -- the graph --------------------------------------------------------------------------------
def test_search_finds_a_node_by_one_of_its_columns(sam: PageClient) -> None:
    found = page(sam, "/graph?q=rate_to_usd").all("search-result")
    by_id = {li.attrs["data-node"]: li for li in found}
    assert "pricing:fx.daily_rates" in by_id  # its name says nothing of rate_to_usd
    assert re.search(r"columns: [^;]*\brate_to_usd\b", by_id["pricing:fx.daily_rates"].text)
    link = by_id["pricing:fx.daily_rates"].one(tag="a").attrs["href"]
    assert page(sam, link).one(tag="h1").text.startswith("pricing:fx.daily_rates")
    none = page(sam, "/graph?q=no_such_column_anywhere")
    assert none.all("search-result") == [] and "Nothing matches" in none.text


def test_a_node_page_lists_upstream_and_downstream_across_tools(sam: PageClient) -> None:
    doc = page(sam, "/graph/node/finance:stg_gmv_daily")
    up = {li.attrs["data-node"]: li for li in doc.one("upstream").all("upstream-node")}
    down = {li.attrs["data-node"]: li for li in doc.one("downstream").all("downstream-node")}
    # upstream: a dbt source, the SQLMesh model it is bound to, back to the ingestion job
    assert up["finance:source:pricing.agg_gmv_daily"].attrs["data-project"] == "finance"
    assert up["pricing:marts.agg_gmv_daily"].attrs["data-project"] == "pricing"
    assert "across a binding (declared" in up["pricing:marts.agg_gmv_daily"].text
    assert up["ingestion:fx_rates_ingest"].attrs["data-project"] == "ingestion"
    # downstream: the finance marts and the dashboard finance reads
    assert {"finance:fct_gmv_qtd", "finance:fct_gmv_by_currency"} <= set(down)
    assert "dashboard" in down["finance:exposure:q3_close"].text
    assert not any("not_null" in n for n in up.keys() | down.keys())  # checks listed apart
    href = up["pricing:marts.agg_gmv_daily"].one(tag="a").attrs["href"]
    other = page(sam, href)
    down2 = {li.attrs["data-node"] for li in other.one("downstream").all("downstream-node")}
    assert "finance:stg_gmv_daily" in down2 and "finance:fct_gmv_qtd" in down2
    r = sam.get("/graph/node/finance:no_such_model")
    assert r.status_code == 404 and "no node" in text_of(r.text)


def test_column_lineage_reaches_the_ingestion_job_across_tools(sam: PageClient) -> None:
    doc = page(sam, "/graph/node/finance:fct_gmv_qtd")
    cols = {tr.attrs["data-column"]: tr for tr in doc.one("columns").all("column")}
    assert set(cols) >= {"booking_date", "gmv_usd", "gmv_usd_qtd"}
    href = cols["gmv_usd_qtd"].one(tag="a").attrs["href"]
    assert href.startswith("/graph/node/finance:fct_gmv_qtd?column=gmv_usd_qtd")
    lin = page(sam, href).one("column-lineage")
    hops = lin.one("lineage-upstream").all("lineage-hop")
    got = {(h.attrs["data-node"], h.attrs["data-column"]) for h in hops}
    # the Q3 close figure, back through dbt and SQLMesh to the rates vendor's ingestion job
    assert ("finance:stg_gmv_daily", "gmv_usd") in got
    assert ("pricing:marts.agg_gmv_daily", "gmv_usd") in got
    assert ("pricing:fx.daily_rates", "rate_to_usd") in got
    assert ("ingestion:fx_rates_ingest", "rate_to_usd") in got
    agg = next(h for h in hops if h.attrs["data-node"] == "pricing:marts.agg_gmv_daily")
    assert "across projects" in agg.text and "sqlmesh" in agg.text
    assert "ingestion:fx_rates_ingest" in lin.one("lineage-origins").text
    assert "finance:exposure:q3_close" in lin.one("lineage-dashboards").text
    # a hop links to that column's own lineage: downstream of the rate, the Q3 close figure
    rate = next(
        h for h in hops
        if (h.attrs["data-node"], h.attrs["data-column"]) == ("pricing:fx.daily_rates", "rate_to_usd")
    )  # fmt: skip
    back = page(sam, rate.all(tag="a")[0].attrs["href"]).one("column-lineage")
    down = {(h.attrs["data-node"], h.attrs["data-column"])
            for h in back.one("lineage-downstream").all("lineage-hop")}  # fmt: skip
    assert ("finance:fct_gmv_qtd", "gmv_usd_qtd") in down
    # a column the node does not have: said on the page, with the ones it has
    wrong = page(sam, "/graph/node/finance:fct_gmv_qtd?column=gmv_eur").one("column-lineage")
    assert "has no column 'gmv_eur'" in wrong.text and "gmv_usd_qtd" in wrong.text


def test_doctor_page_shows_what_splice_doctor_finds(story: Story, sam: PageClient) -> None:
    def codes() -> list[str]:
        r = splice(story.ws, "doctor", "--json")
        return sorted(c["code"] for c in json.loads(r.stdout)["checks"])

    assert page(sam, "/graph").one("doctor-link").attrs["href"] == "/graph/doctor"
    doc = page(sam, "/graph/doctor")
    assert sorted(f.attrs["data-code"] for f in doc.all("finding")) == codes()
    # a model column lineage cannot parse: doctor warns, and the page says where
    model = story.ws / "finance" / "models" / "staging" / "stg_gmv_daily.sql"
    good = model.read_text()
    model.write_text(re.sub(r"(?i)\bselect\b", "selec", good, count=1))
    try:
        deadline = time.monotonic() + 30
        while True:
            doc = page(sam, "/graph/doctor")
            found = {f.attrs["data-code"]: f for f in doc.all("finding")}
            if "SPL302" in found or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sorted(found) == codes()
        assert "SPL302" in found, doc.text[:800]
        opaque = found["SPL302"]
        assert opaque.one(tag="a").attrs["href"] == "/graph/node/finance:stg_gmv_daily"
        assert "opaque to column lineage" in opaque.text and "Fix:" in opaque.text
        assert re.match(r"\d+ errors?, [1-9]\d* warnings?", doc.one("doctor-summary").text)
    finally:
        model.write_text(good)


# -- receipts and the audit log ---------------------------------------------------------------
def test_the_receipt_records_cause_scope_approver_runs_verification_and_undo(
    story: Story, sam: PageClient
) -> None:
    doc = page(sam, "/receipts/PR-1")
    assert doc.one("receipt-status").text == "applied"
    assert "as_of is 2026-09-25" in doc.one("receipt-cause").text
    assert doc.one("receipt-scope").text.startswith("2026-09-28..2026-09-29")
    approver, finance = (a.text for a in doc.one("approvers").all("approver"))
    assert approver.startswith("sam (person, signed in with an API key, credential")
    assert "rates confirmed with the vendor" in approver and " for pricing" in approver
    # every domain the repair rewrote approved it: lee for finance's dbt models
    assert finance.startswith("lee (person, signed in with an API key, credential")
    assert " for finance" in finance
    assert doc.one("requester").text.startswith("ci-agent (agent, signed in with an API key")
    runs = doc.one("receipt-runs")
    assert runs.one(tag="a").attrs["href"] == f"/runs/{story.applied_run}"
    ver = doc.one("verification")
    assert ver.text.startswith("Verified:") and "back within their baseline" in ver.text
    figures = ver.one("verification-figures").text
    assert "gmv_usd" in figures and "2026-09-28" in figures and "fx_rate" in figures
    undo = doc.one("receipt-undo").text
    assert "warehouse.raw.fx_rates" in undo and "2026-09-28..2026-09-29" in undo
    head = json.loads(splice(story.ws, "audit-log", "verify", "--json").stdout)
    assert (
        f"Head: entry {head['head_seq']}, hash {head['head_hash']}"
        in doc.one("receipt-audit-head").text
    )
    assert "The log verifies" in doc.one("receipt-audit-head").text


def test_counts_and_checksums_read_the_same_on_the_pages_and_in_the_receipt(
    story: Story, sam: PageClient
) -> None:
    receipt = json.loads(splice(story.ws, "receipt", "PR-1", "--json").stdout)
    md = splice(story.ws, "receipt", "PR-1", "--markdown").stdout
    proposal, printed = page(sam, "/proposals/PR-1"), page(sam, "/receipts/PR-1")
    # row counts are whole numbers, thousands separated, wherever they are shown
    cost = proposal.one("cost").text
    assert re.fullmatch(r"[1-9][\d,]* rows rewritten, against [1-9][\d,]* for a full rebuild "
                        r"\(\d+\.\d%\)\.", cost), cost  # fmt: skip
    for text in (proposal.text, printed.text, md):
        assert not re.search(r"\d\.\d+ rows", text)
    # each relation of the undo: the same rows and the same checksum on both pages and in the
    # receipt (its first 16 characters; the whole one in the JSON)
    undo = receipt["undo"]
    assert undo
    page_rows = {r.all(tag="td")[0].text: r.all(tag="td") for r in
                 proposal.one("undo-table").one(tag="tbody").all(tag="tr")}  # fmt: skip
    receipt_rows = {r.all(tag="td")[0].text: r.all(tag="td") for r in
                    printed.one("receipt-undo").one(tag="tbody").all(tag="tr")}  # fmt: skip
    for u in undo:
        rows, short = f"{int(u['rows']):,}", u["checksum"][:16]
        assert [c.text for c in page_rows[u["relation"]]][1:4:2] == [rows, short]
        assert [c.text for c in receipt_rows[u["relation"]]][2:4] == [rows, short]
        assert f"{rows} rows, checksum {short}," in md
    scoped = f"{int(receipt['cost']['rows_scoped']):,}"
    assert cost.startswith(f"{scoped} rows") and f"Rows rewritten: {scoped} of" in md


def test_audit_log_is_verified_and_says_not_verified_after_tampering(
    story: Story, sam: PageClient
) -> None:
    doc = page(sam, "/audit")
    state = doc.one("audit-state").text
    head = json.loads(splice(story.ws, "audit-log", "verify", "--json").stdout)
    assert state.startswith(f"Verified: {head['entries']} entries")
    rows = doc.all("audit-entry")
    assert len(rows) == head["entries"]
    assert all(r.one("audit-principal").text for r in rows)  # every entry names its principal
    approves = [r for r in rows if " approve " in f" {r.text} "]  # pricing's, then finance's
    assert sorted(r.one("audit-principal").text.split(" ")[0] for r in approves) == ["lee", "sam"]
    approve = next(r for r in approves if r.one("audit-principal").text.startswith("sam "))
    assert approve.one("audit-principal").text.startswith("sam (person, api-key")
    seq = int(approve.attrs["data-seq"])

    db = story.ws / ".splice" / "state.db"
    con = sqlite3.connect(db)
    try:
        (payload,) = con.execute(
            "SELECT payload FROM repair_audit_log WHERE seq = ?", (seq,)
        ).fetchone()
        with con:
            con.execute(
                "UPDATE repair_audit_log SET payload = ? WHERE seq = ?",
                (payload.replace("rates confirmed", "nothing checked"), seq),
            )
        doc = page(sam, "/audit")
        state = doc.one("audit-state").text
        assert state.startswith(f"NOT verified: the log was edited at entry {seq}")
        flagged = doc.one("audit-entry", data_flagged="true")
        assert flagged.attrs["data-seq"] == str(seq) and "edited" in flagged.text
        receipt = page(sam, "/receipts/PR-1").one("receipt-audit-head").text
        assert "does NOT verify" in receipt
    finally:
        with con:
            con.execute("UPDATE repair_audit_log SET payload = ? WHERE seq = ?", (payload, seq))
        con.close()
    assert page(sam, "/audit").one("audit-state").text.startswith("Verified")
