"""Fixtures for the tests that drive a real browser: the built book served over http on loopback,
and headless Chromium through playwright.

The browser is the system's Chromium (Debian's `chromium` package, installed by `.ci/run`), never
one downloaded by `playwright install`. Set CHROMIUM to use another executable. Without a Chromium
the browser tests are skipped, except under CI, where they fail.
"""

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"

#: the flags every headless run uses: no sandbox (CI runs as root), no GPU, no traffic of
#: Chromium's own (updates, sync, QUIC probes) so that the only requests are the page's.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic",
                 "--disable-dev-shm-usage"]  # containers give /dev/shm 64 MB; full-page screenshots need more
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def toc_pages() -> list[str]:
    """Every page of the table of contents, as its source path without suffix (``book/intro``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    entries = toc.get("chapters", []) + [c for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [toc["root"]] + [entry["file"] for entry in entries]


def chromium_executable() -> str | None:
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                  shutil.which("chromium-browser"), shutil.which("google-chrome")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = chromium_executable()
    if path is None:
        message = "no Chromium found (apt-get install chromium, or set CHROMIUM=/path/to/chrome)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def build_book(why: str, say) -> None:
    """Build the book the way scripts/build does, with this interpreter's environment."""
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", ".", "--warningiserror", "--nitpick",
               "--keep-going"]
    say(f"{why}: building the book first (jupyter-book {' '.join(command[1:])}), this takes a few minutes...")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ | {"PYTHONUNBUFFERED": "1"})
    if done.returncode != 0 or not (HTML / "index.html").exists():
        pytest.fail(f"building the book failed (exit {done.returncode}); run ./scripts/build to see why:\n"
                    + (done.stdout + done.stderr)[-4000:], pytrace=False)


@pytest.fixture(scope="session")
def built_html(pytestconfig) -> Path:
    """The built book; built first when there is none (a clean clone) or a page of _toc.yml is missing
    from it. A build that is merely older than the sources is used as it is: ./scripts/build renews it."""
    missing = [p for p in ["index"] + toc_pages() if not (HTML / f"{p}.html").exists()]
    if missing:
        capture = pytestconfig.pluginmanager.getplugin("capturemanager")

        def say(line: str) -> None:  # shown at once, through pytest's output capture
            with capture.global_and_fixture_disabled():
                print(f"\n{line}", file=sys.stderr, flush=True)

        build_book(f"_build/html has no {', '.join(p + '.html' for p in missing[:3])}"
                   f"{' ...' if len(missing) > 3 else ''}", say)
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="session")
def site(built_html) -> str:
    """The base URL (with a trailing slash) of the built book served on a free loopback port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler,
                                                                                  directory=str(built_html)))
    thread = threading.Thread(target=server.serve_forever, name="book-http", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def wait_until(predicate, timeout: float, interval: float = 0.5, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
