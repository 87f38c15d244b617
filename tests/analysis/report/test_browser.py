"""The report's index.html in headless Chromium: it loads without a console error or a failed
resource, every link (the diff pages) and every figure resolves, and a screenshot is kept."""

from __future__ import annotations

import pytest

from tests.helpers.browser import browser, load, report_on_disk, screenshot

__all__ = ["browser", "report_on_disk"]  # fixtures, imported to be found
pytestmark = pytest.mark.browser


def test_report_index_in_a_browser(browser, report_on_disk):
    page = report_on_disk.out_dir / "index.html"
    seen = load(browser, page)
    assert seen.errors == []
    assert seen.broken_links == [] and seen.broken_images == []
    assert seen.images == len(report_on_disk.figures)  # every figure, inlined, decoded
    diff_links = len(report_on_disk.pages.mismatch) + len(report_on_disk.pages.reps)
    assert diff_links > 0 and seen.links >= diff_links
    title = browser.find_element("css selector", "h1").text
    assert title.startswith("ctxbench report")
    tables = browser.find_elements("css selector", "table")
    assert len(tables) >= 8 and all(t.size["width"] > 0 for t in tables)
    shot = screenshot(browser, "report-index")
    assert shot.stat().st_size > 10_000


def test_a_missing_figure_and_a_dead_link_are_seen(browser, report_on_disk):
    # The checks above can fail: the same page, beside the real one (so its other links resolve),
    # with one figure pointing nowhere and one link to a diff page that is not there.
    html = (report_on_disk.out_dir / "index.html").read_text()
    head, sep, tail = html.partition('src="data:image/png;base64,')
    broken = head + 'src="figures/nonesuch.png" data-was="' + tail
    link = next(iter(report_on_disk.pages.mismatch.values()))
    broken = broken.replace(f'href="{link}"', 'href="diff/nonesuch.html"', 1)
    page = report_on_disk.out_dir / "broken.html"
    page.write_text(broken)
    try:
        seen = load(browser, page)
    finally:
        page.unlink()
    assert seen.broken_images == ["figures/nonesuch.png"]
    assert seen.broken_links == ["diff/nonesuch.html (no such file beside broken.html)"]
    assert any("nonesuch.png" in e for e in seen.errors)
