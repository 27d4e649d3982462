"""Play sessions over the real process chain: the BF4SW simulator (`simulate bf4sw --live`)
sights a soldier on a server while his scheduled session is on; the scheduler's intake keeps
the session, closes it when he is unseen for the gap and makes its final refresh due; a real
collector collects it from the Battlelog simulator; the soldier page's "last session" then
equals the simulator's truth: server, duration (within the intake's observation granularity)
and the gains (the counters Battlelog served at the two snapshots, from the same schedule)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bf4ps import policy as policy_mod
from bf4ps.db import migrate
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import bf4sw_platform
from bf4ps.settings import Settings
from bf4ps.sim import play
from bf4ps.sim.battlelog.career import career_for
from bf4ps.sim.battlelog.snapshot import take
from bf4ps.sim.bf4sw import population
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread
from tests import load
from tests.db.test_bf4sw_intake import sw, sw_name, sw_url  # noqa: F401 - fixtures
from tests.fleet import Fleet, simulator
from tests.helpers import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]  # a minute or more: run first

SPEED = 60.0  # simulated seconds per real second: a 15-60 min session takes 15-60 s
SYNC = 1.0  # BF4PS_BF4SW_SYNC_SECONDS: reconciliation every 5 s
TICK = 1.0  # the BF4SW simulator's sightings
GRANULARITY = 5 * SYNC + TICK  # how well the intake can know a start or an end
LEAD = 5.0  # real seconds (x the load factor) from the snapshot before to the session's
# start, for the live BF4SW simulator to start: the schedule is anchored only once that
# snapshot is stored, so no lead is waited out beyond what the chain took
UNPLAYED = 10 * 365 * 86_400.0  # an anchor this far ahead: nobody has played yet
NEXT = 150.0  # real seconds at least from the session's end to his next: the final refresh
# and the page's reading happen between them (the test says so when a busy machine took longer)
# The world runs at SPEED whatever the load: every tolerance below is in real seconds (the
# intake's granularity, the gap), which a slower world would not widen; a busy machine only
# waits longer for each step (the deadlines scale).


def pick(personas: list[int]) -> tuple[int, int]:
    """A persona and the cycle of his first session: one no longer than 40 s whose next
    session is at least NEXT s after it ends."""
    probe = play.Schedule(speed=SPEED, anchor=0.0, players=1.0)
    for pid in personas:
        first = next((k for k in range(play.PERIOD) if probe.session(pid, k)), None)
        if first is None:
            continue
        session, following = probe.session(pid, first), probe.session(pid, first + 1)
        assert session is not None
        if session.end - session.start <= 40 and (
                following is None or following.start - session.end >= NEXT):
            return pid, first
    raise AssertionError("no persona with a suitable schedule")


def anchored(pid: int, cycle: int, lead: float) -> tuple[float, play.PlaySession, float]:
    """The anchor that starts the persona's session of `cycle` `lead` s from now (no session
    before it: `pick` took his first), that session, and when his next one starts."""
    probe = play.Schedule(speed=SPEED, anchor=0.0, players=1.0).session(pid, cycle)
    assert probe is not None
    anchor = time.time() + lead - probe.start
    schedule = play.Schedule(speed=SPEED, anchor=anchor, players=1.0)
    session, following = schedule.session(pid, cycle), schedule.session(pid, cycle + 1)
    assert session is not None
    return anchor, session, following.start if following else float("inf")


@pytest.fixture
def live_bf4sw(sw_url: str) -> Iterator[list[subprocess.Popen[str]]]:  # noqa: F811
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        p.terminate()
        p.wait(20)


async def until(conn: Conn, sql: str, params: dict[str, object], timeout: float) -> int:
    return await wait_for(conn, sql, params, timeout=timeout, poll=0.5)


async def test_a_session_is_closed_by_a_final_refresh_and_its_page_tells_the_truth(
        db_url: str, sw: Conn, sw_url: str, tmp_path: Path,  # noqa: F811
        live_bf4sw: list[subprocess.Popen[str]]) -> None:
    await population.fill(sw, 8, seed=11)
    rows = await (await sw.execute(
        "SELECT DISTINCT platform, persona_id FROM bf4_player_aliases "
        "WHERE last_seen < now() - interval '1 hour' ORDER BY persona_id")).fetchall()
    raw = {int(r["persona_id"]): str(r["platform"]) for r in rows}
    pid, cycle = pick(sorted(raw))
    platform = bf4sw_platform(raw[pid])
    assert platform is not None
    async with connection(db_url) as conn:
        await migrate.upgrade(db_url)
        for key, value in {"session_gap_seconds": "15",
                           "final_refresh_min_play_seconds": "0"}.items():
            await policy_mod.set_value(conn, key, value, by="test")
    # nobody plays until the snapshot before is stored: then the schedule is anchored
    with simulator(speed=SPEED, min_interval=0.2, session_players=1.0,
                   play_anchor=time.time() + UNPLAYED, active_fraction=0.0) as sim, Fleet(
                       db_url, sim.base_url, tmp_path, {
                       "BF4PS_BF4SW_DATABASE_URL": sw_url,
                       "BF4PS_BF4SW_SYNC_SECONDS": str(SYNC),
                       "BF4PS_SCHEDULER_TICK_SECONDS": "0.5", "BF4PS_SWEEP_SECONDS": "2",
                       "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25"}) as fleet:
        sched = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"],
                                 env=fleet.env(),
                                 stdout=open(tmp_path / "scheduler.log", "a"),  # noqa: SIM115
                                 stderr=subprocess.STDOUT, text=True)
        fleet.procs["scheduler"] = sched
        fleet.start("c1", "egress-1", "127.0.0.41")
        async with connection(db_url) as conn:
            sid = await until(conn, "SELECT soldier_id FROM soldiers WHERE persona_id = %(p)s",
                              {"p": pid}, 60)
            # the snapshot before: collected before anybody plays
            await until(conn, "SELECT count(*) FROM detailed_stats_history "
                        "WHERE soldier_id = %(s)s", {"s": sid}, 60)
            anchor, truth, following = anchored(pid, cycle, LEAD * load.slowdown())
            httpx.post(sim.url("/__sim/config"), json={"play_anchor": anchor},
                       timeout=load.scaled(10)).raise_for_status()
            live = tmp_path / "bf4sw-live.log"
            log = open(live, "a")  # noqa: SIM115 - closed with the process
            live_bf4sw.append(subprocess.Popen(
                [sys.executable, "-m", "bf4ps.cli.main", "simulate", "bf4sw", "--live",
                 "--soldiers", "8", "--rate", str(SPEED), "--tick", str(TICK),
                 "--session-players", "1", "--play-anchor", str(anchor)],
                env=fleet.env(), stdout=log, stderr=subprocess.STDOUT, text=True))
            ready = load.deadline(LEAD)
            while "table already populated" not in live.read_text():
                assert not ready.expired(), live.read_text()
                await asyncio.sleep(0.2)
            assert time.time() < truth.start, "the live BF4SW came up after the session began"
            # he plays, leaves, and is collected after leaving, for his final refresh
            await until(conn, "SELECT count(*) FROM play_sessions WHERE soldier_id = %(s)s "
                        "AND final_refresh_at IS NOT NULL", {"s": sid},
                        truth.end - time.time() + 60)
            await until(conn, "SELECT count(*) FROM collection_events e JOIN play_sessions p "
                        "ON p.soldier_id = e.soldier_id WHERE e.soldier_id = %(s)s "
                        "AND e.resource = 'detailed' AND e.event_type = 'succeeded' "
                        "AND e.occurred_at > p.last_seen_at", {"s": sid}, 60)
            reasons = await (await conn.execute(
                "SELECT e.result FROM collection_events e JOIN play_sessions p "
                "ON p.soldier_id = e.soldier_id WHERE e.soldier_id = %s AND e.event_type = "
                "'created' AND e.resource = 'detailed' AND e.occurred_at > p.last_seen_at",
                [sid])).fetchall()
            assert [r["result"] for r in reasons] == ["final_refresh"]
        assert time.time() < following, "his next session began before the page was read"
        page, api = await read_page(db_url, platform.value, pid)
    expect_truth(page, api, pid, truth, SPEED)


async def read_page(db_url: str, platform: str, pid: int) -> tuple[str, dict[str, object]]:
    settings = Settings(database_url=db_url, ops_username="ops",  # type: ignore[arg-type]
                        ops_password="a-long-password-1", secret_key="sessions")
    with serve_in_thread(create_app(settings)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=load.scaled(10)) as client:
            page = await client.get(f"/soldiers/{platform}/{pid}")
            api = await client.get(f"/api/soldiers/{platform}/{pid}/last-session")
            schema = await client.get("/openapi.json")
    assert page.status_code == 200 and api.status_code == 200
    assert "/api/soldiers/{platform}/{persona_id}/last-session" in schema.json()["paths"]
    return page.text, api.json()


def expect_truth(page: str, api: dict[str, object], pid: int, truth: play.PlaySession,
                 speed: float) -> None:
    session = api["session"]
    assert isinstance(session, dict) and session["closing"] == "collected"
    assert session["server_name"] == truth.server_name
    assert session["server_guid"] == truth.server_guid
    assert abs(session["duration_seconds"] - truth.seconds) <= 2 * GRANULARITY, session
    assert session["clean"] and not session["before_in_session"]
    # the counters Battlelog served before (nothing played yet) and after (the session)
    tp = career_for(pid).time_played
    before, after = take(pid, 1.0), take(pid, 1.0 + truth.seconds * speed / tp)
    want = {k: round(getattr(after, a)) - round(getattr(before, a)) for k, a in (
        ("kills", "kills"), ("deaths", "deaths"), ("score", "score"),
        ("time_seconds", "time_played"))}
    assert want["kills"] > 0 and want["time_seconds"] > 0
    assert {k: session["gains"][k] for k in want} == want  # type: ignore[index]
    # the page shows the same
    assert re.search(r'id="last-session-server">([^<]*)<', page)[1] == (  # type: ignore[index]
        truth.server_name.replace("&", "&amp;").replace("'", "&#39;"))
    shown = dict(re.findall(r"<dt>(Kills|Deaths|Score)</dt><dd data-value=\"(-?\d+)\"", page))
    assert {k.lower(): int(v) for k, v in shown.items()} == {
        k: want[k] for k in ("kills", "deaths", "score")}
