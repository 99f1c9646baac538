"""A real browser for the dashboard's test: Debian's chromium driven by Playwright for Python.

``scripts/browser.sh`` finds chromium or installs it (``apt-get install chromium``); Playwright
launches that binary (``executable_path``), never a browser of its own download. When chromium
cannot be had, the fixture raises: the test fails loudly rather than skipping.

:func:`chromium` is a session-scoped fixture (``tests/conftest.py`` re-exports it): one browser
process for the session, a fresh context per test. Screenshots go to :data:`ARTIFACTS`
(git-ignored), kept after the run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.services import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["ARTIFACTS", "chromium", "chromium_path"]

#: Where browser tests keep their screenshots (git-ignored).
ARTIFACTS = ROOT / ".artifacts"


def chromium_path() -> Path:
    """The chromium binary (installed by ``scripts/browser.sh`` when missing).

    Raises:
        RuntimeError: chromium is missing and could not be installed.
    """
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "browser.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(
            f"no chromium for the browser tests (scripts/browser.sh exit {done.returncode}): {done.stderr.strip()}"
        )
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Debian's chromium, headless, launched by Playwright for the session."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as playwright:
        # --no-sandbox: the suite may run as root (CI containers), where chromium's sandbox refuses to start
        browser = playwright.chromium.launch(executable_path=str(path), headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
