"""Charts and the monitor's long page read on a phone, in a real headless browser
(Playwright driving Debian's Chromium, 390 px wide): axis labels drawn at 11 px or more
(the font size times the SVG's scale on screen: a viewBox scaled down shrinks them), every
chart as wide as the section it is in, no sideways scroll; the monitor's filter (a GET
form, no script) shortens the page of every test, and its index's links land on their
tests."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ops.service.app import Settings
from tests.e2e.console.conftest import ConsoleStore
from tests.e2e.console.test_dispute_page import CHROMIUM, CHROMIUM_ARGS, screenshot
from tests.e2e.service.conftest import LiveServer

PHONE = {"width": 390, "height": 844}
LABEL_PX_MIN = 11

# Each chart's axis labels: their CSS font size times the scale from the SVG's units to the screen.
LABEL_SIZES = """() => [...document.querySelectorAll('figure.chart svg.chart text')]
  .filter(t => t.getBBox().width > 0)
  .map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a)"""
# Each chart's width against the width of its section's content (padding off).
WIDTHS = """() => [...document.querySelectorAll('figure.chart')].filter(f => f.querySelector('svg.chart')).map(f => {
  const s = f.closest('section'), cs = getComputedStyle(s);
  const content = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  return [f.getBoundingClientRect().width, f.querySelector('svg.chart').getBoundingClientRect().width, content];
})"""
HEIGHT = "() => document.documentElement.scrollHeight"
FITS = "() => document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture(scope="module")
def server(console_store: ConsoleStore) -> Iterator[str]:
    with LiveServer(Settings(db_url=console_store.url, key_cache_s=0.5)) as live:
        yield live.url


@pytest.fixture(scope="module")
def phone(server: str, console_store: ConsoleStore) -> Iterator[Any]:
    """A signed-in page at 390 px."""
    from playwright.sync_api import sync_playwright  # never skipped: a missing browser fails here

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=PHONE, is_mobile=True)
        page = context.new_page()
        page.goto(server + "/ui/")
        page.fill("#key", console_store.keys["backoffice"])
        page.press("#key", "Enter")
        page.wait_for_load_state()
        yield page
        browser.close()


def _go(page: Any, server: str, path: str) -> Any:
    page.goto(server + path)
    page.wait_for_load_state()
    return page


@pytest.mark.parametrize("path", ["/ui/tables/bj-live-1", "/ui/monitor?all=1&kind=void_rate"])
def test_charts_on_a_phone_are_full_width_with_labels_people_can_read(phone: Any, server: str, path: str) -> None:
    page = _go(phone, server, path)
    screenshot(page, "charts-phone-" + path.strip("/").replace("/", "-").replace("?", "-").replace("&", "-"))
    sizes = page.evaluate(LABEL_SIZES)
    assert len(sizes) >= 4, path
    assert min(sizes) >= LABEL_PX_MIN, (path, sorted(sizes)[:5])
    widths = page.evaluate(WIDTHS)
    assert widths, path
    for figure, svg, content in widths:
        assert abs(figure - content) <= 2, (path, figure, content)  # the whole width, not half of it
        assert svg >= 0.75 * content, (path, svg, content)  # less only the y labels' gutter
    assert page.evaluate(FITS), f"{path} scrolls sideways at 390 px"
    assert page.locator("figure.chart:has(svg.chart) [data-testid=legend]").count() == len(widths)  # each its legend


def test_the_monitor_filter_shortens_the_page_of_every_test(phone: Any, server: str) -> None:
    page = _go(phone, server, "/ui/monitor?all=1")
    every, sections = page.evaluate(HEIGHT), page.locator("[data-testid=finding]").count()
    page.select_option("#m-kind", "up_card")
    page.click("[data-testid=monitor-filter] button")
    page.wait_for_load_state()
    assert "kind=up_card" in page.url and "all=1" in page.url
    levels = page.locator("[data-testid=finding]").evaluate_all("s => s.map(e => e.dataset.level)")
    assert levels and set(levels) == {"up_card"} and len(levels) < sections
    assert page.evaluate(HEIGHT) < every * 0.5, (page.evaluate(HEIGHT), every)
    assert page.evaluate(FITS)


def test_the_index_links_land_on_their_tests(phone: Any, server: str) -> None:
    page = _go(phone, server, "/ui/monitor?all=1")
    links = page.locator("[data-testid=monitor-index] a")
    assert links.count() == page.locator("[data-testid=finding]").count() > 2
    last = links.nth(links.count() - 1)
    target = str(last.get_attribute("href"))
    last.click()
    page.wait_for_timeout(100)
    assert page.url.endswith(target)
    top = page.evaluate(f"() => document.getElementById('{target[1:]}').getBoundingClientRect().top")
    assert abs(top) < 5, top  # scrolled to the test itself
