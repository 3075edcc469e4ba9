"""The web page in a real browser (headless Chromium through Playwright), on the demo with the
stale-rates incident open: the agent proposes, the owner reviews the incident's chart and
lineage, approves with the keyboard, applies, and reads the receipt; the requester and a
non-owner get no Approve button and a forged approval is refused, writing nothing. Every page
visited is kept as a screenshot (tests/web/browser_support.py says where)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.web.browser_support import chromium, no_sideways_scroll, shot
from tests.web.web_support import Site, served_site, web_workspace

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def site(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("browser") / "travel")
    with served_site(ws) as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def signed_in(browser: Any, site: Site, who: str, **viewport: int) -> Any:
    ctx = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
    ctx.set_default_timeout(30_000)
    page = ctx.new_page()
    page.goto(f"{site.base}/incidents")
    assert "/signin" in page.url  # every page needs a principal
    page.fill("#key", site.keys[who])
    page.get_by_role("button", name="Sign in with the key").click()
    page.wait_for_url(f"{site.base}/incidents")
    return page


def test_propose_review_approve_apply_and_the_receipt(browser: Any, site: Site) -> None:
    # the agent signs in, opens the incident and proposes the repair
    agent = signed_in(browser, site, "agent")
    shot(agent, "01-agent-incidents")
    assert "ci-agent" in agent.locator("[data-testid=me]").inner_text()
    agent.get_by_role("link", name="INC-1").first.click()
    agent.locator("[data-testid=propose]").click()
    agent.wait_for_url(f"{site.base}/proposals/PR-1", timeout=180_000)
    assert agent.locator("[data-testid=proposal-status]").inner_text() == "pending"
    assert agent.locator("[data-testid=approve]").count() == 0  # the requester never approves
    shot(agent, "02-agent-proposal")

    # a non-owner and a reader see no Approve button; a forged approval is refused, unwritten
    before = site.written()
    for who in ("ana", "rita"):
        page = signed_in(browser, site, who)
        page.goto(f"{site.base}/proposals/PR-1")
        assert page.locator("[data-testid=approve]").count() == 0, who
        shot(page, f"03-{who}-proposal")
        token = page.locator("input[name=csrf]").first.get_attribute("value")
        r = page.context.request.post(f"{site.base}/proposals/PR-1/approve",
                                      form={"csrf": token or "", "comment": "fine"})  # fmt: skip
        assert r.status == 403, who
        page.context.close()
    token = agent.locator("input[name=csrf]").first.get_attribute("value")
    r = agent.context.request.post(f"{site.base}/proposals/PR-1/approve",
                                   form={"csrf": token or "", "comment": "mine"})  # fmt: skip
    assert r.status == 403
    assert site.written() == before

    # the owner opens the incident: a chart per anomalous metric, the lineage with the origin
    sam = signed_in(browser, site, "sam")
    sam.goto(f"{site.base}/incidents/INC-1")
    charts = sam.locator("figure[data-testid=metric-chart]")
    assert charts.count() >= 1
    first = charts.first
    assert first.locator("[data-testid=baseline-band]").count() >= 1
    marks = first.locator("[data-testid=anomaly-mark]")
    assert [marks.nth(i).get_attribute("data-interval") for i in range(marks.count())] == [
        "2026-09-28", "2026-09-29"]  # fmt: skip
    assert first.locator("svg").is_visible()
    drawing = sam.locator("svg[data-testid=lineage-path]")
    assert drawing.is_visible()
    origin = drawing.locator("[data-testid=lineage-node][data-origin=true]")
    assert origin.count() == 1 and origin.get_attribute("data-node") == "pricing:fx.daily_rates"
    nodes = drawing.locator("[data-testid=lineage-node]")
    ids = {nodes.nth(i).get_attribute("data-node") for i in range(nodes.count())}
    assert {"ingestion:fx_rates_ingest", "finance:exposure:q3_close"} <= ids
    assert "re-served old data" in sam.locator("[data-testid=cause]").inner_text()
    shot(sam, "04-owner-incident")

    # the proposal; approve with the keyboard alone: Tab to the comment, type, Tab to Approve
    sam.get_by_role("link", name="PR-1").first.click()
    sam.wait_for_url(f"{site.base}/proposals/PR-1")
    assert "rows rewritten" in sam.locator("[data-testid=cost]").inner_text()
    assert sam.locator("[data-testid=undo-table] tbody tr").count() >= 3
    shot(sam, "05-owner-proposal")
    for _ in range(60):
        sam.keyboard.press("Tab")
        if sam.evaluate("document.activeElement.id") == "comment":
            break
    else:
        pytest.fail("Tab never reached the comment box")
    sam.keyboard.type("vendor confirmed the fix")
    for _ in range(5):
        sam.keyboard.press("Tab")
        if sam.evaluate("document.activeElement.dataset.testid") == "approve":
            break
    else:
        pytest.fail("Tab from the comment never reached the Approve button")
    sam.keyboard.press("Enter")
    sam.wait_for_url(f"{site.base}/proposals/PR-1")
    # pricing has approved; the finance models it rebuilds wait for lee
    assert sam.locator("[data-testid=proposal-status]").inner_text() == "pending"
    assert "finance" in sam.locator("[data-testid=waiting-for]").inner_text()
    lee = signed_in(browser, site, "lee")
    lee.goto(f"{site.base}/proposals/PR-1")
    lee.locator("[data-testid=approve]").click()
    lee.wait_for_url(f"{site.base}/proposals/PR-1")
    assert lee.locator("[data-testid=proposal-status]").inner_text() == "approved"
    lee.context.close()
    sam.reload()
    sam.locator("[data-testid=apply]").wait_for()
    assert sam.locator("[data-testid=proposal-status]").inner_text() == "approved"

    # the owner applies; the receipt names the approver and the verification
    sam.locator("[data-testid=apply]").click()
    # the apply runs in the background: its progress at once, then on to the proposal
    sam.wait_for_url(f"{site.base}/proposals/PR-1/applying", timeout=15_000)
    assert sam.locator("[data-testid=apply-running]").is_visible()
    shot(sam, "05b-owner-applying")
    sam.locator("[data-testid=receipt-link]").wait_for(timeout=300_000)
    assert sam.url == f"{site.base}/proposals/PR-1"
    assert sam.locator("[data-testid=proposal-status]").inner_text() == "applied"
    shot(sam, "06-owner-applied")
    sam.locator("[data-testid=receipt-link]").click()
    sam.wait_for_url(f"{site.base}/receipts/PR-1")
    approvers = sam.locator("[data-testid=approvers]").inner_text()
    assert "sam (person, signed in with an API key" in approvers
    assert "vendor confirmed the fix" in approvers
    verification = sam.locator("[data-testid=verification]").inner_text()
    assert verification.startswith("Verified") and "0 outside the scope" in verification
    shot(sam, "07-owner-receipt")
    sam.goto(f"{site.base}/incidents/INC-1")
    assert "resolved" in sam.locator("h1").inner_text()


def test_the_whole_graph_zooms_pans_and_opens_a_node(browser: Any, site: Site) -> None:
    page = signed_in(browser, site, "rita", width=1366, height=768)
    page.goto(f"{site.base}/graph/all")
    svg = page.locator("[data-testid=whole-graph] svg")
    start = [float(v) for v in svg.get_attribute("viewBox").split()]
    page.get_by_role("button", name="Zoom in").click()
    page.get_by_role("button", name="Zoom in").click()
    zoomed = [float(v) for v in svg.get_attribute("viewBox").split()]
    assert zoomed[2] < start[2] * 0.7  # narrower: closer in
    # a drag moves the drawing and opens nothing
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 - 200, box["y"] + box["height"] / 2 - 40, steps=5)
    page.mouse.up()
    moved = [float(v) for v in svg.get_attribute("viewBox").split()]
    assert moved[0] > zoomed[0] and page.url.endswith("/graph/all")
    page.mouse.wheel(0, 400)  # the wheel zooms out again
    assert [float(v) for v in svg.get_attribute("viewBox").split()][2] > moved[2]
    shot(page, "08-whole-graph")
    page.get_by_role("button", name="Fit").click()
    assert [float(v) for v in svg.get_attribute("viewBox").split()] == start
    page.locator("[data-testid=lineage-node][data-node='finance:fct_gmv_qtd']").click()
    page.wait_for_url(f"{site.base}/graph/node/finance:fct_gmv_qtd")
    page.context.close()


def test_every_page_fits_a_phone_and_a_laptop(browser: Any, site: Site) -> None:
    pages = ["/incidents", "/incidents/INC-1", "/proposals", "/proposals/PR-1", "/receipts/PR-1",
             "/runs", "/runs?kind=repair", "/graph?q=gmv&kind=model", "/graph/all",
             "/graph/node/pricing:fx.daily_rates", "/audit"]  # fmt: skip
    for name, size in {"phone": (390, 844), "laptop": (1366, 768)}.items():
        page = signed_in(browser, site, "rita", width=size[0], height=size[1])
        for path in pages:
            page.goto(f"{site.base}{path}")
            assert page.locator("h1").is_visible(), path
            assert no_sideways_scroll(page), f"{path} scrolls sideways at {name} width"
            shot(page, f"10-{name}-{path}")
        # a skip link and a labelled, focusable navigation
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent").strip() == "Skip to content"
        page.context.close()
