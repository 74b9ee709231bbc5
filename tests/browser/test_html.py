"""The built book in headless Chromium, offline: every page of the table of contents loads without
errors from our own files, shows its text, figures and tables, and the navigation and search work.

Requests to any host other than loopback are blocked, so the run is deterministic and needs no
network: what a CDN would have served (MathJax, require.js, the widget manager) is missing, and the
page must still render without it. A full-page screenshot of each page and a table of page sizes
are written to ``_build/screenshots/``.
"""

import csv
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from .conftest import LOOPBACK, toc_pages

pytestmark = pytest.mark.browser

PAGES = toc_pages()
VIEWPORT = {"width": 1280, "height": 900}
#: The longest a chapter may be at that width (#16 aims at 15,000 px; 3 % more for font differences).
CHAPTER_HEIGHT_PX = 15_450
#: text that means a cell or a widget failed in the static page
FORBIDDEN_TEXT = ("Error displaying widget", "Traceback", "Loading widget")
#: console errors and page errors from our own origin that come from the toolchain, not the book;
#: each is matched exactly and named here so that any other error fails the test.
KNOWN_TOOLCHAIN_ERRORS = {
    # pydata-sphinx-theme 0.17 on a first visit (empty localStorage) rejects the empty mode the
    # page's own inline script set, then resets it to "auto" (pydata/pydata-sphinx-theme#1635).
    r"Got invalid theme mode: \. Resetting to auto\.",
}
KNOWN = re.compile("|".join(f"(?:{p})" for p in KNOWN_TOOLCHAIN_ERRORS))


def page_url(site: str, page: str) -> str:
    return urljoin(site, page + ".html")


@dataclass
class Visit:
    """What one page load did: requests served and blocked, errors by origin."""
    site: str
    own_requests: list[tuple[str, str]] = field(default_factory=list)  # (url, resource type)
    blocked: list[str] = field(default_factory=list)
    own_errors: list[str] = field(default_factory=list)
    known_errors: list[str] = field(default_factory=list)
    third_party_errors: list[str] = field(default_factory=list)

    def is_own(self, url: str) -> bool:
        return not url or url.startswith(self.site)

    def error(self, text: str, url: str) -> None:
        if not self.is_own(url):
            self.third_party_errors.append(f"{text} [{url}]")
        elif KNOWN.fullmatch(text):
            self.known_errors.append(text)
        else:
            self.own_errors.append(f"{text} [{url or 'inline'}]")


def open_offline(browser, site: str, url: str, *, wait_until: str = "load"):
    """A fresh context and page with non-loopback requests blocked; returns (context, page, visit, response)."""
    context = browser.new_context(viewport=VIEWPORT)
    visit = Visit(site)

    def route(route):
        request = route.request
        if urlsplit(request.url).hostname in LOOPBACK:
            visit.own_requests.append((request.url, request.resource_type))
            route.continue_()
        else:
            visit.blocked.append(request.url)
            route.abort("blockedbyclient")

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(30_000)

    def console(message):
        if message.type == "error":
            visit.error(message.text, message.location.get("url", ""))

    def page_error(error):
        # an exception's stack names the scripts it went through; an inline script's names none
        urls = re.findall(r"https?://[^\s)]+", error.stack or "")
        where = next((u for u in urls if visit.is_own(u)), urls[0] if urls else "")
        visit.error(f"{error.name}: {error.message}", where)

    page.on("console", console)
    page.on("pageerror", page_error)
    response = page.goto(url, wait_until=wait_until)
    return context, page, visit, response


IMAGES_JS = """async () => {
    for (const img of document.images) img.loading = "eager";
    await Promise.all([...document.images].map(img => img.complete ? null : new Promise(done => {
        img.addEventListener("load", done); img.addEventListener("error", done); })));
    return [...document.images].map(img => ({src: img.currentSrc || img.src, loaded: img.complete && img.naturalWidth > 0,
        width: img.getBoundingClientRect().width, visible: img.checkVisibility()}));
}"""

LAYOUT_JS = """() => {
    const main = document.querySelector("main") || document.body;
    const h1 = [...main.querySelectorAll("h1")].find(h => h.checkVisibility());  // one more is for print only
    const tables = [...main.querySelectorAll("table")];
    return {
        h1: h1 ? h1.innerText.trim() : "",
        text: main.innerText.length,
        content: main.textContent,
        tables: tables.length,
        visibleTables: tables.filter(t => t.checkVisibility() && t.rows.length > 1
                                          && t.getBoundingClientRect().width > 100).length,
        errorOutputs: main.querySelectorAll(".output.traceback, .output.stderr, .output.error").length,
        height: document.documentElement.scrollHeight,
    };
}"""


@pytest.fixture(scope="module")
def page_sizes(screenshot_dir):
    """Rows of page_sizes.csv, written after every page (and so complete at the end)."""
    rows: dict[str, dict] = {}
    yield rows
    write_sizes(screenshot_dir / "page_sizes.csv", rows)


def write_sizes(path: Path, rows: dict[str, dict]) -> None:
    ordered = [rows[p] for p in PAGES if p in rows]
    if not ordered:
        return
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(ordered[0]))
        writer.writeheader()
        writer.writerows(ordered)


def served_size(html_dir: Path, site: str, url: str) -> int:
    """Size in bytes of the file a loopback URL served (0 for anything not a file)."""
    path = html_dir / unquote(urlsplit(url).path).lstrip("/")
    if path.is_dir():
        path = path / "index.html"
    return path.stat().st_size if path.is_file() else 0


def size_row(page: str, visit: Visit, html_dir: Path) -> dict:
    kb = {"document": 0.0, "image": 0.0, "other": 0.0}
    images = 0
    for url, kind in dict(visit.own_requests).items():  # each URL once, as the browser caches it
        key = kind if kind in ("document", "image") else "other"
        images += kind == "image"
        kb[key] += served_size(html_dir, visit.site, url) / 1024
    return {"page": page, "html_kb": round(kb["document"], 1), "images_kb": round(kb["image"], 1), "images": images,
            "html_and_images_kb": round(kb["document"] + kb["image"], 1),
            "css_js_fonts_kb": round(kb["other"], 1), "total_kb": round(sum(kb.values()), 1),
            "blocked_third_party_requests": len(visit.blocked)}


@pytest.fixture(scope="module")
def console_report(screenshot_dir):
    """Errors the pages logged that the tests tolerate (toolchain, third party), for people to read."""
    lines: list[str] = []
    yield lines
    (screenshot_dir / "console_errors.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline(page, browser, site, built_html, screenshot_dir, page_sizes, console_report):
    started = time.monotonic()
    context, tab, visit, response = open_offline(browser, site, page_url(site, page))
    try:
        assert response is not None and response.status == 200, f"{page}: HTTP {response and response.status}"
        images = tab.evaluate(IMAGES_JS)
        layout = tab.evaluate(LAYOUT_JS)
        tab.wait_for_timeout(300)  # let late console messages (deferred scripts) arrive
        height = tab.evaluate("document.body.scrollHeight")
        tab.screenshot(path=str(screenshot_dir / f"{Path(page).name}.png"), full_page=True)
    finally:
        context.close()
    page_sizes[page] = size_row(page, visit, built_html) | {"height_px": height}
    write_sizes(screenshot_dir / "page_sizes.csv", page_sizes)
    console_report.append(f"{page} ({time.monotonic() - started:.1f} s): known toolchain errors "
                          f"{sorted(set(visit.known_errors))}; third-party errors {len(visit.third_party_errors)}; "
                          f"blocked {sorted(set(visit.blocked))}")

    assert not visit.own_errors, f"{page}: errors from our own files: {visit.own_errors}"
    broken = [i["src"] for i in images if not i["loaded"] and i["src"].startswith(site)]
    assert not broken, f"{page}: images that did not load: {broken}"
    assert layout["h1"], f"{page}: no visible title"
    assert layout["text"] > 500, f"{page}: only {layout['text']} characters of text"
    found = [t for t in FORBIDDEN_TEXT if t in layout["content"]]
    assert not found, f"{page}: shows {found}"
    assert layout["errorOutputs"] == 0, f"{page}: {layout['errorOutputs']} error or stderr outputs"
    if images:
        shown = [i for i in images if i["visible"] and i["loaded"] and i["width"] >= 200]
        assert shown, f"{page}: none of its {len(images)} figures is shown"
    if layout["tables"]:
        assert layout["visibleTables"], f"{page}: none of its {layout['tables']} tables is shown"
    if Path(page).name[:1].isdigit():  # a chapter: the target is 15,000 px, with room for a machine's fonts
        assert height <= CHAPTER_HEIGHT_PX, f"{page}: {height:,} px long at {VIEWPORT['width']} px wide"


def test_every_image_file_exists(built_html):
    """Each page's <img> points at a file that was built (the browser test above checks they load)."""
    for page in PAGES:
        html = (built_html / f"{page}.html").read_text(encoding="utf-8")
        for src in re.findall(r'<img[^>]*\bsrc="([^"]+)"', html):
            if not re.match(r"(?:https?:|data:)", src):
                target = (built_html / page).parent / unquote(src.split("?")[0])
                assert target.resolve().is_file(), f"{page}: <img src={src!r}> has no file"


def test_every_claim_box_is_built_in_the_style_of_its_verdict(built_html):
    """Each claim of the article has one box in the built chapters, labelled ``book.claim_label(id)``, whose
    admonition class is its verdict's (no wrong claim in a tip box) and which prints that verdict."""
    from helpers import book, claims
    boxes = {}
    for page in PAGES:
        html = (built_html / f"{page}.html").read_text(encoding="utf-8")
        for classes, claim_id, body in re.findall(
                r'<div class="([\w ]+) admonition" id="claim-([\w.-]+)">(.*?)</div>\s*(?=<div|<p|<section|</section|<h)',
                html, re.S):
            boxes.setdefault(claim_id, []).append((page, classes, body))
    table = claims.table().set_index("id")
    assert sorted(boxes) == sorted(book.claim_label(i).removeprefix("claim-") for i in table.index)
    for claim_id in table.index:
        shown = boxes[book.claim_label(claim_id).removeprefix("claim-")]
        (page, classes, body), = shown
        verdict = table.loc[claim_id, "verdict"]
        folded = ["dropdown"] if verdict in book.FOLDED_VERDICTS else []
        assert classes.split() == [claims.BOX_CLASS[verdict]] + folded, (page, claim_id, classes, verdict)
        assert f"Verdict: {verdict}" in body, (page, claim_id)
    appendix = (built_html / "notebooks" / "claims.html").read_text(encoding="utf-8")
    links = re.findall(r'href="([\w-]+)\.html#(claim-[\w-]+)"', appendix)
    assert len(links) == len(table)
    for chapter, anchor in links:
        assert f'id="{anchor}"' in (built_html / "notebooks" / f"{chapter}.html").read_text(encoding="utf-8"), anchor


def test_navigation_links_every_page(browser, site):
    """The left navigation of the root page links to every page; following it page by page, each
    click lands on the page whose title the link shows."""
    context, tab, visit, _ = open_offline(browser, site, site)  # index.html redirects to the root page
    try:
        tab.wait_for_url(page_url(site, PAGES[0]))
        nav = tab.locator("nav.bd-docs-nav")
        hrefs = nav.locator("a.reference.internal").evaluate_all("as => as.map(a => a.href.split('#')[0])")
        missing = [p for p in PAGES[1:] if page_url(site, p) not in hrefs]
        assert not missing, f"the left navigation has no link to {missing}"
        for page in PAGES[1:]:
            target = page_url(site, page)
            links = nav.locator("a.reference.internal")
            index = links.evaluate_all("(as, target) => as.findIndex(a => a.href.split('#')[0] === target)", target)
            assert index >= 0, f"the navigation of {tab.url} has no link to {page}"
            link = links.nth(index)
            title = link.inner_text().strip()
            link.click()
            tab.wait_for_url(target)
            heading = tab.locator("main article h1").first
            heading.wait_for(state="visible")
            # the page's title is the link's text, less the chapter number the navigation adds
            assert re.sub(r"^\d+\.\s*", "", title).lower()[:20] in heading.inner_text().lower(), \
                f"{page}: link {title!r} led to a page titled {heading.inner_text()!r}"
    finally:
        context.close()
    assert not visit.own_errors, visit.own_errors


def test_search_finds_pages(browser, site):
    context, tab, visit, response = open_offline(browser, site, urljoin(site, "search.html?q=memory"))
    try:
        assert response.status == 200
        results = tab.locator("#search-results ul.search li")
        results.first.wait_for(state="visible", timeout=60_000)
        tab.wait_for_function("() => !document.querySelector('#search-progress')?.innerText.includes('Preparing')")
        hrefs = results.locator("a").evaluate_all("as => as.map(a => a.href.split('#')[0].split('?')[0])")
    finally:
        context.close()
    assert len(hrefs) >= 3, f"search for 'memory' found only {hrefs}"
    assert page_url(site, "notebooks/02-memory") in hrefs, f"search for 'memory' missed the memory chapter: {hrefs}"
    assert not visit.own_errors, visit.own_errors
