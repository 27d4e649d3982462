"""The web benchmark's database (bench/web_load.py), built in SQL with generate_series so that
1,000,000 soldiers seed in minutes on two cores:

* every soldier: a name, detailed stats, collection state; every tenth five older detailed
  snapshots; every `every`-th the whole weapon and vehicle lists;
* the most active tenth (persona offset * 7 mod 500 < ACTIVE_DAYS, 100,000 at 1M, on every
  platform): ten good collections of every resource 16 hours apart (a week of play), as a
  collector leaves them, at the rate a budgeted fleet makes them: the soldiers are in cohorts
  of 5,184 (FLEET_RATE requests an hour over four resources: one collection of each of them
  in 16 hours), and the cohorts' weeks follow each other back from now (19.3 cohorts over 129
  days at 1M, 1.9 over 12.9 days at 100k), so the event log holds FLEET_RATE events an hour
  at any time, and this week's boards rank the newest cohort:
  detailed history (a row per collection), the whole weapon and vehicle lists (the five weapons
  and three vehicles played in each collection have a history row per collection), a profile
  (rank name, medals, assignments, linked soldiers), a `succeeded` event per collection and
  resource, and the intervals between consecutive snapshots as finalize writes them (checked);
  a play session between each two detailed collections (a twentieth playing now), a flag on
  one soldier in a hundred (half of them cleared by an operator);
* the gains boards built as the scheduler builds them (stats/gains_boards.py).
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from bf4ps.battlelog.parse_items import parse_vehicles, parse_weapons
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.db.connect import Conn, connection
from bf4ps.stats import gains_boards
from bf4ps.stats.snapshot import write_profile
from bf4ps.stats.store import write_vehicles, write_weapons
from tests import captures

DATA = captures.captures_dir() / "2013-bf4intel"  # real answers to seed with
BASE_PERSONA = 1_000_000_000
ACTIVE_DAYS = 50  # seen in the last 50 of the seed's 500 days (offset * 7 mod 500)
COLLECTIONS = 10
STEP = timedelta(hours=16)  # between two collections of an active soldier
# The documented fleet's budget (docs/architecture.md: 1,296 requests an hour): the seed's
# collections are spread so that the fleet could have made them, one request each.
FLEET_RATE = 1296
RESOURCES = 4

# Bulk inserts whose foreign keys hold by construction run without their per-row checks (the
# seed's server is its own: the admin role may); collection_state's statements run with their
# triggers, which keep the coverage counters.
REPLICA = "SET session_replication_role = replica"
PROFILE_COPY = "-- the profile copy"
ORIGIN = "SET session_replication_role = origin"

# When a soldier's detailed stats were last collected: the active tenth at the end of his
# cohort's week (_H, uniform in [0, cohorts): its whole part picks the cohort, its fraction the
# time within the cohort's 16 hours), every other soldier a day ago.
_H = "((persona_id * 7919 %% 100003) / 100003.0 * %(cohorts)s)"
COLLECTED = f"""CASE WHEN (persona_id - %(base)s) * 7 %% 500 < %(active_days)s
           THEN now() - (floor({_H}) * %(collections)s + {_H} - floor({_H})) * %(step)s::interval
           ELSE now() - interval '1 day' END"""

SEED_SQL = [
    # soldiers: 65 % pc, 17 % ps4, 18 % xboxone
    """INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at)
       SELECT %(base)s + g,
              CASE WHEN g %% 100 < 65 THEN 'pc' WHEN g %% 100 < 82 THEN 'ps4' ELSE 'xboxone' END,
              'Bench' || g, now() - interval '600 days',
              now() - (g * 7 %% 500) * interval '1 day' - (g %% 7200) * interval '1 second'
       FROM generate_series(1, %(n)s) g""",
    REPLICA,
    """INSERT INTO soldier_names (soldier_id, name, first_seen_at, last_seen_at)
       SELECT soldier_id, current_name, first_seen_at, last_seen_at FROM soldiers""",
    ORIGIN,
    f"""INSERT INTO collection_state (soldier_id, resource, status, last_attempt_at,
                                     last_success_at, next_due_at)
       SELECT soldier_id, 'detailed', 'current', {COLLECTED}, {COLLECTED},
              now() + interval '6 days' FROM soldiers""",
    """INSERT INTO collection_state (soldier_id, resource)
       SELECT soldier_id, r FROM soldiers, unnest(ARRAY['profile', 'weapons', 'vehicles']) r""",
    # totals large enough that ten collections' gains and the older snapshots stay >= 0
    f"""INSERT INTO detailed_stats_current (
           soldier_id, fetched_at, rank, skill, score, time_played_seconds, kills, deaths,
           kill_assists, headshots, shots_fired, shots_hit, accuracy_percent, num_rounds, wins,
           losses, score_per_minute, kills_per_minute, revives, heals, repairs, resupplies,
           assault_score, engineer_score, support_score, recon_score, commander_score,
           assault_time_seconds, engineer_time_seconds, support_time_seconds,
           recon_time_seconds, commander_time_seconds, conquest_score, rush_score,
           domination_score, team_deathmatch_score)
       SELECT soldier_id, {COLLECTED}, 10 + soldier_id %% 130,
              100 + soldier_id %% 400, 500000 + soldier_id * 37 %% 9000000,
              50000 + soldier_id * 7919 %% 2000000, 2000 + soldier_id %% 50000,
              2000 + soldier_id %% 45000, soldier_id %% 9000, 500 + soldier_id %% 7000,
              50000 + soldier_id %% 900000, 10000 + soldier_id %% 130000, 14.5,
              soldier_id %% 3000, soldier_id %% 1600, 1 + soldier_id %% 1400,
              300 + soldier_id %% 500, 0.4 + (soldier_id %% 100) / 100.0, soldier_id %% 4000,
              soldier_id %% 5000, soldier_id %% 2000, soldier_id %% 3000,
              soldier_id %% 900000, soldier_id %% 800000, soldier_id %% 700000,
              soldier_id %% 600000, soldier_id %% 10000, soldier_id %% 400000,
              soldier_id %% 300000, soldier_id %% 200000, soldier_id %% 100000,
              soldier_id %% 1000, soldier_id %% 3000000, soldier_id %% 400000,
              soldier_id %% 200000, soldier_id %% 100000
       FROM soldiers""",
    REPLICA,
    # five older snapshots for every tenth soldier (older and lower than the active soldiers'
    # ten collections below, so that every soldier's history only grows)
    """INSERT INTO detailed_stats_history (soldier_id, fetched_at, rank, skill, score, kills,
                                           deaths, time_played_seconds, wins, losses,
                                           shots_fired, shots_hit, headshots,
                                           score_per_minute, kills_per_minute)
       SELECT d.soldier_id, now() - %(older)s - k * interval '9 days',
              d.rank - 3, d.skill - k, d.score - 200000 - k * 1000, d.kills - 600 - k * 50,
              d.deaths - 500 - k * 40, d.time_played_seconds - 20000 - k * 3000,
              d.wins - 10 - k, d.losses - 10 - k, d.shots_fired - 20000, d.shots_hit - 5000,
              d.headshots - 100, d.score_per_minute, d.kills_per_minute
       FROM detailed_stats_current d, generate_series(1, 5) k
       WHERE d.soldier_id %% 10 = 0""",
    ORIGIN,
]

# The most active tenth, and what each of its collections gains (per soldier, so that the
# boards rank them): kills dk, score ds, 1200 s played, per collection.
ACTIVE_SQL = [
    REPLICA,
    """CREATE UNLOGGED TABLE bench_active AS
       SELECT s.soldier_id, s.persona_id, s.platform, d.fetched_at AS f,
              20 + s.soldier_id %% 11 AS dk, 9000 + (s.soldier_id %% 13) * 500 AS ds
       FROM soldiers s JOIN detailed_stats_current d ON d.soldier_id = s.soldier_id
       WHERE (s.persona_id - %(base)s) * 7 %% 500 < %(active_days)s""",
    "ALTER TABLE bench_active ADD PRIMARY KEY (soldier_id)",
    # ten detailed collections (k = 0 is the current one), a rank-up every fourth
    """INSERT INTO detailed_stats_history (soldier_id, fetched_at, rank, skill, score, kills,
                                           deaths, time_played_seconds, wins, losses,
                                           shots_fired, shots_hit, headshots,
                                           score_per_minute, kills_per_minute)
       SELECT d.soldier_id, a.f - k * %(step)s, d.rank - k / 4, d.skill,
              d.score - k * a.ds, d.kills - k * a.dk, d.deaths - k * 16,
              d.time_played_seconds - k * 1200, d.wins - k, d.losses - k,
              d.shots_fired - k * 300, d.shots_hit - k * 45, d.headshots - k * 4,
              d.score_per_minute, d.kills_per_minute
       FROM bench_active a
       JOIN detailed_stats_current d ON d.soldier_id = a.soldier_id
       CROSS JOIN generate_series(0, %(last)s) k""",
    # the intervals between consecutive good snapshots, as finalize writes them
    """INSERT INTO soldier_intervals (soldier_id, platform, started_at, ended_at, kills, deaths,
                                      score, seconds, headshots, shots_fired, shots_hit,
                                      rank_from, rank_to, checked_at)
       SELECT soldier_id, platform, p_at, fetched_at, kills - p_kills, deaths - p_deaths,
              score - p_score, t - p_t, headshots - p_hs, shots_fired - p_sf,
              shots_hit - p_sh, p_rank, rank, now()
       FROM (SELECT h.soldier_id, a.platform, h.fetched_at, h.kills, h.deaths, h.score,
                    h.time_played_seconds AS t, h.headshots, h.shots_fired, h.shots_hit,
                    h.rank,
                    lag(h.fetched_at) OVER w AS p_at, lag(h.kills) OVER w AS p_kills,
                    lag(h.deaths) OVER w AS p_deaths, lag(h.score) OVER w AS p_score,
                    lag(h.time_played_seconds) OVER w AS p_t,
                    lag(h.headshots) OVER w AS p_hs, lag(h.shots_fired) OVER w AS p_sf,
                    lag(h.shots_hit) OVER w AS p_sh, lag(h.rank) OVER w AS p_rank
             FROM bench_active a
             JOIN detailed_stats_history h ON h.soldier_id = a.soldier_id
             WINDOW w AS (PARTITION BY h.soldier_id ORDER BY h.fetched_at)) x
       WHERE p_at IS NOT NULL""",
    # the whole weapon list; five played per collection (the soldier's top five by kills)
    """INSERT INTO soldier_weapon_stats (soldier_id, weapon_id, fetched_at, kills, headshots,
                                         shots_fired, shots_hit, accuracy_fraction,
                                         time_equipped_seconds, service_stars)
       SELECT a.soldier_id, w.weapon_id, a.f, x.kills, x.kills / 5, x.kills * 8, x.kills * 2,
              0.25, x.kills * 20, x.kills / 100
       FROM bench_active a
       CROSS JOIN weapon_catalog w
       CROSS JOIN LATERAL (SELECT CASE
           WHEN ((w.weapon_id - 1) * 7 + a.soldier_id) %% 136 < 5
           THEN 3000 + (a.soldier_id * w.weapon_id) %% 2000
           ELSE (a.soldier_id + w.weapon_id) %% 300 END AS kills) x
       ORDER BY a.soldier_id, w.weapon_id""",
    """INSERT INTO soldier_weapon_history (soldier_id, weapon_id, fetched_at, kills, headshots,
                                           shots_fired, shots_hit, time_equipped_seconds)
       SELECT s.soldier_id, s.weapon_id, a.f - k * %(step)s,
              s.kills - k * (5 + a.soldier_id %% 7), s.headshots - k,
              s.shots_fired - k * 40, s.shots_hit - k * 10, s.time_equipped_seconds - k * 400
       FROM bench_active a
       JOIN soldier_weapon_stats s ON s.soldier_id = a.soldier_id
       CROSS JOIN generate_series(0, %(last)s) k
       WHERE ((s.weapon_id - 1) * 7 + a.soldier_id) %% 136 < 5""",
    # the whole vehicle list; three played per collection
    """INSERT INTO soldier_vehicle_stats (soldier_id, vehicle_id, fetched_at, kills,
                                          time_in_seconds, destroy_x_in_y, service_stars)
       SELECT a.soldier_id, v.vehicle_id, a.f, x.kills, x.kills * 30, x.kills / 10,
              x.kills / 200
       FROM bench_active a
       CROSS JOIN vehicle_catalog v
       CROSS JOIN LATERAL (SELECT CASE
           WHEN ((v.vehicle_id - 1) * 3 + a.soldier_id) %% 53 < 3
           THEN 1000 + (a.soldier_id * v.vehicle_id) %% 1500
           ELSE (a.soldier_id + v.vehicle_id) %% 100 END AS kills) x
       ORDER BY a.soldier_id, v.vehicle_id""",
    """INSERT INTO soldier_vehicle_history (soldier_id, vehicle_id, fetched_at, kills,
                                            time_in_seconds, destroy_x_in_y)
       SELECT s.soldier_id, s.vehicle_id, a.f - k * %(step)s,
              s.kills - k * (3 + a.soldier_id %% 5), s.time_in_seconds - k * 600,
              s.destroy_x_in_y - k
       FROM bench_active a
       JOIN soldier_vehicle_stats s ON s.soldier_id = a.soldier_id
       CROSS JOIN generate_series(0, %(last)s) k
       WHERE ((s.vehicle_id - 1) * 3 + a.soldier_id) %% 53 < 3""",
    # the played items' intervals, from their history rows as finalize writes them
    """INSERT INTO item_intervals (soldier_id, kind, item_id, platform, started_at, ended_at,
                                   kills, seconds, headshots, shots_fired, shots_hit,
                                   stars_from, stars_to, checked_at)
       SELECT soldier_id, 'weapon', weapon_id, platform, p_at, fetched_at, kills - p_kills,
              t - p_t, headshots - p_hs, shots_fired - p_sf, shots_hit - p_sh,
              p_kills / 100, kills / 100, now()
       FROM (SELECT h.*, a.platform, h.time_equipped_seconds AS t,
                    lag(h.fetched_at) OVER w AS p_at, lag(h.kills) OVER w AS p_kills,
                    lag(h.time_equipped_seconds) OVER w AS p_t,
                    lag(h.headshots) OVER w AS p_hs, lag(h.shots_fired) OVER w AS p_sf,
                    lag(h.shots_hit) OVER w AS p_sh
             FROM bench_active a
             JOIN soldier_weapon_history h ON h.soldier_id = a.soldier_id
             WINDOW w AS (PARTITION BY h.soldier_id, h.weapon_id ORDER BY h.fetched_at)) x
       WHERE p_at IS NOT NULL""",
    """INSERT INTO item_intervals (soldier_id, kind, item_id, platform, started_at, ended_at,
                                   kills, seconds, stars_from, stars_to, checked_at)
       SELECT soldier_id, 'vehicle', vehicle_id, platform, p_at, fetched_at, kills - p_kills,
              time_in_seconds - p_t, p_kills / 200, kills / 200, now()
       FROM (SELECT h.*, a.platform, lag(h.fetched_at) OVER w AS p_at,
                    lag(h.kills) OVER w AS p_kills, lag(h.time_in_seconds) OVER w AS p_t
             FROM bench_active a
             JOIN soldier_vehicle_history h ON h.soldier_id = a.soldier_id
             WINDOW w AS (PARTITION BY h.soldier_id, h.vehicle_id ORDER BY h.fetched_at)) x
       WHERE p_at IS NOT NULL""",
    # the profile (rank name, medals and assignments, linked soldiers) of the template soldier,
    # with each soldier's own rank and collection time (web_seed.profile_copy: its columns)
    PROFILE_COPY,
    ORIGIN,  # the coverage counters' triggers run
    """UPDATE collection_state cs
       SET status = 'current', last_attempt_at = a.f, last_success_at = a.f,
           next_due_at = now() + interval '7 days'
       FROM bench_active a
       WHERE cs.soldier_id = a.soldier_id AND cs.resource IN ('profile', 'weapons', 'vehicles')""",
    REPLICA,
    # a succeeded event per collection and resource (the page's chart points, the last
    # session's "collected after"), 20 s apart after the fetch, and never after now (the
    # newest cohort's last collection is fetched up to now)
    """INSERT INTO collection_events (occurred_at, event_type, collector_name, lane, soldier_id,
                                      persona_id, platform, resource, priority_class,
                                      attempt_number, result, duration_ms, http_status)
       SELECT LEAST(a.f - k * %(step)s + r.i * interval '20 seconds', now()), 'succeeded',
              'bench-c' || a.soldier_id %% 8, 'background', a.soldier_id, a.persona_id,
              a.platform, r.resource, 'active', 1, 'ok', 300 + a.soldier_id %% 500, 200
       FROM bench_active a
       CROSS JOIN generate_series(0, %(last)s) k
       CROSS JOIN unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles'])
                  WITH ORDINALITY r(resource, i)""",
    # a play session between each two detailed collections, ended and bracketed; a twentieth
    # of the soldiers on a server now
    """INSERT INTO play_sessions (soldier_id, server_guid, server_name, started_at,
                                  last_seen_at, sightings, ended_at, final_refresh_at)
       SELECT a.soldier_id, 'bench-srv-' || (a.soldier_id * 31 + j) %% 5000,
              'Bench server ' || (a.soldier_id * 31 + j) %% 5000, x.started,
              x.started + (30 + a.soldier_id %% 90) * interval '1 minute',
              1 + (30 + a.soldier_id %% 90) / 5,
              x.started + (50 + a.soldier_id %% 90) * interval '1 minute',
              x.started + (50 + a.soldier_id %% 90) * interval '1 minute'
       FROM bench_active a
       CROSS JOIN generate_series(0, %(last)s) j
       CROSS JOIN LATERAL (SELECT a.f - (j + 1) * %(step)s + interval '1 hour'
                           AS started) x""",
    """INSERT INTO play_sessions (soldier_id, server_guid, server_name, started_at,
                                  last_seen_at, sightings)
       SELECT soldier_id, 'bench-srv-' || soldier_id %% 5000,
              'Bench server ' || soldier_id %% 5000, now() - interval '40 minutes',
              now() - interval '5 minutes', 8
       FROM bench_active WHERE soldier_id %% 20 = 0""",
    # a flag on the newest interval of one soldier in a hundred; half of them cleared
    """INSERT INTO progress_flags (soldier_id, kind, started_at, ended_at, reason, flagged_at,
                                   cleared_at, cleared_by, clear_note)
       SELECT i.soldier_id, 'soldier', i.started_at, i.ended_at,
              'kills per minute 9.40 over the ceiling 5.00', i.ended_at + interval '1 minute',
              CASE WHEN a.soldier_id %% 200 = 7 THEN now() END,
              CASE WHEN a.soldier_id %% 200 = 7 THEN 'ops:bench' END,
              CASE WHEN a.soldier_id %% 200 = 7 THEN 'checked the round: legitimate' END
       FROM bench_active a
       JOIN soldier_intervals i ON i.soldier_id = a.soldier_id AND i.ended_at = a.f
       WHERE a.soldier_id %% 100 = 7""",
    "DROP TABLE bench_active",
    ORIGIN,
]

PROFILE_OWN = {"soldier_id": "a.soldier_id", "fetched_at": "a.f", "battlelog_user_id": "NULL",
               "rank": "d.rank"}
PROFILE_SQL = """INSERT INTO profile_current ({columns})
       SELECT {values}
       FROM bench_active a
       JOIN detailed_stats_current d ON d.soldier_id = a.soldier_id
       CROSS JOIN (SELECT * FROM profile_current WHERE soldier_id = %(template)s) p
       WHERE a.soldier_id <> %(template)s"""


async def profile_copy(conn: Conn) -> str:
    """PROFILE_SQL with profile_current's columns (the template's values but the soldier's
    own)."""
    cur = await conn.execute("SELECT column_name FROM information_schema.columns "
                             "WHERE table_name = 'profile_current' ORDER BY ordinal_position")
    columns = [str(r["column_name"]) for r in await cur.fetchall()]
    return PROFILE_SQL.format(columns=", ".join(columns), values=", ".join(
        PROFILE_OWN.get(c, f"p.{c}") for c in columns))


# weapons and vehicles for every `every`-th soldier (the "any soldier with weapons" pages)
SAMPLE_SQL = [
    REPLICA,
    """INSERT INTO soldier_weapon_stats (soldier_id, weapon_id, fetched_at, kills, headshots,
                                         shots_fired, shots_hit, accuracy_fraction,
                                         time_equipped_seconds, service_stars)
       SELECT s.soldier_id, w.weapon_id, now(), (s.soldier_id + w.weapon_id) %% 900,
              (s.soldier_id + w.weapon_id) %% 90, 10000, 1500, 0.15,
              ((s.soldier_id * w.weapon_id) %% 50000), (s.soldier_id + w.weapon_id) %% 10
       FROM (SELECT soldier_id FROM soldiers WHERE soldier_id %% %(every)s = 1) s
       CROSS JOIN weapon_catalog w
       ON CONFLICT DO NOTHING""",
    """INSERT INTO soldier_vehicle_stats (soldier_id, vehicle_id, fetched_at, kills,
                                          time_in_seconds, destroy_x_in_y, service_stars)
       SELECT s.soldier_id, v.vehicle_id, now(), (s.soldier_id + v.vehicle_id) %% 400,
              (s.soldier_id * v.vehicle_id) %% 30000, (s.soldier_id + v.vehicle_id) %% 50,
              (s.soldier_id + v.vehicle_id) %% 5
       FROM (SELECT soldier_id FROM soldiers WHERE soldier_id %% %(every)s = 1) s
       CROSS JOIN vehicle_catalog v
       ON CONFLICT DO NOTHING""",
    ORIGIN,
    """UPDATE collection_state SET status = 'current', last_attempt_at = now(),
              last_success_at = now(), next_due_at = now() + interval '7 days'
       WHERE resource IN ('weapons', 'vehicles') AND soldier_id %% %(every)s = 1
         AND status <> 'current'""",
]


def fleet_cohorts(n: int) -> float:
    """How many cohorts the active tenth makes: a cohort is the soldiers whose four resources
    FLEET_RATE requests an hour collect once in STEP."""
    active = n * ACTIVE_DAYS // 500
    return active * RESOURCES / (FLEET_RATE * STEP.total_seconds() / 3600)


def active_offset(rng: random.Random, n: int) -> int:
    """A random soldier of the most active tenth (his persona offset from BASE_PERSONA):
    offset * 7 mod 500 < ACTIVE_DAYS, and 143 is 7's inverse mod 500."""
    while True:
        g = rng.randrange(max(1, n // 500)) * 500 + 143 * rng.randrange(ACTIVE_DAYS) % 500
        if 1 <= g <= n:
            return g


async def _run(conn: Conn, statements: list[str], params: dict[str, object],
               label: str) -> None:
    t0 = time.perf_counter()
    steps = []
    for sql in statements:
        t1 = time.perf_counter()
        if sql == PROFILE_COPY:
            sql = await profile_copy(conn)
        await conn.execute(sql, params)  # type: ignore[arg-type]
        steps.append(f"{time.perf_counter() - t1:.0f}")
    print(f"{label} in {time.perf_counter() - t0:.0f} s (steps: {', '.join(steps)} s)",
          flush=True)


async def seed(url: str, n: int, sample: int) -> None:
    """The whole database (see the module docstring)."""
    every = max(1, n // sample)
    cohorts = fleet_cohorts(n)
    spread = STEP * COLLECTIONS * cohorts
    params = {"base": BASE_PERSONA, "n": n, "every": every, "active_days": ACTIVE_DAYS,
              "last": COLLECTIONS - 1, "template": 1, "step": STEP, "cohorts": cohorts,
              "collections": COLLECTIONS, "older": spread + timedelta(days=1)}
    print(f"the active tenth in {cohorts:.1f} cohorts, their weeks of collections over "
          f"{spread.total_seconds() / 86400:,.1f} days ({FLEET_RATE:,} requests an hour)",
          flush=True)
    async with connection(url) as conn:
        await _run(conn, SEED_SQL, params, f"seeded {n:,} soldiers (detailed, state, history)")
        now = datetime.now(UTC)
        # the catalogs and the template soldier's lists and profile, by the collector's writers
        await write_weapons(conn, 1, parse_weapons((DATA / "weapon-stats.json").read_bytes()),
                            now)
        await write_vehicles(conn, 1, parse_vehicles((DATA / "vehicles-stats.json")
                                                     .read_bytes()), now)
        await conn.execute("DELETE FROM soldier_weapon_stats WHERE soldier_id = 1")
        await conn.execute("DELETE FROM soldier_vehicle_stats WHERE soldier_id = 1")
        await conn.execute("DELETE FROM soldier_weapon_history WHERE soldier_id = 1")
        await conn.execute("DELETE FROM soldier_vehicle_history WHERE soldier_id = 1")
        await write_profile(conn, 1, parse_profile((DATA / "soldieroverview.json")
                                                   .read_bytes()), now)
        await _run(conn, ACTIVE_SQL, params, "ten collections of every resource, their "
                   "intervals, sessions, events and flags for the most active tenth")
        await _run(conn, SAMPLE_SQL, params, f"weapons and vehicles for every {every}th soldier")
        t0 = time.perf_counter()
        rows = await gains_boards.refresh(conn, datetime.now(UTC))
        print(f"{rows:,} gains-board rows in {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        await conn.execute("VACUUM ANALYZE")
        print(f"vacuum analyze in {time.perf_counter() - t0:.0f} s", flush=True)
