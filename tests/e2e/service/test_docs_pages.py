"""/docs (Swagger UI) and /redoc render in Chromium from the service alone: their scripts
and styles come from the service (the fastapi-offline package), and no request leaves
127.0.0.1 (FastAPI's own pages load them from a CDN: blank on a machine without internet)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ops.service.app import Settings
from tests.e2e.service.conftest import LiveServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
LOCAL = "127.0.0.1"
SHOTS = Path(os.environ["LEDGER_TEST_SHOTS"]) if os.environ.get("LEDGER_TEST_SHOTS") else None  # to look at them


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing (bash ops/deploy/test-services.sh installs Chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    store = tmp_path_factory.mktemp("docs") / "ledger.db"
    with LiveServer(Settings(db_url=f"sqlite:///{store}")) as live:
        yield live


def open_page(browser: Any, url: str) -> tuple[Any, list[str]]:
    """The page at `url`, with every request it made; a request to another host is
    recorded and refused (so the test fails the same with or without internet)."""
    page = browser.new_page()
    requested: list[str] = []

    def watch(route: Any) -> None:
        requested.append(route.request.url)
        parts = urlsplit(route.request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname != LOCAL:
            route.abort()
        else:
            route.continue_()

    page.route("**/*", watch)
    answer = page.goto(url, wait_until="networkidle")
    assert answer is not None and answer.status == 200
    assert "default-src 'self'" in answer.headers["content-security-policy"]  # what the browser may fetch
    return page, requested


def elsewhere(requested: list[str]) -> list[str]:
    return [url for url in requested
            if urlsplit(url).scheme not in ("data", "blob") and urlsplit(url).hostname != LOCAL]


def test_swagger_ui_renders_every_route_from_the_service_alone(browser: Any, server: LiveServer) -> None:
    page, requested = open_page(browser, f"{server.url}/docs")
    try:
        page.locator(".swagger-ui .info .title").filter(has_text="casino-ledger").wait_for(timeout=15_000)
        commands = page.locator(".opblock-summary-path", has_text="/v1/commands").first
        assert commands.is_visible()
        assert page.locator(".opblock-tag", has_text="auditor").first.is_visible()
        if SHOTS:
            page.screenshot(path=str(SHOTS / "docs.png"))
    finally:
        page.close()
    assert f"{server.url}/openapi.json" in requested and any("/docs-assets/" in u for u in requested)
    assert elsewhere(requested) == []


def test_redoc_renders_every_route_from_the_service_alone(browser: Any, server: LiveServer) -> None:
    page, requested = open_page(browser, f"{server.url}/redoc")
    try:
        page.locator("h1", has_text="casino-ledger").wait_for(timeout=15_000)
        assert page.locator("h2", has_text="apply feed commands").first.is_visible()
        if SHOTS:
            page.screenshot(path=str(SHOTS / "redoc.png"))
    finally:
        page.close()
    assert f"{server.url}/openapi.json" in requested and any("/docs-assets/" in u for u in requested)
    assert elsewhere(requested) == []


def test_the_watch_sees_a_request_elsewhere() -> None:
    assert elsewhere(["http://127.0.0.1:1/docs", "data:image/png;base64,AA", "https://cdn.example/x.js"]) == [
        "https://cdn.example/x.js"]
