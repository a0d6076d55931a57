"""What the browser tests share: one headless Chromium for the whole session.

Playwright's sync API runs one event loop per process, so the site's test and the
slides' test share one browser instead of each starting their own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

@pytest.fixture(scope="session")
def browser():
    executable = chromium_path()
    if executable is None:
        message = (
            "Chromium not found: install it (Debian: apt-get install chromium) "
            "to run the browser test"
        )
        if os.environ.get("RELPOS_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS
        )
        yield instance
        instance.close()
