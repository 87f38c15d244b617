"""The report and diff pages opened in a real browser: headless Chromium from Debian's packages
(scripts/ensure_browser.sh installs it), driven by selenium through Debian's chromedriver.

`browser` skips when there is no Chromium, chromedriver or selenium, and fails instead under
CTXBENCH_REQUIRE_DOCKER=1 (CI), as `docker_ready` does. `load` opens a page and reads back what
a reader would meet: console errors and failed resources from the browser's own log, links
whose target is not there, images that did not decode. `screenshot` keeps a full-page PNG under
results/test-screenshots/ (git ignores results/) and prints where.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "results" / "test-screenshots"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
WIDTH, MAX_HEIGHT = 1400, 12000  # a screenshot of the whole page, up to this tall


def _missing() -> str | None:
    if not any(shutil.which(b) for b in CHROMIUM):
        return "no Chromium on PATH (run scripts/ensure_browser.sh as root)"
    if not shutil.which("chromedriver"):
        return "no chromedriver on PATH (run scripts/ensure_browser.sh as root)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    problem = _missing()
    if problem:
        if os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1":
            pytest.fail(f"CTXBENCH_REQUIRE_DOCKER=1 but {problem}", pytrace=False)
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(next(shutil.which(b) for b in CHROMIUM if shutil.which(b)))
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WIDTH},1000",
        "--hide-scrollbars",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Debian's chromedriver, named: selenium's own manager would go to the network for one.
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Loaded:
    """What a reader of the page would meet."""

    errors: list[str] = field(default_factory=list)  # console errors and failed resources (browser log)
    broken_links: list[str] = field(default_factory=list)  # <a href> whose file or #anchor is not there
    broken_images: list[str] = field(default_factory=list)  # <img> that did not load or decode
    links: int = 0
    images: int = 0


_LINKS_JS = """
return [Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
        Array.from(document.querySelectorAll('img')).map(i => [i.getAttribute('src').slice(0, 80),
                                                               i.complete && i.naturalWidth > 0]),
        Array.from(document.querySelectorAll('[id]')).map(e => e.id)];
"""


def load(driver, page: Path) -> Loaded:
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(page.resolve().as_uri())
    driver.execute_script("return document.readyState")  # get() returns once the load event fired
    hrefs, images, ids = driver.execute_script(_LINKS_JS)
    out = Loaded(links=len(hrefs), images=len(images))
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme in ("http", "https", "mailto"):
            out.broken_links.append(f"{href} (external: the pages are self-contained)")
        elif not parts.path:  # an anchor on this page
            if parts.fragment and parts.fragment not in ids:
                out.broken_links.append(f"{href} (no element with that id)")
        elif not (page.parent / unquote(parts.path)).is_file():
            out.broken_links.append(f"{href} (no such file beside {page.name})")
    out.broken_images = [src for src, ok in images if not ok]
    out.errors = [
        f"{e['level']} {e['message']}"
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" or e.get("source") == "network"
    ]
    return out


def screenshot(driver, name: str) -> Path:
    """The whole page (up to MAX_HEIGHT pixels) as results/test-screenshots/<name>.png."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(WIDTH, min(max(height, 600), MAX_HEIGHT))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot of {name}"
    driver.set_window_size(WIDTH, 1000)
    print(f"screenshot: {path}")
    return path


def rows_aligned(driver) -> tuple[int, list[str]]:
    """The diff page's turn rows: for each, the left (A) and right (B) cells must share their top
    edge and height, so a turn reads across. Folded turns (closed <details>) are opened first.
    Returns (rows compared, problems)."""
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    boxes = driver.execute_script("""
        return Array.from(document.querySelectorAll('.grid .row[id]')).map(r => {
          const s = r.querySelectorAll(':scope > .side');
          const box = e => { const b = e.getBoundingClientRect(); return [b.top, b.height, b.left, b.width]; };
          return [r.id, box(r), s.length === 2 ? box(s[0]) : null, s.length === 2 ? box(s[1]) : null];
        });""")
    problems = []
    for row_id, row, a, b in boxes:
        if a is None or b is None:
            problems.append(f"{row_id}: not two sides")
            continue
        if abs(a[0] - b[0]) > 0.5 or abs(a[1] - b[1]) > 0.5:
            problems.append(
                f"{row_id}: A at top {a[0]:.1f} height {a[1]:.1f}, B at top {b[0]:.1f} height {b[1]:.1f}"
            )
        if not a[2] + a[3] <= b[2] + 0.5:
            problems.append(f"{row_id}: A (left {a[2]:.1f}, width {a[3]:.1f}) overlaps B (left {b[2]:.1f})")
        if abs(a[0] - row[0]) > 0.5:
            problems.append(f"{row_id}: the cells do not start at the row's top")
    return len(boxes), problems


@pytest.fixture(scope="session")
def report_on_disk(study, runs, tmp_path_factory):
    """The report of the harness study (tests/analysis/conftest.py), with its diff pages, written
    to a temporary directory and not mirrored to MLflow (other tests count what is logged there)."""
    from analysis.report import build

    rep = build.generate(
        study.uri,
        study.experiment,
        study.study,
        tmp_path_factory.mktemp("browsed-report"),
        runs=runs,
        log_mlflow=False,
    )
    assert rep is not None and rep.pages is not None
    return rep


def report_screenshots(terminalreporter, started: float) -> None:
    """The screenshots this session took, named at the end of pytest's output (tests/conftest.py)."""
    shots = sorted(p for p in SCREENSHOTS.glob("*.png") if p.stat().st_mtime >= started)
    if shots:
        terminalreporter.write_sep("-", "browser screenshots")
        for p in shots:
            terminalreporter.write_line(str(p))
