"""The last session collected by default, over the real process chain: a soldier collected
before he plays (an hour of simulated time earlier: within every freshness interval) plays a
20-minute session in the simulator and leaves. Under the shipped rule of a minimum of play per
resource (here scaled to the test's speed, as the demo scales it) the scheduler makes his
closing detailed, weapons and vehicles due once; a real collector collects them; his page's
"last session" equals the simulator's truth, and his weapon gains (the kills and time the
simulator added to each weapon while he played) are on the weekly per-weapon board."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from bf4ps import policy as policy_mod
from bf4ps.db import migrate
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import bf4sw_platform
from bf4ps.settings import Settings
from bf4ps.sim import play
from bf4ps.sim.battlelog.career import career_for
from bf4ps.sim.battlelog.items import weapons_body
from bf4ps.sim.bf4sw import population
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread
from tests import load
from tests.db.test_bf4sw_intake import sw, sw_name, sw_url  # noqa: F401 - fixtures
from tests.fleet import Fleet, simulator
from tests.system.test_sessions_chain import (
    SPEED,
    SYNC,
    TICK,
    expect_truth,
    live_bf4sw,  # noqa: F401 - fixture
    read_page,
    until,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]  # minutes: run first

LEAD = 60.0  # real seconds from now to the session's start: an hour at SPEED
MINUTE = 60.0  # simulated seconds
# the policy's minimum play (simulated minutes), the session's length around 20 minutes: past
# both, also as the intake observes it (up to a reconciliation and a tick short at each end)
MIN_PLAY, ITEMS_MIN_PLAY = 5 * MINUTE, 10 * MINUTE
LENGTH = (18 * MINUTE, 23 * MINUTE)
BOARD_MIN_SECONDS = 60.0  # a minute with a weapon (game time) puts him on its weekly board


def pick(personas: list[int], slow: float) -> tuple[int, float, play.PlaySession]:
    """A persona, the anchor that starts his first session LEAD s from now, and that session:
    one of LENGTH simulated seconds whose next session is at least 90 s after it ends (the
    page is read before it begins); each span `slow` times longer at SPEED / `slow`."""
    now, speed = time.time(), SPEED / slow
    for pid in personas:
        probe = play.Schedule(speed=speed, anchor=0.0, players=1.0)
        first = next((k for k in range(play.PERIOD) if probe.session(pid, k)), None)
        if first is None:
            continue
        s = probe.session(pid, first)
        assert s is not None
        anchor = now + LEAD * slow - s.start
        schedule = play.Schedule(speed=speed, anchor=anchor, players=1.0)
        session = schedule.session(pid, first)
        following = schedule.session(pid, first + 1)
        assert session is not None
        played = session.seconds * speed
        if LENGTH[0] <= played <= LENGTH[1] and (
                following is None or following.start - session.end >= 90 * slow):
            return pid, anchor, session
    raise AssertionError("no persona with a suitable schedule")


def weapon_gains(pid: int, platform_int: int, growth: tuple[float, float]
                 ) -> dict[str, tuple[int, int]]:
    """Per weapon guid, the kills and seconds the simulator added between the two answers."""
    def served(g: float) -> dict[str, tuple[int, int]]:
        doc = orjson.loads(weapons_body(pid, platform_int, g))
        return {w["guid"]: (round(w["kills"] or 0), round(w["timeEquipped"] or 0))
                for w in doc["data"]["mainWeaponStats"]}
    before, after = served(growth[0]), served(growth[1])
    return {guid: (k - before[guid][0], t - before[guid][1])
            for guid, (k, t) in after.items() if t > before[guid][1]}


async def test_a_soldier_collected_an_hour_before_his_session_gets_its_closing_snapshots(
        db_url: str, sw: Conn, sw_url: str, tmp_path: Path,  # noqa: F811
        live_bf4sw: list[subprocess.Popen[str]]) -> None:  # noqa: F811
    await population.fill(sw, 24, seed=11)
    rows = await (await sw.execute(
        "SELECT DISTINCT platform, persona_id FROM bf4_player_aliases "
        "WHERE last_seen < now() - interval '1 hour' ORDER BY persona_id")).fetchall()
    raw = {int(r["persona_id"]): str(r["platform"]) for r in rows}
    slow = load.slowdown()
    speed = SPEED / slow
    pid, anchor, truth = pick(sorted(raw), slow)
    platform = bf4sw_platform(raw[pid])
    assert platform is not None
    async with connection(db_url) as conn:
        await migrate.upgrade(db_url)
        # the shipped policy but for what the test's time factor scales (the gap, the minimum
        # play in real seconds of BF4SW's clock), a board refreshed often, and its minimum
        for key, value in {"session_gap_seconds": 15,
                           "final_refresh_min_play_seconds": MIN_PLAY / speed,
                           "final_refresh_items_min_play_seconds": ITEMS_MIN_PLAY / speed,
                           "gains_board_refresh_seconds": 2,
                           "gains_board_item_min_seconds": BOARD_MIN_SECONDS}.items():
            await policy_mod.set_value(conn, key, str(value), by="test")
    with simulator(speed=speed, min_interval=0.2, session_players=1.0, play_anchor=anchor,
                   active_fraction=0.0) as sim, Fleet(db_url, sim.base_url, tmp_path, {
                       "BF4PS_BF4SW_DATABASE_URL": sw_url,
                       "BF4PS_BF4SW_SYNC_SECONDS": str(SYNC),
                       "BF4PS_SCHEDULER_TICK_SECONDS": "0.5", "BF4PS_SWEEP_SECONDS": "2",
                       "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25"}) as fleet:
        log = open(tmp_path / "bf4sw-live.log", "a")  # noqa: SIM115 - closed with the process
        live_bf4sw.append(subprocess.Popen(
            [sys.executable, "-m", "bf4ps.cli.main", "simulate", "bf4sw", "--live",
             "--soldiers", "24", "--rate", str(speed), "--tick", str(TICK),
             "--session-players", "1", "--play-anchor", str(anchor)],
            env=fleet.env(), stdout=log, stderr=subprocess.STDOUT, text=True))
        sched = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"],
                                 env=fleet.env(),
                                 stdout=open(tmp_path / "scheduler.log", "a"),  # noqa: SIM115
                                 stderr=subprocess.STDOUT, text=True)
        fleet.procs["scheduler"] = sched
        fleet.start("c1", "egress-1", "127.0.0.41")
        async with connection(db_url) as conn:
            sid = await until(conn, "SELECT soldier_id FROM soldiers WHERE persona_id = %(p)s",
                              {"p": pid}, 60)
            # collected before he plays: all four resources, before the session starts
            await until(conn, "SELECT 1 FROM collection_state WHERE soldier_id = %(s)s "
                        "GROUP BY soldier_id HAVING count(*) FILTER (WHERE status = "
                        "'current') = 4", {"s": sid}, LEAD * slow)
            assert time.time() < truth.start, "the first snapshots came too late for the test"
            # he plays about 20 minutes, leaves, and is collected after leaving: each of the
            # three resources once, for his final refresh
            await until(conn, "SELECT count(*) FROM play_sessions WHERE soldier_id = %(s)s "
                        "AND final_refresh_at IS NOT NULL", {"s": sid},
                        truth.end - time.time() + 60)
            closing = ("FROM collection_events e JOIN play_sessions p "
                       "ON p.soldier_id = e.soldier_id WHERE e.soldier_id = %(s)s "
                       "AND e.occurred_at > p.last_seen_at AND e.resource <> 'profile' ")
            await until(conn, "SELECT 1 " + closing + "AND e.event_type = 'succeeded' "
                        "HAVING count(DISTINCT e.resource) = 3", {"s": sid}, 60)
            created = await (await conn.execute(
                "SELECT e.resource, e.result " + closing + "AND e.event_type = 'created' "
                "ORDER BY e.resource", {"s": sid})).fetchall()
            assert [(r["resource"], r["result"]) for r in created] == [
                ("detailed", "final_refresh"), ("vehicles", "final_refresh"),
                ("weapons", "final_refresh")]
            # the weekly per-weapon boards the scheduler rebuilds hold his weapon gains
            await until(conn, "SELECT count(*) FROM gains_boards WHERE soldier_id = %(s)s "
                        "AND board = 'weapon_kpm'", {"s": sid}, 60)
            catalog = {r["weapon_guid"]: int(r["weapon_id"]) for r in await (
                await conn.execute("SELECT weapon_id, guid AS weapon_guid FROM weapon_catalog")
            ).fetchall()}
            items = [int(r["item_id"]) for r in await (await conn.execute(
                "SELECT DISTINCT item_id FROM gains_boards WHERE soldier_id = %s "
                "AND board = 'weapon_kpm'", [sid])).fetchall()]
        assert time.time() < truth.end + 90 * slow, "the next session may have begun"
        page, api = await read_page(db_url, platform.value, pid)
        boards = await weekly_weapon_boards(db_url, platform.value, pid, items)
    expect_truth(page, api, pid, truth, speed)
    # the kills and time the simulator added to each weapon while he played: those past the
    # board's minimum put him on that weapon's weekly board with exactly these gains
    tp = career_for(pid).time_played
    gains = weapon_gains(pid, platform.battlelog_int, (1.0, 1.0 + truth.seconds * speed / tp))
    boarded = {guid: g for guid, g in gains.items() if g[1] >= BOARD_MIN_SECONDS}
    assert boarded, gains
    assert boards == {catalog[guid]: g for guid, g in boarded.items()}


async def weekly_weapon_boards(db_url: str, platform: str, pid: int,
                               items: list[int]) -> dict[int, tuple[int, int]]:
    """Per weapon id, the soldier's (kills, seconds) on its weekly board as the API shows it
    (the boards' first page: few soldiers have one here)."""
    settings = Settings(database_url=db_url, ops_username="ops",  # type: ignore[arg-type]
                        ops_password="a-long-password-1", secret_key="sessions")
    found: dict[int, tuple[int, int]] = {}
    with serve_in_thread(create_app(settings)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=load.scaled(10)) as client:
            for item in items:
                answer = await client.get("/api/leaderboards/week", params={
                    "platform": platform, "by": "weapon", "item": item})
                assert answer.status_code == 200, answer.text
                for entry in answer.json()["entries"]:
                    if entry["persona_id"] == pid:
                        found[item] = (entry["kills"], entry["seconds"])
    return found
