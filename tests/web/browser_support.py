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
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

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
    if os.geteuid() != 0:
        pytest.fail("Chromium is missing and only root can install it: run "
                    "`sudo apt-get install -y chromium`, then the tests again.")  # fmt: skip
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:  # a fresh machine may not have the package lists yet
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=900)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0 or not os.path.exists(CHROMIUM):
        pytest.fail(f"could not install Chromium (apt-get install chromium):\n{r.stderr[-2000:]}")
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
