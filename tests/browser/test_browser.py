"""The website in a real browser (Playwright driving Debian's Chromium), with the Battlelog
simulator and a real interactive collector process, each page at desktop and phone width: the
home page (playing now, recently collected, leaderboards), a full leaderboard, search with its
count, pages and stats preview; ask for a refresh, watch the status page's position and ETA;
the soldier page (BF4's item names, headline stats, weapons table, uPlot history and per-weapon
charts with a point per collection); a fresh soldier's request says when it becomes
refreshable; a name not known here is looked up step by step and collected; the operator
console refuses without credentials and works with them, its event log names soldiers.

Screenshots go to a temporary folder (or BF4PS_SCREENSHOT_DIR)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bf4ps.battlelog.models import DetailedStats
from bf4ps.db.connect import connection
from bf4ps.domain import Platform
from bf4ps.settings import Settings
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.sim.battlelog.snapshot import take
from bf4ps.stats.snapshot import write_detailed
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread
from tests import load
from tests.fleet import Fleet, simulator
from tests.helpers import interactive_gate, make_soldier

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed at "
                       "/usr/bin/chromium (apt-get install -y chromium)"),
]
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
OPS = ("operator", "browser-pass")
INTERVAL = "1.0"
PHONE = {"width": 390, "height": 844}
LONG_NAMED = 950_045_529_717
FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": INTERVAL,
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.05"}
HERO = 1_500_000_711  # the simulator gives him a 495-hour career: on every board


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("BF4PS_SCREENSHOT_DIR", tmp_path / "screens"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def web(db_url: str) -> Iterator[str]:
    settings = Settings(database_url=db_url, ops_username=OPS[0],  # type: ignore[arg-type]
                        ops_password=OPS[1], secret_key="browser",
                        egress_min_interval_seconds=float(INTERVAL), idle_poll_seconds=0.3)
    with serve_in_thread(create_app(settings)) as base:
        yield base


async def seed(db_url: str) -> None:
    """The hero with a month of older snapshots (collected long ago), and two soldiers whose
    requests will queue ahead of the hero's."""
    async with connection(db_url) as conn:
        sid = await make_soldier(conn, HERO, name="BrowserHero")
        now = datetime.now(UTC)
        # below what the simulator serves the hero now (his counters only grow): older
        # snapshots a plausible answer may follow (a lower one would be refused, rightly)
        served = take(HERO, 1.0)
        for i, days in enumerate((40, 30, 20, 12)):
            f = 0.8 + 0.05 * i
            await write_detailed(conn, sid, DetailedStats(
                kills=int(served.kills * f), deaths=int(served.deaths * f), skill=250 + 12 * i,
                score_per_minute=420.0 + 15 * i, kills_per_minute=0.7 + 0.05 * i,
                shots_fired=int(served.fired * f), shots_hit=int(served.hit * f),
                score=int(served.score * f), time_played_seconds=int(served.time_played * f)),
                now - timedelta(days=days))
        await conn.execute(
            "UPDATE collection_state SET status = 'current', last_attempt_at = now() - "
            "interval '12 days', last_success_at = now() - interval '12 days', next_due_at = "
            "now() WHERE soldier_id = %s", [sid])
        for pid in (1_500_000_801, 1_500_000_802):
            await make_soldier(conn, pid, name=f"Ahead{pid % 1000}")
        await make_soldier(conn, LONG_NAMED, name="NoScopeKing_1987")  # a full-length name
        for i in range(25):  # a search with two pages
            await make_soldier(conn, 1_500_001_000 + i, name=f"Pager{i:02d}")
        await conn.execute("UPDATE soldiers SET first_seen_at = now() - interval '2 minutes', "
                           "last_seen_at = now() - interval '2 minutes' WHERE persona_id = %s",
                           [LONG_NAMED])  # on a server now, as BF4SW saw


async def test_player_journey_and_ops(db_url: str, web: str, tmp_path: Path,
                                      shots: Path) -> None:
    from playwright.async_api import async_playwright, expect

    await seed(db_url)
    with simulator(speed=20, min_interval=float(INTERVAL)) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        fleet.start("web-interactive-01", "interactive-egress", "127.0.0.30", "interactive")
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM),
                                                   args=CHROME_ARGS)
                try:
                    await _discovery(browser, web, shots)
                    await _journey(browser, web, shots)
                    await _nothing_due(browser, web, shots)
                    await _lookup(browser, web, shots)
                    await _ops(browser, web, shots)
                finally:
                    await browser.close()
        finally:
            codes = fleet.stop_all()
    assert codes == {"web-interactive-01": 0}, fleet.log("web-interactive-01")[-2000:]
    del expect


async def _journey(browser, web: str, shots: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    # two other players asked first: the hero's request queues behind their jobs
    async with httpx.AsyncClient(base_url=web) as api:
        for pid in (1_500_000_801, 1_500_000_802):
            r = await api.post("/api/requests", json={"platform": "pc", "persona_id": pid})
            assert r.status_code == 202, r.text
    await page.goto(web + "/")
    await page.fill("#q", "browserher")  # a prefix: the list (the exact name opens him)
    await page.select_option("#search-form select[name=platform]", "pc")
    await page.click("#search-form button[type=submit]")
    await expect(page.locator("a.soldier-link", has_text="BrowserHero")).to_be_visible()
    hit = page.locator("ul.results li", has_text="BrowserHero")
    await expect(page.locator("#search-count")).to_have_text("(1 match)")
    await expect(hit).to_contain_text("K/D 1.")  # the stats preview
    await expect(hit).to_contain_text("stats from 12 days ago")
    await page.screenshot(path=str(shots / "1-search.png"), full_page=True)
    await page.locator("ul.results li", has_text="BrowserHero").get_by_role(
        "button", name="Refresh stats").click()
    await page.wait_for_url(re.compile(r".*/requests/[0-9a-f-]{36}$"))
    position = page.locator("#req-position")
    await expect(position).to_be_visible()
    assert int((await position.inner_text()).strip()) > 0
    await expect(page.locator("#req-eta")).to_contain_text(re.compile(r"in ~\d+ s|any moment"))
    await expect(page.locator("#req-done")).to_contain_text(re.compile(r"in ~\d+ s"))
    await page.screenshot(path=str(shots / "2-request.png"), full_page=True)
    await _fits_phone(page, shots / "2b-request-phone.png")
    # once its first request went out, the page says when, and still counts down to the end
    await expect(page.locator("#req-eta")).to_contain_text(
        re.compile(r"sent \d\d:\d\d:\d\d UTC"), timeout=60_000)
    link = page.locator("#soldier-link")
    await expect(link).to_be_visible(timeout=90_000)
    await page.screenshot(path=str(shots / "3-request-done.png"), full_page=True)
    await link.click()
    await page.wait_for_url(f"**/soldiers/pc/{HERO}")
    await expect(page.locator("#soldier-name")).to_have_text("BrowserHero")
    headline = page.locator("#headline")
    await expect(headline).to_be_visible()
    await expect(headline).to_contain_text("K/D")
    await expect(headline).to_contain_text("Skill")
    weapons = page.locator("#weapons-table tbody tr")
    assert await weapons.count() > 50
    # BF4's own names, as Battlelog and the game show them
    shown = {t: set(await page.evaluate(
        f"Array.from(document.querySelectorAll('#{t}-table tbody td:first-child'))"
        ".map(td => td.firstChild.textContent)")) for t in ("weapons", "vehicles")}
    assert {"FAMAS", "SCAR-H", "MARE'S LEG", "SPAS-12", "USAS-12 FLIR"} <= shown["weapons"]
    assert {"F-35", "AH-1Z VIPER", "Z-11W"} <= shown["vehicles"]
    # the history: uPlot on a real time axis, a point per collection (the four old snapshots
    # and the one just collected), its legend following the cursor and a tooltip
    chart = page.locator("#history-chart .uplot")
    await expect(chart).to_be_visible()
    await expect(page.locator("#history-chart + p")).to_contain_text(
        "A point per collection (5)")
    await page.locator("#history-chart").scroll_into_view_if_needed()
    box = await page.locator("#history-chart .u-over").bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2, steps=5)
    await expect(page.locator("#history-chart .chart-tip")).to_contain_text("K/D")
    await expect(page.locator("#history-chart .u-legend")).to_contain_text("K/D")
    await page.locator("#chart-metrics button", has_text="Skill").click()
    await expect(page.locator("#history-chart .u-legend")).to_contain_text("Skill")
    ticks = await page.evaluate("Array.from(document.querySelectorAll('#history-chart .u-axis')"
                                ").length")
    assert ticks == 2
    # per-weapon history: the most-used weapon's kills, then its accuracy
    await expect(page.locator("#weapon-history-chart .uplot")).to_be_visible()
    await page.locator("#weapon-history-metrics button[data-metric=accuracy]").click()
    await expect(page.locator("#weapon-history-chart .u-legend")).to_contain_text("Accuracy")
    await expect(page.locator("#vehicle-history-chart .uplot")).to_be_visible()
    await page.locator("#weapons-table th", has_text="Kills").click()  # sortable
    await page.select_option("select[data-filter-table=weapons-table]", index=1)
    visible = page.locator("#weapons-table tbody tr:not(.hidden)")
    assert 0 < await visible.count() < await weapons.count()
    await page.select_option("select[data-filter-table=weapons-table]", "")
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(shots / "4-soldier.png"))
    await page.locator("#history-chart").scroll_into_view_if_needed()
    await page.screenshot(path=str(shots / "5-soldier-chart.png"))
    await page.locator("#weapon-history").scroll_into_view_if_needed()
    await page.screenshot(path=str(shots / "5b-soldier-weapon-chart.png"))
    await page.screenshot(path=str(shots / "6-soldier-full.png"), full_page=True)
    # on a phone: nothing wider than the screen, the chart redrawn at its width (not shrunk),
    # the weapons table keeps name, kills and accuracy in view
    await page.set_viewport_size(PHONE)
    width_js = "document.querySelector('#history-chart canvas').getBoundingClientRect().width"
    deadline = load.deadline(5)  # redrawn after the resize settles (150 ms)
    while await page.evaluate(width_js) >= PHONE["width"] and not deadline.expired():
        await page.wait_for_timeout(100)
    assert 250 < await page.evaluate(width_js) < PHONE["width"]
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    head = page.locator("#weapons-table thead th")
    for label in ("Weapon", "Kills", "Accuracy"):
        await expect(head.filter(has_text=label).first).to_be_visible()
    await expect(head.filter(has_text="Category")).to_be_hidden()
    table_box = await page.locator("#weapons-table").bounding_box()
    assert table_box is not None and table_box["width"] <= PHONE["width"]
    await page.locator("#weapons-table").scroll_into_view_if_needed()
    await page.screenshot(path=str(shots / "6c-soldier-weapons-phone.png"))
    await page.screenshot(path=str(shots / "6b-soldier-phone.png"), full_page=True)
    assert not errors, errors  # no CSP violations or script errors
    await page.close()


async def _discovery(browser, web: str, shots: Path) -> None:  # type: ignore[no-untyped-def]
    """The home page, a full leaderboard and a paged search, at desktop and phone width."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(web + "/")
    await expect(page.locator("#playing-now")).to_contain_text("NoScopeKing_1987")
    await expect(page.locator("#recently-collected")).to_contain_text("BrowserHero")
    for board in ("spm", "kd", "skill", "kills"):
        await expect(page.locator(f"#board-{board}")).to_contain_text("BrowserHero")
    await page.screenshot(path=str(shots / "0-home.png"), full_page=True)
    await _fits_phone(page, shots / "0b-home-phone.png")
    await page.locator("#board-kd a", has_text="full board").click()
    await page.wait_for_url("**/leaderboards?platform=pc&by=kd")
    await expect(page.locator("#leaderboard-table tbody tr").first).to_contain_text(
        "BrowserHero")
    await page.screenshot(path=str(shots / "0c-leaderboard.png"), full_page=True)
    await _fits_phone(page, shots / "0d-leaderboard-phone.png")
    await page.goto(web + "/?q=pager")
    await expect(page.locator("#search-count")).to_have_text("(25 matches)")
    results = page.locator("#search-results li")
    await expect(results).to_have_count(20)
    await expect(results.first.get_by_role("button", name="Collect stats")).to_be_visible()
    await page.locator("a[rel=next]").click()
    await page.wait_for_url("**/?q=pager&page=2")
    await expect(results).to_have_count(5)
    await expect(page.locator(".pager")).to_contain_text("page 2 of 2")
    await page.screenshot(path=str(shots / "0e-search-pages.png"), full_page=True)
    await _fits_phone(page, shots / "0f-search-phone.png")
    await page.fill("#q", "BROWSERHERO")  # the one soldier named exactly: his page opens
    await page.click("#search-form button[type=submit]")
    await page.wait_for_url(f"**/soldiers/pc/{HERO}")
    await expect(page.locator("#soldier-name")).to_have_text("BrowserHero")
    await page.close()


async def _nothing_due(browser, web: str, shots: Path) -> None:  # type: ignore[no-untyped-def]
    """Just collected: a refresh has nothing to do and says when it will."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(web + f"/soldiers/pc/{HERO}")
    await page.locator(".soldier-head").get_by_role("button", name="Refresh stats").click()
    await page.wait_for_url(re.compile(r".*/requests/[0-9a-f-]{36}$"))
    await expect(page.locator("#nothing-due")).to_contain_text("A refresh becomes possible")
    await expect(page.locator("#refreshable-at")).to_have_text(re.compile(r"^in \d+ (s|min)"))
    await page.screenshot(path=str(shots / "3b-nothing-due.png"), full_page=True)
    await _fits_phone(page, shots / "3c-nothing-due-phone.png")
    await page.close()


async def _fits_phone(page, shot: Path | None = None) -> None:  # type: ignore[no-untyped-def]
    """The page as on a phone: wide tables scroll inside their cards, the page never sideways."""
    size = page.viewport_size
    await page.set_viewport_size(PHONE)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], (page.url, width)
    if shot is not None:
        await page.screenshot(path=str(shot), full_page=True)
    await page.set_viewport_size(size)


async def _lookup(browser, web: str, shots: Path) -> None:  # type: ignore[no-untyped-def]
    """A name not known here: looked up on (simulated) Battlelog, then collected."""
    from playwright.async_api import expect

    name = next(n for n in (f"Newcomer{i}" for i in range(1000))
                if Platform.PC in name_platforms(n))
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(web + "/?q=noscope&platform=pc")  # a soldier list and the offer
    await expect(page.locator("ul.results li")).not_to_have_count(0)
    await _fits_phone(page)
    await page.goto(web + "/?q=" + name)  # as the header's search box sends it: no platform
    offer = page.locator("form.lookup")
    await offer.get_by_label("Platform").select_option("pc")
    await offer.get_by_role("button", name=f"Collect {name}").click()
    await page.wait_for_url(re.compile(r".*/requests/[0-9a-f-]{36}$"))
    await expect(page.locator("h1")).to_contain_text(name)
    await expect(page.locator("#req-eta")).to_contain_text("sent", timeout=60_000)
    # mid-chain, without a reload: the look-up done, the found soldier's resources each with
    # its own progress (the vehicles wait behind the others)
    await expect(page.locator('#req-resources tr[data-resource="vehicles"] td.job')).to_have_text(
        re.compile(r"^(waiting|next|collecting now)"), timeout=60_000)
    await expect(page.locator('#req-resources tr[data-resource="lookup"] td.job')).to_have_text(
        "done")
    await page.screenshot(path=str(shots / "8-lookup-chain.png"), full_page=True)
    await _fits_phone(page)  # the three figures with the longest of their texts
    link = page.locator("#soldier-link")
    await expect(link).to_be_visible(timeout=90_000)
    # the chain, step by step: the look-up, then each resource of the soldier it found
    steps = page.locator("#req-resources tbody tr")
    assert [await r.get_attribute("data-resource") for r in await steps.all()] == [
        "lookup", "detailed", "profile", "weapons", "vehicles"]
    for row in await steps.all():
        await expect(row.locator("td.job")).to_have_text("done")
    await page.screenshot(path=str(shots / "8a-lookup-done.png"), full_page=True)
    await _fits_phone(page, shots / "8b-lookup-done-phone.png")
    await link.click()
    await expect(page.locator("#soldier-name")).to_have_text(name)
    await expect(page.locator("#headline")).to_contain_text("K/D")
    await page.screenshot(path=str(shots / "8-looked-up.png"))
    await page.close()


async def _ops(browser, web: str, shots: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.async_api import expect

    anonymous = await browser.new_context()
    refused = await anonymous.request.get(web + "/ops")
    assert refused.status == 401 and refused.headers["www-authenticate"].startswith("Basic")
    page = await anonymous.new_page()
    with pytest.raises(Exception, match="ERR_INVALID_AUTH_CREDENTIALS"):
        await page.goto(web + "/ops")  # headless Chromium gives up on the Basic challenge
    await anonymous.close()
    operator = await browser.new_context(
        http_credentials={"username": OPS[0], "password": OPS[1]},
        viewport={"width": 1400, "height": 1000})
    page = await operator.new_page()
    ok = await page.goto(web + "/ops")
    assert ok is not None and ok.status == 200
    fleet = page.locator("#fleet")
    await expect(fleet).to_contain_text("web-interactive-01")
    await expect(fleet).to_contain_text("healthy")
    await expect(page.locator("#queue-coverage")).to_contain_text("weapons")
    await page.screenshot(path=str(shots / "7-ops.png"), full_page=True)
    await _fits_phone(page, shots / "7a-ops-phone.png")
    await page.locator("#fleet tr", has_text="web-interactive-01").get_by_role(
        "button", name="Drain").click()
    await expect(page.locator("#fleet tr", has_text="web-interactive-01")).to_contain_text(
        "drained")
    await page.locator("#fleet tr", has_text="web-interactive-01").get_by_role(
        "button", name="Resume").click()
    await expect(page.locator("#fleet tr", has_text="web-interactive-01")).to_contain_text(
        "healthy")
    await page.goto(web + "/ops/events?collector=web-interactive-01&type=succeeded")
    assert await page.locator("#events tbody tr").count() >= 4
    await _fits_phone(page)
    await page.goto(web + "/ops/events?name=browserhero")  # by name, any case
    await expect(page.locator("#events tbody tr").first).to_contain_text("BrowserHero")
    await expect(page.locator("#events tbody tr").first).to_contain_text(f"{HERO} pc")
    await page.screenshot(path=str(shots / "7b-events.png"), full_page=True)
    await _fits_phone(page, shots / "7c-events-phone.png")
    await page.goto(web + "/ops/events?name=NobodyAtAll")
    await expect(page.locator("#no-events")).to_contain_text("No events match (name NobodyAtAll)")
    await operator.close()


async def test_a_waiting_request_follows_its_collector_coming_online(
        db_url: str, web: str, tmp_path: Path) -> None:
    """No interactive collector: the page says so and counts nothing down; once one is online
    (seen by the page's own polling, no reload) the countdowns start and the note goes."""
    from playwright.async_api import async_playwright, expect

    async with connection(db_url) as conn:
        await make_soldier(conn, 1_500_000_900, name="Patient")
    async with httpx.AsyncClient(base_url=web) as api:
        r = await api.post("/api/requests", json={"platform": "pc", "persona_id": 1_500_000_900})
        assert r.status_code == 202, r.text
        status_url = r.json()["status_url"]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(web + status_url)
            await expect(page.locator("#req-eta")).to_have_text("no collector online")
            await expect(page.locator("#req-done")).to_have_text("–")
            await expect(page.locator("#req-idle")).to_be_visible()
            async with connection(db_url) as conn:
                await interactive_gate(conn, tmp_path, interval=5.0)
            await expect(page.locator("#req-done")).to_have_text(
                re.compile(r"in ~\d+ s|any moment"), timeout=10_000)
            await expect(page.locator("#req-eta")).to_have_text(
                re.compile(r"in ~\d+ s|any moment"))
            await expect(page.locator("#req-idle")).to_be_hidden()
        finally:
            await browser.close()
