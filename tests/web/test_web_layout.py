"""The page's layout in a real browser at a laptop's width (1366 px) and a phone's (390 px):
no table header and no status pill breaks inside a word, and the access form's inputs say
what they take (text, a number). Each page visited is kept as a screenshot
(tests/web/browser_support.py says where)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from tests.web.browser_support import chromium, no_sideways_scroll, shot
from tests.web.web_support import Site, served_site, web_workspace

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Every word of the elements ``selector`` picks whose glyphs sit on more than one line (a word
#: broken in the middle): a Range over each word and the distinct tops of its client rects.
SPLIT_WORDS = """(selector) => {
  const out = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.getClientRects().length) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let m;
      while ((m = re.exec(node.data)) !== null) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(q => q.width > 0)
                                                   .map(q => Math.round(q.top)));
        if (tops.size > 1) out.push(el.tagName.toLowerCase() + ': ' + m[0]);
      }
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def site(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    ws = web_workspace(stale_story, tmp_path_factory.mktemp("layout") / "travel")
    with served_site(ws) as s:
        agent = s.client("agent")
        agent.get("/incidents/INC-1")
        r = agent.post("/incidents/INC-1/propose")
        assert r.status_code == 200 and "/proposals/PR-1" in str(r.url), r.text[:300]
        agent.close()
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def signed_in(browser: Any, site: Site, who: str, width: int, height: int) -> Any:
    ctx = browser.new_context(viewport={"width": width, "height": height})
    ctx.set_default_timeout(30_000)
    page = ctx.new_page()
    page.goto(f"{site.base}/signin")
    page.fill("#key", site.keys[who])
    page.get_by_role("button", name="Sign in with the key").click()
    page.wait_for_url(f"{site.base}/")
    return page


PAGES = ["/incidents", "/incidents/INC-1", "/proposals", "/proposals/PR-1", "/access", "/runs",
         "/graph?q=gmv", "/graph/node/pricing:fx.daily_rates", "/audit"]  # fmt: skip


@pytest.mark.parametrize("name,width,height", [("laptop", 1366, 768), ("phone", 390, 844)])
def test_no_header_or_pill_breaks_inside_a_word(
    browser: Any, site: Site, name: str, width: int, height: int
) -> None:
    page = signed_in(browser, site, "sam", width, height)
    page.goto(f"{site.base}/runs")
    run_id = page.locator("[data-testid=run-row]").first.get_attribute("data-run")
    broken: dict[str, list[str]] = {}
    headers = 0
    for path in [*PAGES, f"/runs/{run_id}"]:
        page.goto(f"{site.base}{path}")
        assert page.locator("h1").is_visible(), path
        headers += page.locator("th").count()
        split = page.evaluate(SPLIT_WORDS, "th, .status")
        if split:
            broken[path] = split
        assert no_sideways_scroll(page), f"{path} scrolls sideways at {name} width"
        shot(page, f"20-layout-{name}-{path}")
    assert headers > 30  # the tables were there to check
    assert broken == {}, f"words broken inside at {width} px"
    page.context.close()


def test_the_access_form_says_what_each_input_takes(browser: Any, site: Site) -> None:
    page = signed_in(browser, site, "sam", 1366, 768)
    page.goto(f"{site.base}/access")
    form = page.locator("[data-testid=request-form]")
    types = {
        el.get_attribute("name"): el.get_attribute("type")
        for el in form.locator("input:not([type=hidden])").all()
    }
    assert types == {"selector": "text", "grantee": "text", "hours": "number"}
    hours = form.locator("#hours")
    assert hours.get_attribute("min") == "0.25" and hours.get_attribute("step") == "0.25"
    # a phone offers the number pad, and the browser itself refuses what is not a number
    hours.fill("")
    assert hours.evaluate("el => el.validity.valueMissing")
    page.context.close()


def test_picking_a_series_redraws_its_chart_with_its_rule(browser: Any, site: Site) -> None:
    page = signed_in(browser, site, "rita", 1366, 768)
    page.goto(f"{site.base}/incidents/INC-1")
    fx = page.locator("figure[data-metric=fx_rate]")
    assert fx.get_attribute("data-series") == "currency=AUD"
    assert fx.locator("select option").count() == 30
    fx.locator("select").select_option("currency=JPY")  # submits itself (splice.js)
    page.wait_for_url(re.compile(r"series=currency%3DJPY"))
    fx = page.locator("figure[data-metric=fx_rate]")
    assert fx.get_attribute("data-series") == "currency=JPY"
    assert fx.locator("[data-testid=repeat-line]").count() == 1  # stopped moving, drawn
    assert fx.locator("[data-testid=anomaly-mark]").count() == 2
    assert page.locator("[data-testid=lateness-chart] [data-testid=usual-lag]").count() == 1
    shot(page, "21-incident-series-picked")
    page.context.close()
