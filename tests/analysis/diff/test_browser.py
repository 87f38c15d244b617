"""A diff page in headless Chromium: no console error, every link and resource resolves, and
the two sides stay aligned turn by turn (the left and right cells of each turn row share their
top edge and height); a screenshot is kept."""

from __future__ import annotations

import pytest

from tests.helpers.browser import browser, load, report_on_disk, rows_aligned, screenshot

__all__ = ["browser", "report_on_disk"]  # fixtures, imported to be found
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def diff_page(report_on_disk):
    """A mismatch's page: the pair whose outcomes differ, with its divergent turn marked."""
    rel = next(iter(sorted(report_on_disk.pages.mismatch.values())))
    return report_on_disk.out_dir / rel


def test_diff_page_in_a_browser(browser, diff_page):
    seen = load(browser, diff_page)
    assert seen.errors == []
    assert seen.broken_links == [] and seen.broken_images == []
    assert seen.links > 0  # the turn numbers link to their rows
    compared, problems = rows_aligned(browser)
    turns = browser.execute_script("return document.querySelectorAll('.grid .row[id^=turn-]').length")
    assert compared == turns > 0
    assert problems == []
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = false)")
    shot = screenshot(browser, "diff-page")
    assert shot.stat().st_size > 10_000


def test_misaligned_sides_are_seen(browser, diff_page, tmp_path):
    # The alignment check can fail: the same page with the right-hand cells pushed down.
    html = diff_page.read_text().replace("</style>", ".row>.side:last-child{margin-top:7px}</style>", 1)
    page = tmp_path / diff_page.name
    page.write_text(html)
    load(browser, page)
    compared, problems = rows_aligned(browser)
    assert compared > 0 and len(problems) == compared
