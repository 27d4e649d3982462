"""BF4SW intake against a simulated BF4SW in its own database: exact import, materialization,
idempotence and kill safety, reconciliation on the source's clock, and the simulator's shape."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from bf4ps.cli.bf4sw import group as bf4sw_group
from bf4ps.cli.bf4sw import simulate_bf4sw
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import Platform, PriorityClass, bf4sw_platform
from bf4ps.policy import Policy
from bf4ps.scheduler import activity, intake, intake_store
from bf4ps.scheduler.intake import sync_once
from bf4ps.scheduler.intake_loop import scheduler_intake
from bf4ps.scheduler.intake_source import Identity, source_connection
from bf4ps.settings import Settings
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.sim.bf4sw import live, population
from bf4ps.sim.personas import persona_id_for
from tests import load
from tests.conftest import REPO, create_database, drop_database
from tests.helpers import count, wait_for

# the existing deployment's refresh (detailed 24 h, the rest 7 d): the cases below are written
# against those intervals, whatever the shipped defaults
POLICY = Policy(freshness_detailed_seconds=86_400, freshness_profile_seconds=604_800,
                freshness_weapons_seconds=604_800, freshness_vehicles_seconds=604_800)
DAY = timedelta(days=1)
RAW_STRINGS = {"PC", "PS4", "PS5", "XBox", "XBoxOne", "XBoxSeries"}


@pytest.fixture
def sw_name(pg_server_url: str) -> Iterator[str]:
    name = f"bf4sw_{uuid.uuid4().hex[:12]}"
    create_database(pg_server_url, name)
    yield name
    drop_database(pg_server_url, name)


@pytest.fixture
def sw_url(pg_server_url: str, sw_name: str) -> str:
    from bf4ps.db.connect import with_dbname

    return with_dbname(pg_server_url, sw_name)


@pytest.fixture
async def sw(sw_url: str) -> AsyncIterator[Conn]:
    """BF4SW's writer side (the simulator)."""
    async with connection(sw_url) as c:
        yield c


@pytest.fixture
async def src(sw_url: str) -> AsyncIterator[Conn]:
    """The intake's read-only side."""
    async with source_connection(sw_url) as c:
        yield c


# ---------------------------------------------------------------- the oracle


@dataclass
class Truth:
    first_id: int
    first_seen: datetime
    last_seen: datetime
    current: tuple[datetime, int, str]
    names: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)


async def source_truth(sw: Conn) -> dict[tuple[int, str], Truth]:
    """What BF4PS must hold, folded from BF4SW's rows independently of the intake's code."""
    cur = await sw.execute("SELECT * FROM bf4_player_aliases ORDER BY id")
    out: dict[tuple[int, str], Truth] = {}
    for r in await cur.fetchall():
        platform = bf4sw_platform(str(r["platform"]))
        assert platform is not None
        key = (int(str(r["persona_id"])), platform.value)
        fs, ls, name, rid = r["first_seen"], r["last_seen"], str(r["player_name"]), r["id"]
        t = out.setdefault(key, Truth(rid, fs, ls, (ls, rid, name)))  # type: ignore[arg-type]
        t.first_seen, t.last_seen = min(t.first_seen, fs), max(t.last_seen, ls)  # type: ignore
        t.current = max(t.current, (ls, rid, name))  # type: ignore[arg-type]
        old = t.names.get(name)
        t.names[name] = (min(old[0], fs), max(old[1], ls)) if old else (fs, ls)  # type: ignore
    return out


async def rows(conn: Conn, sql: str, params: Any = None) -> list[dict[str, Any]]:
    cur = await conn.execute(sql, params)
    return [dict(r) for r in await cur.fetchall()]


async def source_now(sw: Conn) -> datetime:
    return (await rows(sw, "SELECT clock_timestamp() AS now"))[0]["now"]  # type: ignore[no-any-return]


def expected_class(last_seen: datetime, now: datetime) -> PriorityClass | None:
    """None when within a minute of a window edge (the sync's clock ran a little earlier)."""
    age = (now - last_seen).total_seconds()
    for edge in (POLICY.active_window_seconds, POLICY.recent_window_seconds):
        if abs(age - edge) < 60:
            return None
    if age <= POLICY.active_window_seconds:
        return PriorityClass.ACTIVE
    return PriorityClass.RECENT if age <= POLICY.recent_window_seconds else PriorityClass.BOOTSTRAP


async def assert_exact(conn: Conn, sw: Conn) -> dict[tuple[int, str], Truth]:
    truth = await source_truth(sw)
    soldiers = {(s["persona_id"], s["platform"]): s
                for s in await rows(conn, "SELECT * FROM soldiers")}
    assert set(soldiers) == set(truth)
    names: dict[int, dict[str, tuple[datetime, datetime]]] = {}
    for n in await rows(conn, "SELECT * FROM soldier_names"):
        names.setdefault(n["soldier_id"], {})[n["name"]] = (n["first_seen_at"], n["last_seen_at"])
    sources = {s["soldier_id"]: s for s in await rows(
        conn, "SELECT * FROM soldier_sources WHERE source_type = 'bf4sw'")}
    for key, t in truth.items():
        s = soldiers[key]
        assert (s["current_name"], s["first_seen_at"], s["last_seen_at"]) == (
            t.current[2], t.first_seen, t.last_seen), key
        assert names[s["soldier_id"]] == t.names, key
        src_row = sources[s["soldier_id"]]
        assert (src_row["first_seen_at"], src_row["last_seen_at"]) == (t.first_seen, t.last_seen)
    assert len(sources) == len(truth)
    return truth


# ---------------------------------------------------------------- the simulator


async def test_simulated_population_has_the_real_shape(sw: Conn) -> None:
    assert await population.fill(sw, 3000, seed=3) > 3000
    assert await population.fill(sw, 3000, seed=3) == 0  # populated: left alone
    truth = await source_truth(sw)
    now = await source_now(sw)
    assert len(truth) == 3000
    split = Counter(platform for _, platform in truth)
    for platform, share in (("pc", 0.65), ("ps4", 0.17), ("xboxone", 0.18)):
        assert abs(split[platform] / 3000 - share) <= 0.02
    for hours, share in ((1, 0.02), (24, 0.13), (24 * 7, 0.39), (24 * 30, 0.81)):
        seen = sum(1 for t in truth.values() if now - t.last_seen < timedelta(hours=hours))
        assert abs(seen / 3000 - share) <= 0.02, hours
    assert min(t.last_seen for t in truth.values()) > now - timedelta(days=731)
    renamed = Counter(len(t.names) for t in truth.values())
    assert 0.01 <= (renamed[2] + renamed[3]) / 3000 <= 0.06 and renamed[3] > 0
    raw = await rows(sw, "SELECT * FROM bf4_player_aliases ORDER BY id")
    assert {r["platform"] for r in raw} <= RAW_STRINGS
    assert all(a["first_seen"] <= b["first_seen"] for a, b in pairwise(raw))  # id order
    first_names = {}
    for r in raw:
        first_names.setdefault((r["persona_id"], bf4sw_platform(r["platform"])), r["player_name"])
    for (persona, platform), name in first_names.items():
        assert persona == persona_id_for(name, platform)  # type: ignore[arg-type]
        assert platform in name_platforms(name)  # the Battlelog simulator's search finds it
    owners: dict[tuple[Any, str], set[int]] = {}
    for r in raw:
        key = (bf4sw_platform(r["platform"]), r["player_name"].casefold())
        owners.setdefault(key, set()).add(r["persona_id"])
    assert all(len(p) == 1 for p in owners.values())  # one persona per name and platform
    census = await population.census(sw)  # per platform string, what `simulate bf4sw` prints
    assert {c.platform for c in census} == {r["platform"] for r in raw}
    assert sum(c.aliases for c in census) == len(raw)
    for c in census:
        assert c.seen_1h <= c.seen_24h <= c.seen_7d <= c.seen_30d <= c.personas <= c.aliases
        assert 0 <= c.renamed < c.personas


def test_generation_is_deterministic() -> None:
    anchor = datetime(2026, 11, 1, tzinfo=UTC)
    a, b = population.generate(300, 9, anchor), population.generate(300, 9, anchor)
    assert a == b
    assert population.generate(300, 10, anchor) != a
# ---------------------------------------------------------------- discovery


async def test_import_is_exact_with_one_detailed_job_per_soldier(conn: Conn, sw: Conn,
                                                                 src: Conn) -> None:
    await population.fill(sw, 3000, seed=11)
    report = await sync_once(conn, src, POLICY)
    now = await source_now(sw)
    truth = await assert_exact(conn, sw)
    n = len(truth)
    aliases = await count(sw, "SELECT count(*) FROM bf4_player_aliases")
    assert (report.soldiers_new, report.aliases_new, report.batches) == (n, aliases, 4)
    assert report.cursor == await count(sw, "SELECT max(id) FROM bf4_player_aliases")
    assert report.reconciled and report.watermark is not None
    assert await count(conn, "SELECT count(*) FROM collection_state") == 4 * n
    assert await count(conn, "SELECT count(*) FROM collection_state "
                             "WHERE status <> 'never_attempted'") == 0
    jobs = await rows(conn, "SELECT j.*, s.persona_id, s.platform FROM collection_jobs j "
                            "JOIN soldiers s USING (soldier_id)")
    assert len(jobs) == n and report.jobs_created == n
    assert {(j["resource"], j["lane"], j["reason"], j["status"]) for j in jobs} == {
        ("detailed", "background", "bf4sw_discovery", "pending")}
    for j in jobs:
        want = expected_class(truth[(j["persona_id"], j["platform"])].last_seen, now)
        assert want is None or j["priority_class"] == want.value
    split = Counter(j["priority_class"] for j in jobs)
    assert split == Counter(report.created_by_class)
    assert abs(split["active"] / n - 0.13) < 0.02 and abs(split["recent"] / n - 0.26) < 0.02
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'created'") == n
    # the feeder's view of activity agrees (it classifies on BF4PS's clock: same server here)
    assert await count(conn, "SELECT count(*) FROM collection_state WHERE activity_at IS NULL") == 0
    assert await count(conn, "SELECT count(*) FROM collection_state cs JOIN collection_jobs j "
                             "USING (soldier_id, resource) "
                             "WHERE cs.activity_class <> j.priority_class") <= 2
    # FIFO by discovery order inside a class: claim order follows BF4SW's first alias ids
    boot = sorted((j for j in jobs if j["priority_class"] == "bootstrap"),
                  key=lambda j: (j["rank"], j["job_id"]))
    firsts = [truth[(j["persona_id"], j["platform"])].first_id for j in boot]
    assert firsts == sorted(firsts)


async def test_rerun_adds_nothing_and_the_cursor_persists(conn: Conn, sw: Conn,
                                                          src: Conn) -> None:
    await population.fill(sw, 1500, seed=12)
    first = await sync_once(conn, src, POLICY, batch_size=400)
    before = {t: await count(conn, f"SELECT count(*) FROM {t}") for t in (
        "soldiers", "soldier_names", "soldier_sources", "collection_jobs", "collection_events",
        "collection_state")}
    again = await sync_once(conn, src, POLICY, batch_size=400, reconcile_every=0)
    assert (again.aliases_new, again.soldiers_new, again.jobs_created, again.jobs_promoted,
            again.marked_due, again.batches) == (0, 0, 0, 0, 0, 0)
    assert again.reconciled and again.soldiers_updated > 0  # the last 24 h re-read, unchanged
    after = {t: await count(conn, f"SELECT count(*) FROM {t}") for t in before}
    assert after == before
    cursor = await rows(conn, "SELECT * FROM intake_state ORDER BY source_name")
    assert [c["source_name"] for c in cursor] == ["bf4sw", "bf4sw_reconcile"]
    assert cursor[0]["last_alias_id"] == first.cursor == again.cursor
    assert cursor[1]["reconcile_watermark"] == again.watermark
    await assert_exact(conn, sw)


async def test_a_crash_mid_import_repeats_the_batch_not_more(
        conn: Conn, sw: Conn, src: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    await population.fill(sw, 1200, seed=13)
    real, calls = intake.materialize, 0

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("killed mid-batch")
        return await real(*args, **kwargs)

    monkeypatch.setattr(intake, "materialize", flaky)
    with pytest.raises(RuntimeError):
        await sync_once(conn, src, POLICY, batch_size=500)
    state = await rows(conn, "SELECT last_alias_id FROM intake_state WHERE source_name = 'bf4sw'")
    assert state[0]["last_alias_id"] == await count(
        sw, "SELECT id FROM bf4_player_aliases ORDER BY id OFFSET 499 LIMIT 1")
    assert 0 < await count(conn, "SELECT count(*) FROM soldiers") <= 500
    monkeypatch.setattr(intake, "materialize", real)
    await sync_once(conn, src, POLICY, batch_size=500)
    truth = await assert_exact(conn, sw)
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == len(truth)
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'created'") == len(truth)


async def test_a_busy_importer_makes_the_tick_skip(conn: Conn, db_url: str, sw: Conn,
                                                   src: Conn) -> None:
    await population.fill(sw, 50, seed=14)
    async with connection(db_url) as other:
        await other.execute("SELECT pg_advisory_lock(hashtext('bf4ps:bf4sw-intake'))")
        report = await sync_once(conn, src, POLICY)
        assert report.busy and report.soldiers_new == 0 and not report.reconciled
        # released here: a closed connection's backend lets its locks go only once it has
        # exited, a moment after the client closed it
        await other.execute("SELECT pg_advisory_unlock(hashtext('bf4ps:bf4sw-intake'))")
    assert (await sync_once(conn, src, POLICY)).soldiers_new == 50


async def test_the_source_is_read_only_and_odd_rows_are_skipped(conn: Conn, sw: Conn,
                                                                src: Conn) -> None:
    await population.ensure_table(sw)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        await src.execute("INSERT INTO bf4_player_aliases (platform, persona_id, player_name) "
                          "VALUES ('PC', 1, 'x')")
    await sw.execute("INSERT INTO bf4_player_aliases (platform, persona_id, player_name) VALUES "
                     "('Stadia', 5, 'Cloudy'), ('PC', 6, '   '), ('pc', 7, 'Lower'), "
                     "('XBoxOne', 8, 'Box'), ('XBox', 8, 'Box')")
    # a laxer BF4SW: missing or inverted times are repaired, not fatal to the batch
    await sw.execute("ALTER TABLE bf4_player_aliases DROP CONSTRAINT "
                     "bf4_player_aliases_seen_order, ALTER first_seen DROP NOT NULL, "
                     "ALTER last_seen DROP NOT NULL")
    await sw.execute("INSERT INTO bf4_player_aliases (platform, persona_id, player_name, "
                     "first_seen, last_seen) VALUES ('PS4', 9, 'Flipped', now(), "
                     "now() - interval '1 day'), ('PS4', 10, 'Timeless', NULL, NULL), "
                     "('PS4', 11, 'HalfTimed', NULL, now())")
    report = await sync_once(conn, src, POLICY, reconcile_every=None)
    assert (report.aliases_new, report.aliases_skipped, report.soldiers_new) == (8, 3, 4)
    assert report.cursor == 8
    names = {(r["persona_id"], r["platform"], r["current_name"]) for r in await rows(
        conn, "SELECT * FROM soldiers")}
    assert names == {(7, "pc", "Lower"), (8, "xboxone", "Box"),  # two strings, one soldier
                     (9, "ps4", "Flipped"), (11, "ps4", "HalfTimed")}


# ---------------------------------------------------------------- activity


async def pick(conn: Conn, klass: str, n: int = 1, offset: int = 0) -> list[dict[str, Any]]:
    return await rows(conn, "SELECT s.*, j.job_id FROM soldiers s JOIN collection_jobs j "
                            "USING (soldier_id) WHERE j.priority_class = %s "
                            "ORDER BY s.soldier_id LIMIT %s OFFSET %s", [klass, n, offset])


async def sight(sw: Conn, persona_id: int, at: str = "clock_timestamp()") -> None:
    """BF4SW sees the persona now (its current alias's last_seen moves)."""
    await sw.execute(f"UPDATE bf4_player_aliases SET last_seen = {at} WHERE id = ("  # type: ignore[arg-type]
                     "SELECT id FROM bf4_player_aliases WHERE persona_id = %s "
                     "ORDER BY last_seen DESC, id DESC LIMIT 1)", [persona_id])


async def collected(conn: Conn, soldier_id: int, resource: str, age: timedelta) -> None:
    """As if a collector had succeeded `age` ago (and finalized the job away)."""
    await conn.execute("DELETE FROM collection_jobs WHERE soldier_id = %s AND resource = %s",
                       [soldier_id, resource])
    await conn.execute("UPDATE collection_state SET status = 'current', last_attempt_at = "
                       "now() - %s, last_success_at = now() - %s, attempts_total = 1 "
                       "WHERE soldier_id = %s AND resource = %s",
                       [age, age, soldier_id, resource])


async def state(conn: Conn, soldier_id: int, resource: str) -> dict[str, Any]:
    return (await rows(conn, "SELECT * FROM collection_state WHERE soldier_id = %s AND "
                             "resource = %s", [soldier_id, resource]))[0]


async def test_sightings_elevate_soldiers_and_renames_keep_history(conn: Conn, sw: Conn,
                                                                   src: Conn) -> None:
    await population.fill(sw, 2000, seed=21)
    await sync_once(conn, src, POLICY)
    boot, stale, fresh = await pick(conn, "bootstrap", 3)
    recent = (await pick(conn, "recent"))[0]
    renamed = (await pick(conn, "bootstrap", 1, offset=3))[0]
    await collected(conn, stale["soldier_id"], "detailed", 2 * DAY)  # stale: 24 h freshness
    await collected(conn, stale["soldier_id"], "weapons", DAY)  # fresh: 7 d freshness
    await collected(conn, fresh["soldier_id"], "detailed", timedelta(hours=1))
    for s in (boot, stale, fresh, recent):
        await sight(sw, s["persona_id"])
    await sw.execute("INSERT INTO bf4_player_aliases (platform, persona_id, player_name) VALUES "
                     "(%s, %s, 'BrandNewName'), ('PS5', 4242424242, 'FreshRecruit')",
                     [(await rows(sw, "SELECT platform FROM bf4_player_aliases WHERE "
                                      "persona_id = %s", [renamed["persona_id"]]))[0]["platform"],
                      renamed["persona_id"]])
    report = await sync_once(conn, src, POLICY, reconcile_every=0)
    # the stale soldier is on a server now: his stale detailed waits for the session's end
    assert (report.soldiers_new, report.jobs_created, report.marked_due) == (1, 1, 0)
    assert report.sessions_opened == 6 and report.sessions_closed == 0
    assert (await state(conn, stale["soldier_id"], "detailed"))["status"] == "current"
    assert await activity.mark_due(conn, 60.0) == 0  # nor does the due sweep take it meanwhile
    await conn.execute("UPDATE play_sessions SET ended_at = now() WHERE soldier_id = %s",
                       [stale["soldier_id"]])  # he left (due a day after that success)
    await conn.execute("UPDATE collection_state SET next_due_at = last_success_at + interval "
                       "'1 day' WHERE soldier_id = %s AND resource = 'detailed'",
                       [stale["soldier_id"]])
    assert await activity.mark_due(conn, 60.0) == 1
    assert report.jobs_promoted == 3  # boot, recent, renamed (stale/fresh have no job left)
    jobs = {j["soldier_id"]: j for j in await rows(conn, "SELECT * FROM collection_jobs")}
    for s in (boot, recent, renamed):
        job = jobs[s["soldier_id"]]
        assert (job["priority_class"], job["reason"]) == ("active", "bf4sw_discovery")
        assert await rows(conn, "SELECT event_type, details->>'from_class' AS was FROM "
                                "collection_events WHERE job_id = %s AND event_type = "
                                "'promoted'", [job["job_id"]])
    assert stale["soldier_id"] not in jobs and fresh["soldier_id"] not in jobs  # feeder's work
    due = await state(conn, stale["soldier_id"], "detailed")
    assert due["status"] == "due" and due["due_reason"] is None  # active_refresh
    assert (await state(conn, stale["soldier_id"], "weapons"))["status"] == "current"
    assert (await state(conn, boot["soldier_id"], "weapons"))["activity_class"] == "active"
    assert (await state(conn, fresh["soldier_id"], "detailed"))["status"] == "current"
    newcomer = (await rows(conn, "SELECT s.*, j.priority_class FROM soldiers s JOIN "
                                 "collection_jobs j USING (soldier_id) WHERE persona_id = "
                                 "4242424242"))[0]
    assert (newcomer["platform"], newcomer["priority_class"]) == ("ps4", "active")
    after = (await rows(conn, "SELECT * FROM soldiers WHERE soldier_id = %s",
                        [renamed["soldier_id"]]))[0]
    assert after["current_name"] == "BrandNewName"
    history = {r["name"] for r in await rows(conn, "SELECT name FROM soldier_names WHERE "
                                                   "soldier_id = %s", [renamed["soldier_id"]])}
    assert {"BrandNewName", renamed["current_name"]} <= history
    await assert_exact(conn, sw)


async def test_without_bootstrap_jobs_activity_still_queues_the_first_job(
        conn: Conn, sw: Conn, src: Conn) -> None:
    await population.fill(sw, 1000, seed=22)
    options = intake.Options(bootstrap_jobs=False)
    report = await sync_once(conn, src, POLICY, options=options)
    assert "bootstrap" not in report.created_by_class and report.jobs_created < 500
    idle = (await rows(conn, "SELECT s.* FROM soldiers s WHERE NOT EXISTS (SELECT 1 FROM "
                             "collection_jobs j WHERE j.soldier_id = s.soldier_id) "
                             "ORDER BY soldier_id LIMIT 1"))[0]
    first = await state(conn, idle["soldier_id"], "detailed")
    assert first["status"] == "never_attempted"  # the feeder's, FIFO by import time
    await sight(sw, idle["persona_id"])
    again = await sync_once(conn, src, POLICY, reconcile_every=0, options=options)
    assert again.created_by_class == {"active": 1}
    job = (await rows(conn, "SELECT * FROM collection_jobs WHERE soldier_id = %s",
                      [idle["soldier_id"]]))[0]
    assert (job["resource"], job["priority_class"]) == ("detailed", "active")


async def test_reconciliation_runs_on_the_source_clock(conn: Conn, sw_name: str, sw_url: str,
                                                       pg_server_url: str) -> None:
    """BF4SW's clock runs 3 h ahead of BF4PS's: the watermark, the first 24 h window and the
    activity classes all follow BF4SW's."""
    async with connection(sw_url) as admin:
        await admin.execute("CREATE SCHEMA skew")
        await admin.execute("CREATE FUNCTION skew.clock_timestamp() RETURNS timestamptz "
                            "LANGUAGE sql AS $$ SELECT pg_catalog.clock_timestamp() "
                            "+ interval '3 hours' $$")
        await admin.execute(f"ALTER DATABASE {sw_name} "  # type: ignore[arg-type]
                            "SET search_path = skew, pg_catalog, public")
    async with connection(sw_url) as sw, source_connection(sw_url) as src:
        await population.fill(sw, 1500, seed=31)
        skewed = await source_now(sw)
        assert skewed - datetime.now(UTC) > timedelta(hours=2, minutes=59)
        report = await sync_once(conn, src, POLICY)
        assert report.watermark is not None and report.watermark >= skewed
        truth = await source_truth(sw)
        active = sum(1 for t in truth.values() if skewed - t.last_seen <= DAY)
        jobs = Counter(r["priority_class"] for r in await rows(conn, "SELECT * FROM "
                                                                     "collection_jobs"))
        assert abs(jobs["active"] - active) <= 1
        # a sighting stamped inside the overlap is re-read, one before it is not
        inside, outside = await pick(conn, "bootstrap", 2)
        wm = report.watermark
        await sight(sw, inside["persona_id"], f"'{wm - timedelta(minutes=10)}'::timestamptz")
        await sight(sw, outside["persona_id"], f"'{wm - timedelta(minutes=20)}'::timestamptz")
        again = await sync_once(conn, src, POLICY, reconcile_every=0)
        classes = {j["soldier_id"]: j["priority_class"] for j in await rows(
            conn, "SELECT * FROM collection_jobs")}
        assert classes[inside["soldier_id"]] == "active"
        assert classes[outside["soldier_id"]] == "bootstrap"
        assert again.watermark is not None and again.watermark > wm


# ---------------------------------------------------------------- live simulator and commands


async def test_live_simulation_moves_bf4sw_and_the_intake_follows(conn: Conn, sw: Conn,
                                                                  src: Conn) -> None:
    await population.fill(sw, 2000, seed=41)
    await sync_once(conn, src, POLICY)
    before = await count(sw, "SELECT count(*) FROM bf4_player_aliases")
    stop = asyncio.Event()

    def enough(running: live.LiveCounts) -> None:  # reported after every tick
        if running.ticks >= 5 and running.new_soldiers > 0:
            stop.set()

    task = asyncio.create_task(live.run(sw, soldiers=2000, rate=400_000, tick=0.05, seed=41,
                                        stop=stop, report=enough, report_every=0))
    counts = await asyncio.wait_for(task, load.scaled(30))
    assert counts.ticks >= 5 and counts.sightings > 50 and counts.new_soldiers > 0
    added = await count(sw, "SELECT count(*) FROM bf4_player_aliases") - before
    assert added == counts.new_soldiers + counts.renames
    report = await sync_once(conn, src, POLICY, reconcile_every=0)
    assert report.soldiers_new == counts.new_soldiers
    assert report.created_by_class == {"active": counts.new_soldiers}
    assert report.jobs_promoted > 0  # returning bootstrap/recent soldiers
    await assert_exact(conn, sw)


def test_cli_simulate_then_sync_once(db_url: str, sw_url: str) -> None:
    settings = Settings(database_url=db_url, bf4sw_database_url=sw_url)
    runner = CliRunner()
    made = runner.invoke(simulate_bf4sw, ["--soldiers", "400", "--seed", "5"], obj=settings)
    assert made.exit_code == 0, made.output
    assert "for 400 soldiers" in made.output and "XBox" in made.output
    synced = runner.invoke(bf4sw_group, ["sync", "--once", "--json", "--queue-first-jobs"],
                           obj=settings)
    assert synced.exit_code == 0, synced.output
    report = json.loads(synced.output.strip().splitlines()[-1])
    assert report["soldiers_new"] == 400 and report["jobs_created"] == 400
    assert report["reconciled"] is True
    human = runner.invoke(bf4sw_group, ["sync", "--once"], obj=settings)
    assert human.exit_code == 0 and "soldiers +0 new" in human.output


def test_cli_sync_leaves_the_jobs_to_the_feeder(db_url: str, sw_url: str) -> None:
    """By default the command is the scheduler's intake run alone: soldiers and their state,
    no job past the feeder's working-set limit (it used to queue every new active and recent
    soldier's first job at once)."""
    settings = Settings(database_url=db_url, bf4sw_database_url=sw_url)
    runner = CliRunner()
    made = runner.invoke(simulate_bf4sw, ["--soldiers", "400", "--seed", "5"], obj=settings)
    assert made.exit_code == 0, made.output
    synced = runner.invoke(bf4sw_group, ["sync", "--once", "--json"], obj=settings)
    assert synced.exit_code == 0, synced.output
    report = json.loads(synced.output.strip().splitlines()[-1])
    assert report["soldiers_new"] == 400 and report["jobs_created"] == 0

    async def counts() -> tuple[int, int]:
        async with connection(db_url) as conn:
            return (await count(conn, "SELECT count(*) FROM collection_jobs"),
                    await count(conn, "SELECT count(*) FROM collection_state"))

    assert asyncio.run(counts()) == (0, 1600)


def test_cli_sync_reports_a_missing_source(db_url: str, sw_url: str) -> None:
    settings = Settings(database_url=db_url, bf4sw_database_url=sw_url)
    result = CliRunner().invoke(bf4sw_group, ["sync", "--once"], obj=settings)
    assert result.exit_code == 1 and "bf4_player_aliases" in result.output



async def test_the_schedulers_intake_waits_for_bf4sw_then_imports_until_stopped(
        conn: Conn, db_url: str, sw: Conn, sw_url: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """The scheduler's intake is the loop `bf4ps bf4sw sync` runs, but a BF4SW without its
    table is no error there (the scheduler runs either way): said once, looked for again each
    interval; once the table is there it imports, leaving the first jobs to the feeder, and a
    stop request ends it."""
    settings = Settings(database_url=db_url, bf4sw_database_url=sw_url,
                        bf4sw_sync_seconds=0.2)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="bf4ps.scheduler.intake_loop"):
        task = asyncio.create_task(scheduler_intake(settings)(stop))
        await asyncio.sleep(1.0)  # five intervals without a table
        assert not task.done()
        await population.fill(sw, 40, seed=5)
        await wait_for(conn, "SELECT count(*) = 40 FROM soldiers", timeout=30)
        stop.set()
        await asyncio.wait_for(task, 10)
    said = [r for r in caplog.records if "no bf4_player_aliases table yet" in r.getMessage()]
    assert len(said) == 1
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 0
    assert await count(conn, "SELECT count(*) FROM collection_state") == 160

SCRIPT = ("import sys; from bf4ps.cli.bf4sw import {cmd} as c; from bf4ps.settings import "
          "Settings; c.main(sys.argv[1:], obj=Settings(), prog_name='bf4ps')")


def spawn(cmd: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + str(REPO),
                PYTHONUNBUFFERED="1", **env)
    return subprocess.Popen([sys.executable, "-c", SCRIPT.format(cmd=cmd), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)


def wait_for_line(proc: subprocess.Popen[str], text: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if text in line:
            return line
    raise AssertionError(f"no {text!r}; stderr: {proc.stderr.read() if proc.stderr else ''}")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_live_simulator_and_sync_loop_stop_cleanly_on_signals(
        db_url: str, sw_url: str, sig: signal.Signals) -> None:
    env = {"BF4PS_DATABASE_URL": db_url, "BF4PS_BF4SW_DATABASE_URL": sw_url,
           "BF4PS_BF4SW_SYNC_SECONDS": "0.2"}
    sim = spawn("simulate_bf4sw", "--soldiers", "300", "--live", "--rate", "50000", "--tick",
                "0.1", env=env)
    wait_for_line(sim, "for 300 soldiers")
    loop = spawn("group", "sync", env=env)
    try:
        wait_for_line(loop, "reconciled")
        for proc in (sim, loop):
            proc.send_signal(sig)
        sim_out, _ = sim.communicate(timeout=20)
        loop.communicate(timeout=20)
        assert (sim.returncode, loop.returncode) == (0, 0)
        assert "stopped: live:" in sim_out
    finally:
        for proc in (sim, loop):
            if proc.poll() is None:
                proc.kill()


async def test_a_batch_larger_than_the_functions_bound_is_stored_in_parts(
        conn: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    """The intake's functions take at most 10,000 soldiers (100,000 names) a call; the store
    splits a larger batch (the bounds made small here) and keeps the discovery order."""
    monkeypatch.setattr(intake_store, "SOLDIERS_A_CALL", 2)
    monkeypatch.setattr(intake_store, "NAMES_A_CALL", 3)
    t = datetime(2026, 11, 1, tzinfo=UTC)
    identities = [Identity(persona_id=880000 + i, platform=Platform.PC, first_id=i,
                           current_name=f"Part{i}", current_key=(t, i), first_seen=t,
                           last_seen=t, names={f"Part{i}": (t, t), f"Was{i}": (t, t)})
                  for i in range(5)]
    result = await intake_store.store(conn, identities, t)
    assert [s.identity.persona_id for s in result.soldiers] == [i.persona_id for i in identities]
    assert all(s.inserted for s in result.soldiers) and result.names_new == 10
    ids = [s.soldier_id for s in result.soldiers]
    assert ids == sorted(ids)  # ids in discovery order across the parts
    cur = await conn.execute(
        "SELECT count(*) AS n FROM collection_state WHERE soldier_id = ANY(%s)", (ids,))
    assert await cur.fetchone() == {"n": 20}
