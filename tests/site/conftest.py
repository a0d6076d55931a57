"""What the site's tests share: the built site, its local server, one Chromium.

The site is built once per session (``built_site``) and served on 127.0.0.1
(``server``) for the page test, the interactive figures' tests and the rest.
Playwright's sync API runs one event loop per process, so every browser test
shares one headless Chromium instead of each starting its own.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the site with warnings as errors; no network is used or needed.

    The last build's pages go first: a page no longer in the book must not be
    audited (a chapter that was renamed, say). RELPOS_REUSE_SITE=1 reads the
    site already in _build/html instead, for iterating on a browser test; CI
    never sets it."""
    if os.environ.get("RELPOS_REUSE_SITE") == "1" and (HTML / "index.html").exists():
        return HTML
    shutil.rmtree(HTML, ignore_errors=True)
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "jupyter-book"),
            "build",
            ".",
            "--all",
            "-W",
            "-n",
            "--keep-going",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"jupyter-book build -W failed:\n{log[-6000:]}"
    assert "WARNING" not in log, log[-6000:]
    return HTML


@pytest.fixture(scope="session")
def server(built_site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()



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
