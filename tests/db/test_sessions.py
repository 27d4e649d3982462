"""Play sessions in the database: a sighting extends, a new server or a gap starts anew, a read
again changes nothing; closing makes the final refresh due once (by the policy the database
holds: the minimum play per resource; not when already bracketed); the feeder gives the job its
reason; long sessions and the slow profile cadence; the last-session read model around real
history rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bf4ps import policy as policy_mod
from bf4ps.battlelog.models import DetailedStats
from bf4ps.db.connect import Conn
from bf4ps.domain import Platform
from bf4ps.policy import Policy
from bf4ps.scheduler import feeder, sessions
from bf4ps.scheduler.intake_source import Server
from bf4ps.stats.snapshot import write_detailed
from bf4ps.views import last_session as view
from bf4ps.views.soldier import Soldier, find
from tests.helpers import count, make_soldier

NOW = datetime.now(UTC).replace(microsecond=0)
POLICY = Policy(session_gap_seconds=600, final_refresh_min_play_seconds=0,
                final_refresh_items_min_play_seconds=20 * 60)
FINAL_KEYS = ("final_refresh_min_play_seconds", "final_refresh_items_min_play_seconds")
A = Server("guid-a", "Server A", NOW)
B = Server("guid-b", "Server B", NOW)


async def soldier(conn: Conn, persona_id: int, success_ago: timedelta | None = None) -> int:
    sid = await make_soldier(conn, persona_id, seen=NOW - timedelta(days=3))
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource) SELECT %s, r FROM "
        "unnest(ARRAY['detailed','profile','weapons','vehicles']) r ON CONFLICT DO NOTHING",
        [sid])
    if success_ago is not None:
        await conn.execute(
            # on the module's clock, as the sightings are (a long serial run imports it early)
            "UPDATE collection_state SET status = 'current', attempts_total = 1, "
            "last_attempt_at = %s::timestamptz - %s, last_success_at = %s::timestamptz - %s, "
            "activity_class = 'active' WHERE soldier_id = %s",
            [NOW, success_ago, NOW, success_ago, sid])
    return sid


async def close(conn: Conn, policy: Policy = POLICY) -> int:
    """Close the ended sessions under `policy`'s minimum play, stored first: the database reads
    it itself, whatever the caller passes."""
    await store(conn, policy)
    return await sessions.close(conn, NOW, policy)


async def store(conn: Conn, policy: Policy = POLICY) -> None:
    for key in FINAL_KEYS:
        await policy_mod.set_value(conn, key, str(getattr(policy, key)), by="test")


async def due(conn: Conn) -> list[tuple[object, ...]]:
    cur = await conn.execute("SELECT soldier_id, resource, due_reason FROM collection_state "
                             "WHERE status = 'due' ORDER BY soldier_id, resource")
    return [(r["soldier_id"], r["resource"], r["due_reason"]) for r in await cur.fetchall()]


async def rows(conn: Conn, sid: int) -> list[dict[str, object]]:
    cur = await conn.execute("SELECT * FROM play_sessions WHERE soldier_id = %s "
                             "ORDER BY started_at", [sid])
    return list(await cur.fetchall())


async def test_sightings_extend_restart_and_repeat_nothing(conn: Conn) -> None:
    sid = await soldier(conn, 1_700_000_001)
    at = NOW - timedelta(minutes=50)
    assert await sessions.observe(conn, [(sid, at, A)], POLICY) == 1
    assert await sessions.observe(conn, [(sid, at + timedelta(minutes=5), A)], POLICY) == 0
    assert await sessions.observe(conn, [(sid, at + timedelta(minutes=5), A)], POLICY) == 0
    assert await sessions.observe(conn, [(sid, at + timedelta(minutes=2), B)], POLICY) == 0
    one = await rows(conn, sid)
    assert [(r["server_name"], r["sightings"], r["ended_at"]) for r in one] == [
        ("Server A", 2, None)]
    # another server: the first ends at its last sighting, a new one starts
    assert await sessions.observe(conn, [(sid, at + timedelta(minutes=8), B)], POLICY) == 1
    # unseen longer than the gap (10 min), same server: a new session again
    assert await sessions.observe(conn, [(sid, at + timedelta(minutes=30), B)], POLICY) == 1
    got = await rows(conn, sid)
    assert [(r["server_guid"], r["started_at"], r["last_seen_at"]) for r in got] == [
        ("guid-a", at, at + timedelta(minutes=5)),
        ("guid-b", at + timedelta(minutes=8), at + timedelta(minutes=8)),
        ("guid-b", at + timedelta(minutes=30), at + timedelta(minutes=30))]
    assert [r["ended_at"] is not None for r in got] == [True, True, False]


async def test_closing_makes_the_final_refresh_due_once_by_policy(conn: Conn) -> None:
    played = await soldier(conn, 1_700_000_002, success_ago=timedelta(minutes=40))
    bracketed = await soldier(conn, 1_700_000_003, success_ago=timedelta(seconds=1))
    playing = await soldier(conn, 1_700_000_004, success_ago=timedelta(hours=1))
    start = NOW - timedelta(minutes=35)
    await sessions.observe(conn, [(played, start, A), (bracketed, start, A),
                                  (playing, NOW - timedelta(minutes=5), A)], POLICY)
    for minutes in (5, 10, 15, 20, 22):  # seen every few minutes (the gap is 10)
        await sessions.observe(conn, [(played, start + timedelta(minutes=minutes), A)], POLICY)
    await sessions.observe(conn, [(playing, NOW - timedelta(minutes=1), A)], POLICY)
    # the bracketed soldier was collected after his last sighting already
    assert await close(conn) == 2
    assert await close(conn) == 0  # once
    # 22 minutes of play: detailed (every session) and weapons and vehicles (20 min or more)
    assert await due(conn) == [(played, r, "final_refresh")
                               for r in ("detailed", "vehicles", "weapons")]
    # the feeder's jobs carry the reason, and so do their created events
    await feeder.replenish(conn, POLICY)
    assert await count(conn, "SELECT count(*) FROM collection_jobs WHERE soldier_id = %(s)s "
                             "AND reason = 'final_refresh'", {"s": played}) == 3
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE soldier_id = %(s)s "
                             "AND event_type = 'created' AND result = 'final_refresh'",
                       {"s": played}) == 3


async def test_the_minimum_play_decides_each_resource_whenever_he_was_collected(
        conn: Conn) -> None:
    """Soldiers collected an hour before they played (within any freshness interval): a
    session under the minimum gets nothing, one past it its closing detailed snapshot, a chain
    across servers whose play adds up past the items' minimum weapons and vehicles too. The
    database reads the minimums from the stored policy, not from its caller."""
    ago = timedelta(minutes=110)
    short, regular, chain = [await soldier(conn, 1_700_000_030 + i, success_ago=ago)
                             for i in range(3)]
    start = NOW - timedelta(minutes=50)
    for minutes in range(0, 31, 5):  # seen every 5 minutes (the gap is 10)
        at = start + timedelta(minutes=minutes)
        await sessions.observe(conn, [(chain, at, A if minutes < 20 else B)]
                               + ([(regular, at, A)] if minutes <= 20 else [])
                               + ([(short, at, A)] if minutes <= 10 else []), POLICY)
    policy = POLICY.model_copy(update={"final_refresh_min_play_seconds": 20 * 60,
                                       "final_refresh_items_min_play_seconds": 25 * 60})
    assert await close(conn, policy) == 4  # the chain's two sessions closed together
    # regular: 20 min; chain: 15 min on A and 10 on B, 25 in all; short: 10 min
    assert await due(conn) == [(regular, "detailed", "final_refresh")] + [
        (chain, r, "final_refresh") for r in ("detailed", "vehicles", "weapons")]
    # what the database read was the stored policy: a caller's other minimums change nothing
    assert await sessions.close(conn, NOW, POLICY) == 0
    assert (await policy_mod.load(conn)).final_refresh_min_play_seconds == 20 * 60


async def test_long_sessions_and_the_slow_profile_cadence(conn: Conn) -> None:
    long = await soldier(conn, 1_700_000_006, success_ago=timedelta(hours=3))
    short = await soldier(conn, 1_700_000_007, success_ago=timedelta(hours=3))
    await sessions.observe(conn, [(long, NOW - timedelta(hours=2.5), A),
                                  (short, NOW - timedelta(minutes=20), A)], POLICY)
    await conn.execute("UPDATE collection_state SET last_success_at = now() - interval "
                       "'200 days' WHERE soldier_id = %s AND resource = 'profile'", [short])
    assert await sessions.sweep(conn, POLICY) == (1, 1)
    due = await conn.execute("SELECT soldier_id, resource, due_reason FROM collection_state "
                             "WHERE status = 'due' ORDER BY soldier_id, resource")
    assert [(r["soldier_id"], r["resource"], r["due_reason"]) for r in await due.fetchall()] == [
        (long, "detailed", "active_refresh"), (short, "profile", "scheduled_profile")]
    off = POLICY.model_copy(update={"scheduled_profile_seconds": 0})
    assert await sessions.sweep(conn, off) == (0, 0)


async def test_the_last_session_between_its_snapshots(conn: Conn) -> None:
    sid = await soldier(conn, 1_700_000_008, success_ago=timedelta(hours=2))
    found = await find_soldier(conn, 1_700_000_008)
    assert (await view.last_session(conn, found)).session is None
    start = NOW - timedelta(minutes=50)
    await write_detailed(conn, sid, DetailedStats(
        kills=100, deaths=80, score=50_000, time_played_seconds=36_000),
        start - timedelta(hours=1))
    for minutes in range(0, 31, 5):  # seen every 5 minutes (the gap is 10)
        await sessions.observe(conn, [(sid, start + timedelta(minutes=minutes), A)], POLICY)
    playing = (await view.last_session(conn, found)).session
    assert playing is not None and playing.closing == "playing" and playing.gains is None
    await close(conn)
    pending = (await view.last_session(conn, found)).session
    assert pending is not None and pending.closing == "pending"
    assert pending.duration_seconds == 30 * 60 and pending.server_name == "Server A"
    await write_detailed(conn, sid, DetailedStats(kills=130, deaths=90, score=62_000,
                                                  time_played_seconds=37_800), NOW)
    await conn.execute("INSERT INTO collection_events (event_type, soldier_id, resource) "
                       "VALUES ('succeeded', %s, 'detailed')", [sid])
    done = (await view.last_session(conn, found)).session
    assert done is not None and done.closing == "collected" and done.clean
    assert done.gains is not None
    assert (done.gains.kills, done.gains.deaths, done.gains.score, done.gains.time_seconds,
            done.gains.kd, done.gains.score_per_minute) == (30, 10, 12_000, 1800, 3.0, 400.0)
    # a reset (a counter went down) is no gain
    assert done.before is not None and done.after is not None
    assert view.gains(done.after, done.before) is None


async def find_soldier(conn: Conn, persona_id: int) -> Soldier:
    found = await find(conn, Platform.PC, persona_id)
    assert found is not None
    return found


async def test_a_server_switch_is_refreshed_once_after_the_chain(conn: Conn) -> None:
    """A session ended by a move to another server gets no refresh at the switch (the soldier
    already plays on the new server, whose session the page shows): the chain's last session
    closes, one final refresh brackets both, and the last session's report says it includes
    the earlier one, with the whole chain's gains."""
    sid = await soldier(conn, 1_700_000_009, success_ago=timedelta(hours=2))
    found = await find_soldier(conn, 1_700_000_009)
    start = NOW - timedelta(minutes=50)
    await write_detailed(conn, sid, DetailedStats(
        kills=100, deaths=80, score=50_000, time_played_seconds=36_000),
        start - timedelta(hours=1))
    for minutes, server in ((0, A), (5, A), (10, A), (13, B), (18, B), (23, B)):
        await sessions.observe(conn, [(sid, start + timedelta(minutes=minutes), server)],
                               POLICY)
    # on server B now: server A's session is over, but nothing is made due
    await store(conn)
    assert await sessions.close(conn, start + timedelta(minutes=25), POLICY) == 0
    assert await count(conn, "SELECT count(*) FROM collection_state WHERE soldier_id = %(s)s "
                             "AND status = 'due'", {"s": sid}) == 0
    playing = (await view.last_session(conn, found)).session
    assert playing is not None and playing.closing == "playing"
    assert playing.server_name == "Server B"
    # off every server: the chain's two sessions are considered, one refresh per resource
    # (20 minutes of play in all: weapons and vehicles too)
    assert await close(conn) == 2
    assert await close(conn) == 0
    due = await conn.execute("SELECT resource, due_reason FROM collection_state "
                             "WHERE soldier_id = %s AND status = 'due' ORDER BY resource", [sid])
    assert [(r["resource"], r["due_reason"]) for r in await due.fetchall()] == [
        ("detailed", "final_refresh"), ("vehicles", "final_refresh"),
        ("weapons", "final_refresh")]
    await write_detailed(conn, sid, DetailedStats(kills=140, deaths=95, score=66_000,
                                                  time_played_seconds=37_500), NOW)
    await conn.execute("INSERT INTO collection_events (event_type, soldier_id, resource) "
                       "VALUES ('succeeded', %s, 'detailed')", [sid])
    done = (await view.last_session(conn, found)).session
    assert done is not None and done.server_name == "Server B"
    assert done.closing == "collected" and done.earlier_sessions == 1 and not done.clean
    assert done.before is not None and done.before.collected_at == start - timedelta(hours=1)
    assert done.gains is not None
    assert (done.gains.kills, done.gains.deaths, done.gains.score,
            done.gains.time_seconds) == (40, 15, 16_000, 1500)


async def test_no_page_says_the_closing_snapshot_is_pending_unless_it_is_queued(
        conn: Conn) -> None:
    """An ended session whose final refresh the policy skipped (shorter than the minimum
    play) is "unscheduled", not "pending"; one whose refresh is due is "pending"."""
    sid = await soldier(conn, 1_700_000_020, success_ago=timedelta(hours=2))
    found = await find_soldier(conn, 1_700_000_020)
    start = NOW - timedelta(minutes=50)
    for minutes in range(0, 31, 5):
        await sessions.observe(conn, [(sid, start + timedelta(minutes=minutes), A)], POLICY)
    shipped = Policy()  # the shipped minimum: 2 h of play, he played 30 min
    await close(conn, POLICY.model_copy(update={k: getattr(shipped, k) for k in FINAL_KEYS}))
    assert await count(conn, "SELECT count(*) FROM collection_jobs WHERE soldier_id = %(s)s "
                             "AND resource = 'detailed'", {"s": sid}) == 0
    skipped = (await view.last_session(conn, found)).session
    assert skipped is not None and skipped.closing == "unscheduled"
    await conn.execute("UPDATE collection_state SET status = 'due', due_reason = "
                       "'final_refresh', eligible_since = now() WHERE soldier_id = %s "
                       "AND resource = 'detailed'", [sid])
    queued = (await view.last_session(conn, found)).session
    assert queued is not None and queued.closing == "pending"
