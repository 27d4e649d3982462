"""The operator console's fleet-history charts in a real browser (Playwright driving Debian's
Chromium): coverage with the projected completion, requests per egress against the limit and
backlog age are drawn with data (canvas pixels painted, one series per resource, egress or
class) at desktop width and at phone width (390 px) without sideways scrolling."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg.types.json import Jsonb

from bf4ps.db.connect import connection
from bf4ps.scheduler import history
from bf4ps.settings import Settings
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread
from tests.browser.test_browser import CHROME_ARGS, CHROMIUM, PHONE
from tests.browser.test_browser import pytestmark as browser_marks
from tests.helpers import make_soldier

pytestmark = browser_marks
OPS = ("operator", "charts-pass")
CHARTS = ("chart-coverage", "chart-requests", "chart-backlog")
PAINTED = """(id) => {
  const c = document.querySelector('#' + id + ' canvas');
  if (!c || !c.width) return 0;
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
  return n;
}"""


@pytest.fixture
def web(db_url: str) -> Iterator[str]:
    settings = Settings(database_url=db_url, ops_username=OPS[0],  # type: ignore[arg-type]
                        ops_password=OPS[1], secret_key="charts")
    with serve_in_thread(create_app(settings)) as base:
        yield base


async def seed(db_url: str) -> None:
    """100 soldiers, 40 of them collected since an hour of records began (12 records of the
    past hour, then one recorded now from the live tables)."""
    async with connection(db_url) as conn:
        for i in range(100):
            await make_soldier(conn, 1_700_000_000 + i)
        now = datetime.now(UTC)
        for i in range(12):
            done = 40 * i // 12
            await conn.execute(
                "INSERT INTO fleet_history (recorded_at, interval_seconds, soldiers, coverage, "
                "finished, requests, backlog_age, refresh_lag) VALUES (%s, 300, 100, %s, %s, "
                "%s, %s, '{}')",
                [now - timedelta(minutes=5 * (12 - i)),
                 Jsonb({"detailed": {"never_attempted": 100 - done, "current": done}}),
                 Jsonb({"detailed": {"succeeded": 3, "failed": 0}}),
                 Jsonb({"eg-1": {"requests": 200 + 10 * i, "limit": 300},
                        "eg-2": {"requests": 150 + 5 * i, "limit": 300}}),
                 Jsonb({"bootstrap": {"detailed": 3600.0 + 300 * i}, "active": {"detailed": 60}})])
        await conn.execute(
            "UPDATE collection_state SET status = 'current', last_attempt_at = now(), "
            "last_success_at = now(), next_due_at = now() + interval '7 days' "
            "WHERE resource = 'detailed' AND soldier_id IN "
            "(SELECT soldier_id FROM soldiers ORDER BY soldier_id LIMIT 40)")
        await history.record(conn, 60)


async def charts_drawn(page) -> None:  # type: ignore[no-untyped-def]
    for chart in CHARTS:
        await page.wait_for_selector(f"#{chart} canvas")
        assert await page.evaluate(PAINTED, chart) > 500, chart
        assert int(await page.get_attribute(f"#{chart}", "data-points") or 0) >= 13, chart
    # four resources plus detailed's projection; two egresses and their limits; five classes
    assert await page.get_attribute("#chart-coverage", "data-series") == "5"
    assert await page.get_attribute("#chart-requests", "data-series") == "4"
    assert await page.get_attribute("#chart-backlog", "data-series") == "5"
    assert "detailed projected" in (await page.inner_text("#chart-coverage")).lower()


async def test_the_consoles_charts_are_drawn_with_data_on_desktop_and_phone(
        db_url: str, web: str, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    await seed(db_url)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            context = await browser.new_context(
                http_credentials={"username": OPS[0], "password": OPS[1]},
                viewport={"width": 1280, "height": 900})
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            await page.goto(web + "/ops")
            await charts_drawn(page)
            await expect(page.locator("#projections")).to_contain_text("detailed 40.0 %")
            await expect(page.locator("#backlog-age")).to_contain_text("bootstrap")
            shots = Path(os.environ.get("BF4PS_SCREENSHOT_DIR", tmp_path))
            await page.locator(".charts").screenshot(path=str(shots / "ops-charts.png"))
            wide = await page.evaluate("document.querySelector('#chart-coverage canvas')"
                                       ".getBoundingClientRect().width")
            await page.set_viewport_size(PHONE)
            await page.reload()
            await charts_drawn(page)
            for chart in CHARTS:
                box = await page.evaluate(f"document.querySelector('#{chart} canvas')"
                                          ".getBoundingClientRect().right")
                assert box <= PHONE["width"], (chart, box)
            assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            narrow = await page.evaluate("document.querySelector('#chart-coverage canvas')"
                                         ".getBoundingClientRect().width")
            assert narrow < wide
            await page.locator(".charts").screenshot(path=str(shots / "ops-charts-phone.png"))
            assert errors == [], errors
        finally:
            await browser.close()
