"""Battlelog at its worst, with a real fleet (a scheduler and collector processes, one
PostgreSQL) against the simulator switched into one bad mode in the middle of the run:

* a career of zeros, or counters gone down: no current row is made worse, the refusals are
  events (failed, implausible) and open the circuit; the archive stays within its bound;
* a 302 to EA's login page, a 503 with Retry-After, for longer than max_consecutive_failures x
  backoff: nothing parked, the circuit opens within 10 s and closes within two probe intervals
  of the heal, and no egress sends during a Retry-After (the simulator's own count)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps import policy
from bf4ps.db.connect import Conn, connection
from bf4ps.sim.battlelog.server import SimProcess
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]  # minutes: run first (tests/conftest.py)

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25",
        "BF4PS_SCHEDULER_TICK_SECONDS": "0.5", "BF4PS_SWEEP_SECONDS": "1",
        "BF4PS_BF4SW_SYNC_SECONDS": "86400"}
PROBE_SECONDS = 6.0
RETRY_AFTER = 3
POLICY = {"circuit_window_seconds": "30", "circuit_min_soldiers": "3",
          "circuit_min_egresses": "2", "circuit_min_failure_share": "0.2",
          "circuit_probe_seconds": str(PROBE_SECONDS), "circuit_close_successes": "2",
          "circuit_hold_seconds": "900", "max_consecutive_failures": "3",
          "backoff_seconds": "[1, 1, 1, 1]", "backoff_jitter": "0",
          "archive_answers_kept": "2"}
EGRESSES = {f"truth-{n}": f"127.0.0.{60 + n}" for n in (1, 2, 3)}
COUNTERS = ("kills", "deaths", "score", "time_played_seconds", "num_rounds")


def configure(sim: SimProcess, knobs: dict[str, Any]) -> None:
    httpx.post(sim.url("/__sim/config"), json=knobs, timeout=10).raise_for_status()


async def prepare(conn: Conn, soldiers: int, extra: dict[str, str]) -> None:
    await seed_work(conn, soldiers)
    await conn.execute("UPDATE collection_state SET activity_class = 'active', "
                       "activity_at = now() WHERE resource = 'detailed'")
    await conn.execute("UPDATE soldiers SET last_seen_at = now()")
    for key, value in (POLICY | extra).items():
        await policy.set_value(conn, key, value, by="test")


def start_fleet(db_url: str, sim: SimProcess, tmp_path: Path) -> Fleet:
    fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
    log = open(tmp_path / "scheduler.log", "a")  # noqa: SIM115 - closed with the process
    fleet.procs["scheduler"] = subprocess.Popen(
        [sys.executable, "-m", "bf4ps.cli.main", "scheduler", "run"], env=fleet.env(),
        stdout=log, stderr=subprocess.STDOUT, text=True)
    for name, ip in EGRESSES.items():
        fleet.start(name, f"{name}-egress", ip)
    return fleet


async def current(conn: Conn) -> dict[int, tuple[Any, ...]]:
    cur = await conn.execute("SELECT soldier_id, kills, deaths, score, time_played_seconds, "
                             "num_rounds FROM detailed_stats_current")
    return {int(r["soldier_id"]): tuple(r[c] for c in COUNTERS) for r in await cur.fetchall()}


async def at(conn: Conn, kind: str) -> float:
    """The epoch time of the first event of a kind."""
    cur = await conn.execute("SELECT extract(epoch FROM min(occurred_at))::float AS t "
                             "FROM collection_events WHERE event_type = %(k)s", {"k": kind})
    row = await cur.fetchone()
    assert row is not None and row["t"] is not None, kind
    return float(row["t"])


@pytest.mark.parametrize("mode", ["fault_zeros", "fault_decrease"])
async def test_zeros_and_lower_counters_never_make_a_current_row_worse(
        db_url: str, tmp_path: Path, mode: str) -> None:
    soldiers = 24
    async with connection(db_url) as conn:
        await prepare(conn, soldiers, {"freshness_detailed_seconds": "2",
                                       "working_set_background": "40"})
    with simulator(speed=50, min_interval=0.0) as sim:
        fleet = start_fleet(db_url, sim, tmp_path)
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= %(n)s FROM detailed_stats_current",
                           {"n": soldiers}, timeout=120)
            await wait_for(conn, "SELECT count(*) >= %(n)s FROM collection_events WHERE "
                                 "event_type = 'succeeded'", {"n": soldiers + 20}, timeout=120)
            before = await current(conn)
            honest = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                       "error_class = 'implausible'")
            configure(sim, {mode: 1.0})  # Battlelog answers well-formed lies from now on
            await wait_for(conn, "SELECT count(*) >= 12 FROM collection_events WHERE "
                                 "event_type = 'failed' AND error_class = 'implausible'",
                           timeout=120)
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_opened'", timeout=60)
            during = await current(conn)
            configure(sim, {mode: 0.0})
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_closed'", timeout=90)
            healed_from = await count(conn, "SELECT count(*) FROM collection_events "
                                            "WHERE event_type = 'succeeded'")
            await wait_for(conn, "SELECT count(*) >= %(n)s FROM collection_events WHERE "
                                 "event_type = 'succeeded'", {"n": healed_from + 10}, timeout=90)
            after = await current(conn)
            opened = await _one(conn, "SELECT result, details FROM collection_events "
                                      "WHERE event_type = 'circuit_opened'")
            refused = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                        "event_type = 'failed' AND error_class = 'implausible'")
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
            resets = await count(conn, "SELECT count(*) FROM collection_events "
                                       "WHERE event_type = 'stats_reset'")
            archive = await _one(conn, "SELECT sum(k) AS n, max(k) AS most FROM (SELECT "
                                       "count(*) AS k FROM raw_answers GROUP BY soldier_id, "
                                       "resource) g")
            archived_refusals = await count(conn, "SELECT count(*) FROM raw_answers "
                                                  "WHERE outcome = 'implausible'")
        codes = fleet.stop_all()
    worse = [(sid, before[sid], now) for snap in (during, after) for sid, now in snap.items()
             if sid in before and any(b is not None and (n is None or n < b)
                                      for b, n in zip(before[sid], now, strict=True))]
    print(f"{mode}: {refused} refused, {len(before)} rows checked twice, archive {archive}")
    assert worse == [], worse[:5]  # 0 current rows made worse
    assert honest == 0  # no honest answer was taken for a lie
    assert refused >= 12 and opened["result"] == "implausible" and parked == 0 and resets == 0
    # the archive's bound holds: 2 answers per soldier and resource (4 resources) at most
    assert archive["most"] == 2 and archive["n"] <= 2 * 4 * soldiers
    assert archived_refusals >= 1  # a refused answer can be inspected
    assert set(codes.values()) == {0}, codes


OUTAGES = {
    "login_302": ({"fault_login_redirect": 1.0}, {"fault_login_redirect": 0.0},
                  "server:login_redirect", 3.75),  # the shortest jittered cool-down: 5 s - 25 %
    "retry_after_503": ({"fault_retry_after": 1.0, "retry_after_seconds": RETRY_AFTER},
                        {"fault_retry_after": 0.0}, "server:http_5xx", float(RETRY_AFTER)),
}
OUTAGE_SECONDS = 20.0  # > max_consecutive_failures (3) x backoff (1 s)


@pytest.mark.parametrize("outage", list(OUTAGES))
async def test_an_outage_parks_nothing_opens_and_closes_the_circuit_and_honours_retry_after(
        db_url: str, tmp_path: Path, outage: str) -> None:
    start, end, signature, cool = OUTAGES[outage]
    async with connection(db_url) as conn:
        await prepare(conn, 300, {})
    with simulator(speed=50, min_interval=0.0) as sim:
        fleet = start_fleet(db_url, sim, tmp_path)
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) >= 15 FROM collection_events "
                                 "WHERE event_type = 'succeeded'", timeout=120)
            sent_before = {ip: c["count"] for ip, c in sim_stats(sim)["by_ip"].items()}
            switched = time.time()
            configure(sim, start)
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_opened'", timeout=60)
            opened_at = await at(conn, "circuit_opened")
            opened = await _one(conn, "SELECT result FROM collection_events "
                                      "WHERE event_type = 'circuit_opened'")
            while time.time() < switched + OUTAGE_SECONDS:
                await wait_for(conn, "SELECT true", timeout=5)
                time.sleep(0.5)
            during = sim_stats(sim)
            healed = time.time()
            configure(sim, end)
            await wait_for(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'circuit_closed'", timeout=60)
            closed_at = await at(conn, "circuit_closed")
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
            parks = await count(conn, "SELECT count(*) FROM collection_events "
                                      "WHERE event_type = 'unavailable'")
            cooled = await count(conn, "SELECT count(*) FROM collection_events "
                                       "WHERE event_type = 'egress_cooled'")
            failed = await count(conn, "SELECT count(*) FROM collection_events "
                                       "WHERE event_type = 'failed'")
        codes = fleet.stop_all()
    print(f"{outage}: opened {opened_at - switched:.1f} s after the switch, closed "
          f"{closed_at - healed:.1f} s after the heal; {failed} failed, {cooled} cool-downs")
    assert opened["result"] == signature
    assert opened_at - switched <= 10.0, opened_at - switched
    assert closed_at - healed <= 2 * PROBE_SECONDS, closed_at - healed
    assert parked == 0 and parks == 0 and failed >= 3 and cooled >= 3
    per_ip = during["by_ip"]
    for ip in EGRESSES.values():  # Retry-After and the cool-down honoured at the wire
        assert per_ip[ip]["retry_after_ignored"] == 0, per_ip[ip]
        sent = per_ip[ip]["count"] - sent_before.get(ip, 0)
        assert sent <= OUTAGE_SECONDS / cool + 3, (ip, sent)
    assert set(codes.values()) == {0}, codes


async def _one(conn: Conn, sql: str) -> dict[str, Any]:
    cur = await conn.execute(sql)  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    return dict(row)
