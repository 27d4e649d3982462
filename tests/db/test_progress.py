"""Progress from snapshots against real PostgreSQL: the intervals the stats writers store with
each snapshot (partial collections bridged, resets kept as resets), the checks after storage
that flag impossible rates, the gains leaderboards (minimum time, smoothing) and the career
boards without flagged soldiers, an operator's clear restoring him, and the soldier page's
progress."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bf4ps.battlelog.models import DetailedStats, WeaponItem
from bf4ps.db.connect import Conn, open_pool
from bf4ps.db.queries import Record, all_rows
from bf4ps.domain import Platform
from bf4ps.interactive.submit import Limits
from bf4ps.policy import Policy
from bf4ps.scheduler.progress import ProgressStep
from bf4ps.stats import discovery, gains_boards, progress_check, progress_flags
from bf4ps.stats.store import write_detailed, write_weapons
from bf4ps.views import soldier as soldier_view
from bf4ps.views import soldier_page
from bf4ps.web.app import create_app
from tests.db.test_web_api import OPS, SETTINGS, client_for
from tests.helpers import T0, count, make_soldier

HOUR = timedelta(hours=1)
BASE = DetailedStats(rank=40, kills=5000, deaths=4000, score=2_000_000,
                     time_played_seconds=400_000, headshots=900, shots_fired=100_000,
                     shots_hit=15_000, score_per_minute=300, kills_per_minute=0.75)


def grown(d: DetailedStats, minutes: int, kpm: float, spm: float) -> DetailedStats:
    kills = round(minutes * kpm)
    assert d.kills is not None and d.deaths is not None and d.score is not None
    assert d.time_played_seconds is not None and d.headshots is not None
    assert d.shots_fired is not None and d.shots_hit is not None
    return replace(d, kills=d.kills + kills, deaths=d.deaths + max(1, kills // 2),
                   score=d.score + round(minutes * spm),
                   time_played_seconds=d.time_played_seconds + minutes * 60,
                   headshots=d.headshots + kills // 5, shots_fired=d.shots_fired + kills * 6,
                   shots_hit=d.shots_hit + kills)


def weapon(kills: int, seconds: int) -> WeaponItem:
    return WeaponItem("famas-guid", "WARSAW_ID_P_WNAME_FAMAS", "famas", "Assault Rifles", "ar",
                      kills, kills // 100, 0.5, kills // 5, kills * 6, kills, 0.16, seconds)


async def play(conn: Conn, soldier_id: int, rates: list[tuple[float, float]],
               start: datetime = T0) -> datetime:
    """One detailed and one weapons collection an hour, 50 minutes played between them."""
    d, at, famas = BASE, start, (400, 30_000)
    await write_detailed(conn, soldier_id, d, at)
    await write_weapons(conn, soldier_id, (weapon(*famas),), at)
    for kpm, spm in rates:
        at += HOUR
        d = grown(d, 50, kpm, spm)
        famas = (famas[0] + round(25 * kpm), famas[1] + 1500)
        await write_detailed(conn, soldier_id, d, at)
        await write_weapons(conn, soldier_id, (weapon(*famas),), at)
    return at


async def on_boards(conn: Conn, soldier_id: int) -> set[str]:
    rows = await all_rows(conn, Record, "gains_board_page", {"board": "kpm", "platform": "pc",
                                                     "item_id": 0, "limit": 100, "offset": 0})
    rows += await all_rows(conn, Record, "gains_board_page", {"board": "spm", "platform": "pc",
                                                      "item_id": 0, "limit": 100, "offset": 0})
    found = {f"gains-{r['soldier_id']}" for r in rows if r["soldier_id"] == soldier_id}
    n = await count(conn, "SELECT count(*) FROM gains_boards WHERE soldier_id = %(s)s",
                    {"s": soldier_id})
    if n:
        found.add("gains-any")
    for board in discovery.Board:
        page = await discovery.leaderboard(conn, board, Platform.PC, 1, 100)
        if any(p.soldier_id == soldier_id for p in page.soldiers):
            found.add(f"career-{board.value}")
    return found


async def test_intervals_are_written_with_snapshots_and_partial_ones_bridged(conn: Conn) -> None:
    sid = await make_soldier(conn, 1001)
    await write_detailed(conn, sid, BASE, T0)
    await write_detailed(conn, sid, BASE, T0 + HOUR)  # unchanged: no interval
    partial = replace(grown(BASE, 30, 1, 400), kills=None)
    await write_detailed(conn, sid, partial, T0 + 2 * HOUR)  # partial: no interval
    good = grown(BASE, 60, 1, 400)
    await write_detailed(conn, sid, good, T0 + 3 * HOUR)
    reset = replace(BASE, kills=10, deaths=9, score=5000, time_played_seconds=3600)
    await write_detailed(conn, sid, reset, T0 + 4 * HOUR)
    rows = await all_rows(conn, Record, "soldier_intervals_of", {"soldier_id": sid, "since": T0,
                                                         "limit": 10})
    assert [(r["started_at"], r["ended_at"], r["kills"], r["seconds"], r["reset"])
            for r in reversed(rows)] == [
        (T0, T0 + 3 * HOUR, 60, 3600, False),  # bridged over the partial snapshot
        (T0 + 3 * HOUR, T0 + 4 * HOUR, 0, 0, True)]  # a reset, never negative


async def test_impossible_rates_are_flagged_and_kept_off_every_board_until_cleared(
        conn: Conn) -> None:
    policy = Policy()
    honest = await make_soldier(conn, 2001)
    cheat = await make_soldier(conn, 2002)
    end = await play(conn, honest, [(1.2, 500)] * 4)
    await play(conn, cheat, [(1.5, 600), (30.0, 9000), (1.5, 600), (1.5, 600)])
    now = end + timedelta(minutes=5)
    report = await progress_check.check_pending(conn, policy, now)
    assert report.checked == 16 and report.flagged == 1  # 8 soldier + 8 weapon intervals
    await gains_boards.refresh(conn, now)
    flags = await all_rows(conn, Record, "progress_flags_list", {"all": False, "limit": 10})
    assert {f["soldier_id"] for f in flags} == {cheat}
    assert {f["kind"] for f in flags} == {"soldier", "weapon"}
    assert any("kills per minute" in f["reason"] for f in flags)
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'progress_flagged' AND soldier_id = %(s)s", {"s": cheat}) == 2
    assert await on_boards(conn, cheat) == set()
    assert {"gains-any", "career-spm", "career-kills"} <= await on_boards(conn, honest)
    weapon_board = await all_rows(conn, Record, "gains_board_page", {
        "board": "weapon_kpm", "platform": "pc", "item_id": await famas_id(conn),
        "limit": 10, "offset": 0})
    assert [r["soldier_id"] for r in weapon_board] == [honest]

    # the page shows him flagged
    s = await soldier_view.find(conn, Platform.PC, 2002)
    assert s is not None
    page = await soldier_page.page(conn, s, now)
    assert len(page.progress.flags) == 2
    assert any(i.flag for i in page.progress.intervals)

    for f in flags:
        await progress_flags.clear(conn, f["flag_id"], by="ops-test", note="reviewed",
                                   now=now)
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'progress_flag_cleared'") == 2
    back = await on_boards(conn, cheat)
    assert {"gains-any", "career-spm"} <= back
    # smoothing: his one mad hour among four does not put him far above the honest soldier
    kpm = await all_rows(conn, Record, "gains_board_page", {"board": "kpm", "platform": "pc",
                                                    "item_id": 0, "limit": 10, "offset": 0})
    top, other = kpm
    assert top["soldier_id"] == cheat and top["value"] < top["raw"]  # pulled toward the mean
    assert other["raw"] < other["value"] < top["value"]


async def famas_id(conn: Conn) -> int:
    return await count(conn, "SELECT weapon_id FROM weapon_catalog WHERE guid = 'famas-guid'")


async def test_minimum_time_keeps_a_short_sample_off_the_boards(conn: Conn) -> None:
    policy = Policy()
    sid = await make_soldier(conn, 3001)
    d = BASE
    await write_detailed(conn, sid, d, T0)
    await write_detailed(conn, sid, grown(d, 2, 4.0, 1500), T0 + HOUR)  # two great minutes
    await progress_check.check_pending(conn, policy, T0 + 2 * HOUR)
    await gains_boards.refresh(conn, T0 + 2 * HOUR)
    assert await count(conn, "SELECT count(*) FROM gains_boards") == 0


async def test_the_soldier_page_shows_gains_and_rates_per_collection(conn: Conn) -> None:
    sid = await make_soldier(conn, 4001)
    end = await play(conn, sid, [(1.0, 400), (2.0, 500), (1.0, 600)])
    s = await soldier_view.find(conn, Platform.PC, 4001)
    assert s is not None
    page = await soldier_page.page(conn, s, end + timedelta(minutes=1))
    p = page.progress
    assert p.since_last is not None and p.since_last.kills == 50 and p.since_last.kpm == 1.0
    w24, w7, w30 = p.windows
    assert (w24.label, w24.kills, w24.seconds, w24.intervals) == ("24 h", 200, 9000, 3)
    assert w7.kills == w30.kills == 200
    famas = page.weapons[0]
    assert p.weapons[famas.weapon_id].kills == 100
    assert [h.interval_kpm for h in page.history] == [None, 1.0, 2.0, 1.0]
    assert p.stars == 1  # FAMAS: 400 + 100 kills crossed a hundred
    assert page.weapon_history[0].interval_kills[1:] == [25, 50, 25]


async def test_the_progress_api_and_the_flags_api(conn: Conn, db_url: str) -> None:
    now = datetime.now(UTC)
    sid = await make_soldier(conn, 5001)
    cheat = await make_soldier(conn, 5002)
    await play(conn, sid, [(1.0, 400)] * 3, start=now - 4 * HOUR)
    await play(conn, cheat, [(1.0, 400), (20.0, 400), (1.0, 400)], start=now - 4 * HOUR)
    await progress_check.check_pending(conn, Policy(), now)
    await gains_boards.refresh(conn, now)
    pool = await open_pool(db_url, max_size=2)
    try:
        async with client_for(create_app(SETTINGS, pool=pool, limits=Limits(1000, 60))) as c:
            r = await c.get("/api/soldiers/pc/5001/progress")
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["progress"]["since_last"]["kills"] == 50
            assert [w["label"] for w in body["progress"]["windows"]] == ["24 h", "7 d", "30 d"]
            assert (await c.get("/api/soldiers/pc/9/progress")).status_code == 404
            week = (await c.get("/api/leaderboards/week?by=kpm")).json()
            assert [e["persona_id"] for e in week["entries"]] == [5001]
            weapon = (await c.get("/api/leaderboards/week?by=weapon")).json()
            assert weapon["item_name"] == "FAMAS" and len(weapon["entries"]) == 1
            bad = await c.get("/api/leaderboards/week?by=famas")
            assert bad.status_code == 422
            assert (await c.get("/leaderboards/week?by=famas")).status_code == 422
            assert (await c.get("/leaderboards/week?item=x")).status_code == 422
            assert (await c.get("/api/ops/flags")).status_code == 401
            flags = (await c.get("/api/ops/flags", auth=OPS)).json()
            assert flags["open"] == 2 and {f["persona_id"] for f in flags["flags"]} == {5002}
            for f in flags["flags"]:
                done = await c.post(f"/api/ops/flags/{f['flag_id']}/clear", auth=OPS,
                                    json={"note": "reviewed"})
                assert done.status_code == 200, done.text
            again = await c.post(f"/api/ops/flags/{f['flag_id']}/clear", auth=OPS, json={})
            assert again.status_code == 404
            week = (await c.get("/api/leaderboards/week?by=kpm")).json()
            assert {e["persona_id"] for e in week["entries"]} == {5001, 5002}
            spec = (await c.get("/openapi.json")).json()
            assert {"/api/soldiers/{platform}/{persona_id}/progress", "/api/leaderboards/week",
                    "/api/ops/flags", "/api/ops/flags/{flag_id}/clear"} <= set(spec["paths"])
    finally:
        await pool.close()


async def test_the_schedulers_progress_step_checks_and_rebuilds(conn: Conn) -> None:
    now = datetime.now(UTC)
    sid = await make_soldier(conn, 6001)
    await play(conn, sid, [(1.0, 400)] * 3, start=now - 4 * HOUR)
    step = ProgressStep()
    await step.run(conn)
    assert await count(conn, "SELECT count(*) FROM soldier_intervals "
                             "WHERE checked_at IS NULL") == 0
    assert await count(conn, "SELECT count(*) FROM gains_boards WHERE soldier_id = %(s)s",
                       {"s": sid}) == 3  # kpm, spm and the FAMAS board
