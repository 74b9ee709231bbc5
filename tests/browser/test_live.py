"""The live panels in JupyterLab, driven like a reader would: open a chapter, run all cells, move a
control, and see the panel's figure and table change.

The server runs on loopback with a token, on a temporary copy of notebooks/ (nothing is saved
back into the repository), with its own settings, and is shut down by the fixture.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import LOOPBACK, ROOT, wait_until

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1400, "height": 1000}
#: JupyterLab settings for a deterministic session: every cell attached to the page (no
#: virtual scrolling), no autosave, no news or update checks.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
RUN_TIMEOUT_MS = 600_000  # executing a whole chapter on a slow machine
CHANGE_TIMEOUT_MS = 120_000  # one redraw of a panel (the selector sweeps the catalog)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(url: str, method: str = "GET") -> tuple[int, bytes]:
    """(status, body) of an HTTP request; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""
    except OSError:
        return 0, b""


class Lab:
    """A JupyterLab server in its own process group."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "notebooks"
        shutil.copytree(ROOT / "notebooks", self.root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        settings = tmp / "settings"
        for plugin, values in LAB_SETTINGS.items():
            path = settings / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        self.port, self.token = free_port(), os.urandom(16).hex()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = tmp / "jupyterlab.log"
        env = os.environ | {"JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
                            "IPYTHONDIR": str(tmp / "ipython"), "JUPYTER_PLATFORM_DIRS": "1"}
        command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                   f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def api(self, path: str) -> str:
        return f"{self.url}api/{path}?token={self.token}"

    def open_url(self, notebook: str, workspace: str) -> str:
        """The URL that opens one notebook in a workspace of its own (no tabs restored from another test)."""
        return f"{self.url}lab/workspaces/{workspace}/tree/{notebook}?token={self.token}&reset"

    def stop_kernels(self) -> None:
        status, body = request(self.api("sessions"))
        for session in json.loads(body) if status == 200 else []:
            request(self.api(f"sessions/{session['id']}"), method="DELETE")

    def log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def wait_ready(self, timeout: float = 180) -> None:
        def ready():
            if self.process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}")
            return request(self.api("status"))[0] == 200
        wait_until(ready, timeout, what=f"JupyterLab on {self.url}")

    def stop(self) -> None:
        """Ask the server to shut down (it stops its kernels), then end its process group."""
        if self.process.poll() is None:
            request(self.api("shutdown"), method="POST")
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium_path):
    pytest.importorskip("jupyterlab")
    server = Lab(tmp_path_factory.mktemp("lab"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def lab_page(browser, lab):
    """A browser page for the lab, with every non-loopback request blocked."""
    context = browser.new_context(viewport=VIEWPORT)
    context.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname in LOOPBACK
                  else route.abort("blockedbyclient"))
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"{error.name}: {error.message}"))
    page.errors = errors
    yield page
    context.close()
    lab.stop_kernels()


def open_and_run(page, lab: Lab, notebook: str, screenshot_dir: Path) -> None:
    """Open a notebook, wait for its kernel, clear its outputs and run all cells from the menus."""
    page.goto(lab.open_url(notebook, workspace=Path(notebook).stem))
    page.locator(f"{NOTEBOOK} .jp-CodeCell").first.wait_for(timeout=180_000)
    page.locator(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=180_000)
    page.locator(f"{NOTEBOOK} .jp-Cell").first.click()  # make it the current notebook, as a reader would
    cleared = r"^\[ \]:$"
    menu(page, "Edit", "Clear Outputs of All Cells", until=lambda: prompts_match(page, cleared))
    menu(page, "Run", "Run All Cells", until=lambda: not prompts_match(page, cleared, every=False))
    wait_prompts(page, r"^\[\d+\]:$", RUN_TIMEOUT_MS, notebook, lab, screenshot_dir, "every cell executed")
    page.locator(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=RUN_TIMEOUT_MS)
    errors = page.locator(f"{NOTEBOOK} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, f"{notebook}: cell errors: {errors.all_inner_texts()}"


#: the notebook in the current tab
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
PROMPTS_JS = f"() => [...document.querySelectorAll('{NOTEBOOK} .jp-CodeCell .jp-InputPrompt')].map(p => p.innerText.trim())"


def wait_prompts(page, pattern: str, timeout_ms: int, notebook: str, lab: Lab, screenshot_dir: Path, what: str):
    """Wait until every code cell's prompt matches ``pattern``; on failure save a screenshot and say why."""
    try:
        page.wait_for_function(f"pattern => ({PROMPTS_JS})().length > 0 && ({PROMPTS_JS})().every(p => new RegExp(pattern).test(p))",
                               arg=pattern, timeout=timeout_ms, polling=500)
    except Exception:
        shot = screenshot_dir / f"live-{Path(notebook).stem}-failed.png"
        page.screenshot(path=str(shot))
        pytest.fail(f"{notebook}: timed out waiting for {what}; prompts {page.evaluate(PROMPTS_JS)} "
                    f"(screenshot {shot.relative_to(ROOT)})\n{lab.log_tail()}")


def prompts_match(page, pattern: str, every: bool = True) -> bool:
    """Whether every (or, with every=False, some) code cell's prompt of the current notebook matches."""
    found = [bool(re.match(pattern, p)) for p in page.evaluate(PROMPTS_JS)]
    return bool(found) and (all(found) if every else any(found))


def menu(page, top: str, item: str, until, tries: int = 5) -> None:
    """Choose a menu item, again (after Escape) while ``until()`` does not become true within 15 s:
    JupyterLab ignores a command given before the notebook is ready for it."""
    for _ in range(tries):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
        entry = page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(
            f"^{re.escape(item)}$")))
        if "lm-mod-disabled" not in (entry.get_attribute("class") or ""):
            entry.click()
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if until():
                    return
                time.sleep(0.25)
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)
    pytest.fail(f"{top} > {item} had no effect after {tries} tries")


def find_panel(page, title: str):
    """The panel (an ipywidgets VBox) whose first line is its title in bold."""
    panel = page.locator(f"{NOTEBOOK} .widget-vbox").filter(has=page.locator(".widget-html-content > b", has_text=title)).last
    panel.scroll_into_view_if_needed(timeout=60_000)
    panel.wait_for(state="visible")
    return panel


def control(panel, kind: str, label: str):
    """A panel's control of a widget class (``widget-slider``, ``widget-dropdown``) by its label."""
    return panel.locator(f".{kind}").filter(has=panel.page.locator(".widget-label", has_text=re.compile(
        f"^{re.escape(label)}$"))).first


def snapshot(panel) -> tuple[str, str]:
    """The figure's PNG data URL and the table's text, once both are shown."""
    figure = panel.locator(".widget-output img").first
    table = panel.locator(".widget-output table").first
    figure.wait_for(state="visible", timeout=CHANGE_TIMEOUT_MS)
    table.wait_for(state="visible", timeout=CHANGE_TIMEOUT_MS)
    src = figure.get_attribute("src")
    assert src and src.startswith("data:image/png;base64,"), f"the figure is not a PNG: {src and src[:60]}"
    wait_until(lambda: figure.evaluate("img => img.complete && img.naturalWidth > 0"), 30, 0.2, "the figure to load")
    return src, table.inner_text()


def wait_changed(panel, before: tuple[str, str], what: str) -> tuple[str, str]:
    """Wait until both the figure and the table differ from ``before``; fail with what did not change."""
    deadline = time.monotonic() + CHANGE_TIMEOUT_MS / 1000
    while True:
        message = panel.locator(".widget-html-content span").all_inner_texts()
        assert not any(message), f"{what}: the panel shows a message instead of a result: {message}"
        now = snapshot(panel)
        if now[0] != before[0] and now[1] != before[1]:
            return now
        if time.monotonic() > deadline:
            unchanged = [name for name, a, b in zip(("figure", "table"), before, now) if a == b]
            pytest.fail(f"{what}: the panel's {' and '.join(unchanged)} did not change")
        time.sleep(0.5)


def show(panel, path: Path) -> None:
    """Screenshot of the lab with the panel scrolled to the top (JupyterLab scrolls inside the notebook,
    so an element screenshot of a tall panel comes out garbled)."""
    panel.evaluate("el => el.scrollIntoView({block: 'start'})")
    panel.page.screenshot(path=str(path))


def assert_no_widget_errors(page) -> None:
    text = page.locator(f"{NOTEBOOK} .jp-Notebook").inner_text()
    for bad in ("Error displaying widget", "Traceback", "Loading widget"):
        assert bad not in text, f"the notebook shows {bad!r}"


def test_training_memory_panel_responds(lab_page, lab, screenshot_dir):
    page = lab_page
    open_and_run(page, lab, "02-memory.ipynb", screenshot_dir)
    panel = find_panel(page, "Training memory explorer")
    before = snapshot(panel)
    slider = control(panel, "widget-slider", "micro-batch")
    readout = slider.locator(".widget-readout")
    assert readout.inner_text().strip() == "1"
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    page.wait_for_function("el => el.innerText.trim() === '4'", arg=readout.element_handle())
    after = wait_changed(panel, before, "micro-batch 1 -> 4")
    # a second control type: the readout box of the same slider takes a typed value
    readout.click()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("16")
    page.keyboard.press("Enter")
    page.wait_for_function("el => el.innerText.trim() === '16'", arg=readout.element_handle())
    wait_changed(panel, after, "micro-batch 4 -> 16 typed in the readout")
    show(panel, screenshot_dir / "live-02-memory-panel.png")
    assert_no_widget_errors(page)
    assert not page.errors, f"page errors in JupyterLab: {page.errors}"


def test_selector_panel_responds(lab_page, lab, screenshot_dir):
    page = lab_page
    open_and_run(page, lab, "06-selection.ipynb", screenshot_dir)
    panel = find_panel(page, "GPU selector")
    before = snapshot(panel)
    task = control(panel, "widget-dropdown", "task").locator("select")
    assert task.input_value() == "pretrain"
    task.select_option("serve")
    after = wait_changed(panel, before, "task pretrain -> serve")
    assert "days on" in before[1] and "per million tokens" in after[1], f"not a serving ranking: {after[1][:300]}"
    show(panel, screenshot_dir / "live-06-selection-panel.png")
    assert_no_widget_errors(page)
    assert not page.errors, f"page errors in JupyterLab: {page.errors}"
