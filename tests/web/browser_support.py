"""Headless Chromium for the web page's tests, through Playwright.

Playwright's own browser download is not reachable here, so the tests use Debian's
``chromium`` package and install it when it is missing (as root; otherwise they fail saying
the command to run). Screenshots go to ``$SPLICE_TEST_ARTIFACTS`` (default
``test-artifacts/web/`` in the repository), one per page visited.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.debian_support import apt_install

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]  # fmt: skip
REPO = Path(__file__).resolve().parents[2]


def ensure_chromium() -> str:
    """The path of a Chromium binary, installing Debian's package when there is none."""
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found:
        return found
    apt_install("chromium")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"apt-get installed chromium, but {CHROMIUM} is not there")
    return CHROMIUM


def artifacts_dir() -> Path:
    d = Path(os.environ.get("SPLICE_TEST_ARTIFACTS") or REPO / "test-artifacts") / "web"
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium for the block."""
    from playwright.sync_api import sync_playwright

    path = ensure_chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def shot(page: Any, name: str) -> Path:
    """A full-page screenshot, kept as a test artifact."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    path = artifacts_dir() / f"{safe}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def no_sideways_scroll(page: Any) -> bool:
    """Whether the page fits its viewport's width (no horizontal scrolling)."""
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))
