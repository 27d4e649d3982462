"""Statistics storage against real PostgreSQL: current rows, change-only history, the
no-backwards rule, catalogs under concurrent collectors, the finalize failure path, and the
soldier page's reads."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path

import pytest

from bf4ps.battlelog.models import (
    DetailedStats,
    LinkedSoldier,
    ProfileStats,
    VehicleItem,
    WeaponItem,
)
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import parse_vehicles, parse_weapons
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.db.connect import Conn
from bf4ps.domain import Resource, StateStatus
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob
from bf4ps.stats.items import VEHICLES, WEAPONS
from bf4ps.stats.read import detailed_history, items_of, soldier_overview
from bf4ps.stats.store import (
    write_detailed,
    write_profile,
    write_vehicles,
    write_weapons,
    writer_for,
)
from tests import captures
from tests.helpers import T0, add_job, count, make_collector, make_soldier

FIXTURES = "2013-bf4intel"
T1, T2, T3, T4 = (T0 + timedelta(hours=h) for h in (1, 2, 3, 4))


def fixture_detailed() -> DetailedStats:
    return parse_detailed(captures.read(f"{FIXTURES}/details-stats.json"))


def fixture_weapons() -> tuple[WeaponItem, ...]:
    return parse_weapons(captures.read(f"{FIXTURES}/weapon-stats.json"))


def fixture_vehicles() -> tuple[VehicleItem, ...]:
    return parse_vehicles(captures.read(f"{FIXTURES}/vehicles-stats.json"))


def used(counters: tuple[int | None, ...]) -> bool:
    return any(c is not None and c > 0 for c in counters)


def weapon_counters(w: WeaponItem) -> tuple[int | None, ...]:
    return (w.kills, w.headshots, w.shots_fired, w.shots_hit, w.time_equipped_seconds)


def vehicle_counters(v: VehicleItem) -> tuple[int | None, ...]:
    return (v.kills, v.time_in_seconds, v.destroy_x_in_y)


def with_kills(items: tuple[WeaponItem, ...], changes: dict[str, int]) -> tuple[WeaponItem, ...]:
    return tuple(replace(w, kills=changes[w.guid]) if w.guid in changes else w for w in items)


# ---------------------------------------------------------------- detailed


async def test_detailed_history_only_on_change_and_never_backwards(conn: Conn) -> None:
    sid = await make_soldier(conn, 101)
    stats = fixture_detailed()
    first = await write_detailed(conn, sid, stats, T1)
    assert (first.current_rows, first.history_rows) == (1, 1)

    same = await write_detailed(conn, sid, stats, T2)
    assert (same.current_rows, same.history_rows) == (1, 0)

    more = replace(stats, kills=4837)
    changed = await write_detailed(conn, sid, more, T3)
    assert (changed.current_rows, changed.history_rows) == (1, 1)

    older = await write_detailed(conn, sid, replace(stats, kills=1, deaths=1), T0)
    assert older.outdated and (older.current_rows, older.history_rows) == (0, 0)
    tie = await write_detailed(conn, sid, replace(stats, kills=2), T3)  # equally new: first wins
    assert tie.outdated

    overview = await soldier_overview(conn, sid)
    assert overview.detailed is not None
    assert overview.detailed.fetched_at == T3 and overview.detailed.stats == more
    history = await detailed_history(conn, sid, limit=10)
    assert [(h.fetched_at, h.kills) for h in history] == [(T3, 4837), (T1, 4836)]
    assert history[1].deaths == 3979 and history[1].score == 4554408
    assert history[1].kills_per_minute is None and history[1].score_per_minute == 510.0
    assert [h.fetched_at for h in await detailed_history(conn, sid, limit=1)] == [T3]


async def test_detailed_every_column_round_trips_and_counts_as_a_change(conn: Conn) -> None:
    sid = await make_soldier(conn, 102)
    names = [f.name for f in fields(DetailedStats)]
    base = DetailedStats(**{  # type: ignore[arg-type]
        name: (i + 0.25 if f.type == "float | None" else 1000 + i)
        for i, (name, f) in enumerate(zip(names, fields(DetailedStats), strict=True))})
    await write_detailed(conn, sid, base, T0)
    overview = await soldier_overview(conn, sid)
    assert overview.detailed is not None and overview.detailed.stats == base

    at = T0
    for name in names:  # each single column, including value -> NULL, is a change
        at += timedelta(minutes=1)
        written = await write_detailed(conn, sid, replace(base, **{name: None}), at)
        assert written.history_rows == 1, name
    assert await count(conn, "SELECT count(*) FROM detailed_stats_history") == 1 + len(names)
    again = await write_detailed(conn, sid, replace(base, **{names[-1]: None}),
                                 at + timedelta(minutes=1))
    assert again.history_rows == 0


# ---------------------------------------------------------------- profile


async def test_profile_round_trip_user_link_and_no_backwards(conn: Conn) -> None:
    sid = await make_soldier(conn, 103)
    profile = replace(parse_profile(captures.read(f"{FIXTURES}/soldieroverview.json")),
                      linked_soldiers=(LinkedSoldier(555, "AltSoldier", 32),))
    assert profile.battlelog_user_id is not None and profile.top_weapons and profile.progress
    written = await write_profile(conn, sid, profile, T1)
    assert written.current_rows == 1 and written.user_linked

    overview = await soldier_overview(conn, sid)
    assert overview.profile is not None
    assert overview.profile.fetched_at == T1 and overview.profile.stats == profile
    cur = await conn.execute("SELECT battlelog_user_id FROM soldiers WHERE soldier_id = %s",
                             [sid])
    assert await cur.fetchone() == {"battlelog_user_id": profile.battlelog_user_id}
    # linked soldiers are stored, not turned into known soldiers
    assert await count(conn, "SELECT count(*) FROM soldiers") == 1

    assert (await write_profile(conn, sid, replace(profile, kills=1), T0)).outdated
    later = replace(profile, battlelog_user_id=None, clan_tag=None, kills=304,
                    linked_soldiers=())
    again = await write_profile(conn, sid, later, T2)
    assert again.current_rows == 1 and not again.user_linked
    overview = await soldier_overview(conn, sid)
    assert overview.profile is not None
    stored = overview.profile.stats
    assert stored.kills == 304 and stored.clan_tag is None and stored.linked_soldiers == ()
    assert stored.battlelog_user_id == profile.battlelog_user_id  # known id is kept


# ---------------------------------------------------------------- weapons and vehicles


async def test_weapons_fixture_stored_read_back_and_history_only_for_changes(
        conn: Conn) -> None:
    sid = await make_soldier(conn, 104)
    weapons = fixture_weapons()
    played = sum(used(weapon_counters(w)) for w in weapons)
    assert len(weapons) == 136 and 0 < played < 136

    first = await write_weapons(conn, sid, weapons, T1)
    assert (first.catalog_inserted, first.current_rows, first.history_rows) == (136, 136, played)
    assert await count(conn, "SELECT count(*) FROM weapon_catalog") == 136

    stored = await items_of(conn, WEAPONS, sid)
    assert len(stored) == 136
    by_guid = {s.item.guid: s for s in stored}
    u100 = by_guid["D245AAAD-A451-45FD-AFC5-851D966B5227"]
    assert u100.item == weapons[0] and u100.fetched_at == T1
    assert (u100.item.name, u100.item.slug, u100.item.category) == (
        "WARSAW_ID_P_WNAME_ULTIM", "u-100-mk5", "LMGs")
    assert (u100.item.kills, u100.item.headshots, u100.item.shots_fired) == (268, 35, 8188)
    assert {s.item for s in stored} == set(weapons)
    kills = [s.item.kills or 0 for s in stored]
    assert kills == sorted(kills, reverse=True)

    unchanged = await write_weapons(conn, sid, weapons, T2)
    assert (unchanged.catalog_inserted, unchanged.catalog_refreshed) == (0, 0)
    assert (unchanged.current_rows, unchanged.history_rows) == (0, 0)

    a, b = weapons[0].guid, weapons[-1].guid  # a used weapon and an all-zero flare
    changed = with_kills(weapons, {a: 300, b: 1})
    changed = (*changed[:-1], replace(changed[-1], accuracy_fraction=1))  # an int in a float
    two = await write_weapons(conn, sid, changed, T3)
    assert (two.current_rows, two.history_rows) == (2, 2)
    assert await count(conn, "SELECT count(*) FROM soldier_weapon_history") == played + 2
    cur = await conn.execute(
        "SELECT c.guid, h.kills FROM soldier_weapon_history h JOIN weapon_catalog c "
        "USING (weapon_id) WHERE h.fetched_at = %s ORDER BY h.kills", [T3])
    assert await cur.fetchall() == [{"guid": b, "kills": 1}, {"guid": a, "kills": 300}]
    by_guid = {s.item.guid: s for s in await items_of(conn, WEAPONS, sid)}
    assert by_guid[a].item.kills == 300 and by_guid[a].fetched_at == T3
    assert by_guid[weapons[1].guid].fetched_at == T1  # untouched rows keep their time


async def test_weapons_keep_last_known_good_and_never_go_backwards(conn: Conn) -> None:
    sid = await make_soldier(conn, 105)
    weapons = fixture_weapons()
    await write_weapons(conn, sid, weapons, T1)
    partial = await write_weapons(conn, sid, weapons[:10], T2)  # items missing: kept
    assert partial.current_rows == 0
    assert (await write_weapons(conn, sid, (), T3)).current_rows == 0  # empty list: kept
    assert len(await items_of(conn, WEAPONS, sid)) == 136

    changed = with_kills(weapons, {weapons[0].guid: 999})
    older = await write_weapons(conn, sid, changed, T0)
    assert older.outdated and (older.current_rows, older.history_rows) == (0, 0)
    newer = await write_weapons(conn, sid, changed, T4)
    assert (newer.current_rows, newer.history_rows) == (1, 1)
    stale = await write_weapons(conn, sid, with_kills(weapons, {weapons[1].guid: 5}), T3)
    assert stale.outdated  # T3 is older than the T4 data now stored
    stored = {s.item.guid: s.item.kills for s in await items_of(conn, WEAPONS, sid)}
    assert stored[weapons[0].guid] == 999 and stored[weapons[1].guid] == weapons[1].kills


async def test_catalog_is_shared_and_refreshed_only_when_changed(conn: Conn) -> None:
    one, two = await make_soldier(conn, 106), await make_soldier(conn, 107)
    weapons = fixture_weapons()
    await write_weapons(conn, one, weapons, T1)
    second = await write_weapons(conn, two, weapons, T2)
    assert (second.catalog_inserted, second.catalog_refreshed, second.current_rows) == (0, 0, 136)

    renamed = (replace(weapons[0], name="WARSAW_ID_P_WNAME_ULTIM_V2"), *weapons[1:])
    third = await write_weapons(conn, one, renamed, T3)
    assert (third.catalog_inserted, third.catalog_refreshed, third.current_rows) == (0, 1, 0)
    assert [w.item.name for w in await items_of(conn, WEAPONS, two)
            if w.item.guid == weapons[0].guid] == ["WARSAW_ID_P_WNAME_ULTIM_V2"]

    next_day = await write_weapons(conn, two, renamed, T3 + timedelta(days=2))
    assert next_day.catalog_refreshed == 136  # last_seen_at, at most once a day
    cur = await conn.execute("SELECT min(last_seen_at) AS lo, max(first_seen_at) AS hi "
                             "FROM weapon_catalog")
    assert await cur.fetchone() == {"lo": T3 + timedelta(days=2), "hi": T1}


async def test_vehicles_fixture_stored_read_back_and_history_only_for_changes(
        conn: Conn) -> None:
    sid = await make_soldier(conn, 108)
    vehicles = fixture_vehicles()
    played = sum(used(vehicle_counters(v)) for v in vehicles)
    assert len(vehicles) == 53 and 0 < played < 53

    first = await write_vehicles(conn, sid, vehicles, T1)
    assert (first.catalog_inserted, first.current_rows, first.history_rows) == (53, 53, played)
    stored = await items_of(conn, VEHICLES, sid)
    assert {s.item for s in stored} == set(vehicles)
    btr = next(s for s in stored if s.item.guid == "F998F5E4-220D-463A-A437-1C18D5C3A19E")
    assert (btr.item.slug, btr.item.kills, btr.item.time_in_seconds,
            btr.item.destroy_x_in_y) == ("btr-90", 43, 3118, 11)
    assert stored[0].item.kills == max(v.kills or 0 for v in vehicles)

    assert (await write_vehicles(conn, sid, vehicles, T2)).history_rows == 0
    bumped = tuple(replace(v, kills=(v.kills or 0) + 1) if i in (0, 7) else v
                   for i, v in enumerate(vehicles))
    two = await write_vehicles(conn, sid, bumped, T3)
    assert (two.current_rows, two.history_rows) == (2, 2)
    assert await count(conn, "SELECT count(*) FROM soldier_vehicle_history") == played + 2


# ---------------------------------------------------------------- through finalize


async def claim_and_start(conn: Conn, me) -> ClaimedJob:  # type: ignore[no-untyped-def]
    job = await qclaim.claim(conn, me, 60)
    assert job is not None
    async with conn.transaction():
        assert await qclaim.start(conn, job, 60, job.claimed_at) is not None
    return job


async def test_writer_for_stores_through_finalize(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 109)
    await add_job(conn, sid, resource="weapons")
    job = await claim_and_start(conn, me)
    out = await finalize.succeed(conn, me, job, Attempt(200, 900), Policy(),
                                 writer_for(Resource.WEAPONS, fixture_weapons()))
    assert out.committed
    overview = await soldier_overview(conn, sid)
    state = overview.states[Resource.WEAPONS]
    assert state.status is StateStatus.CURRENT and state.last_error_class is None
    assert state.last_success_at is not None and state.last_attempt_at is not None
    assert overview.states[Resource.DETAILED].status is StateStatus.NEVER_ATTEMPTED
    assert overview.detailed is None and overview.profile is None
    stored = await items_of(conn, WEAPONS, sid)
    assert len(stored) == 136 and stored[0].fetched_at <= state.last_success_at


async def test_unstorable_values_are_refused_before_any_statement(conn: Conn) -> None:
    sid = await make_soldier(conn, 112)
    with pytest.raises(ValueError, match="guid"):
        await write_weapons(conn, sid, (replace(fixture_weapons()[0], guid="X" * 65),), T1)
    with pytest.raises(ValueError, match="clan tag"):
        await write_profile(conn, sid, ProfileStats(clan_tag="T" * 17), T1)
    assert await count(conn, "SELECT count(*) FROM weapon_catalog") == 0


def test_writer_for_refuses_a_mismatched_payload() -> None:
    with pytest.raises(TypeError):
        writer_for(Resource.WEAPONS, fixture_vehicles())
    with pytest.raises(TypeError):
        writer_for(Resource.DETAILED, ProfileStats())
    writer_for(Resource.VEHICLES, ())  # an empty list is a valid vehicles answer


async def test_writer_refuses_another_resources_job(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 111)
    await add_job(conn, sid, resource="detailed")
    job = await claim_and_start(conn, me)
    with pytest.raises(ValueError, match="weapons writer"):
        await finalize.succeed(conn, me, job, Attempt(200, 10), Policy(),
                               writer_for(Resource.WEAPONS, fixture_weapons()))
    assert await count(conn, "SELECT count(*) FROM soldier_weapon_stats") == 0
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE status = 'running'") == 1


async def test_failing_writer_leaves_previous_stats_untouched(conn: Conn,
                                                              tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "bg-1")
    sid = await make_soldier(conn, 110)
    weapons, stats = fixture_weapons(), fixture_detailed()
    await write_weapons(conn, sid, weapons, T1)
    await write_detailed(conn, sid, stats, T1)
    await add_job(conn, sid, resource="weapons")
    job = await claim_and_start(conn, me)
    newer = tuple(replace(w, kills=(w.kills or 0) + 50) for w in weapons)
    inner = writer_for(Resource.WEAPONS, newer)

    async def broken(c: Conn, j: ClaimedJob, now) -> None:  # type: ignore[no-untyped-def]
        await inner(c, j, now)  # the whole list written, then the writer fails
        await write_detailed(c, sid, replace(stats, kills=1), now)
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        await finalize.succeed(conn, me, job, Attempt(200, 10), Policy(), broken)
    assert {s.item for s in await items_of(conn, WEAPONS, sid)} == set(weapons)
    assert all(s.fetched_at == T1 for s in await items_of(conn, WEAPONS, sid))
    overview = await soldier_overview(conn, sid)
    assert overview.detailed is not None and overview.detailed.stats == stats
    assert await count(conn, "SELECT count(*) FROM soldier_weapon_history") == sum(
        used(weapon_counters(w)) for w in weapons)
    assert overview.states[Resource.WEAPONS].status is StateStatus.NEVER_ATTEMPTED
    assert await count(conn, "SELECT count(*) FROM collection_jobs "
                             "WHERE status = 'running'") == 1


# ---------------------------------------------------------------- concurrency and cost


def live_sized_weapons(n: int = 175) -> tuple[WeaponItem, ...]:
    base = fixture_weapons()
    extra = tuple(replace(base[i % len(base)], guid=f"BENCH-{i:04d}") for i in range(n - 136))
    return base + extra


async def test_weapons_write_cost_for_175_items(conn: Conn) -> None:
    """Prints the median cost (run with -s); asserts only a generous bound."""
    items = live_sized_weapons()
    soldiers = [await make_soldier(conn, 30_000 + i) for i in range(40)]
    await write_weapons(conn, soldiers[0], items, T0)  # catalog exists, as in production

    async def timed(sid: int, payload: tuple[WeaponItem, ...], at) -> float:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        async with conn.transaction():
            await write_weapons(conn, sid, payload, at)
        return (time.perf_counter() - start) * 1000

    first = [await timed(s, items, T1) for s in soldiers[1:]]
    same = [await timed(s, items, T2) for s in soldiers[1:]]
    bumped = tuple(replace(w, kills=(w.kills or 0) + 1) if i % 10 == 0 else w
                   for i, w in enumerate(items))
    some = [await timed(s, bumped, T3) for s in soldiers[1:]]
    figures = {name: round(statistics.median(v), 2)
               for name, v in (("first", first), ("unchanged", same), ("changed_10pct", some))}
    print("\nwrite_weapons 175 items, median ms:", json.dumps(figures))
    assert max(figures.values()) < 250
