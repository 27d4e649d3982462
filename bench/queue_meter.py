"""What one queue cycle costs, metered: round trips, commits, WAL bytes, event rows and client
and server CPU per cycle, for two shapes of cycle.

* bench shape — what bench/queue_cycle.py times: a gate-less cycle (the slot is open at once),
  so each success also claims and starts the next job in the same call (queue_succeed).
* bare1 — the floor (bench/queue_floor.py, as bench/queue_cycle.py runs it): one fenced
  durable commit per job on a bare table of an unmigrated database, no audit, no state; each
  cycle is one call of `bare_finish_next` (the removal of the job done, the claim of the next).
* product shape — what a collector does per request: its start alone at the slot, then a
  finalize that writes a real detailed-stats payload (a capture, tests/captures.py) in the same
  transaction as the success, which also makes the next admission look, claim and count (in a
  slot of the egress gate: connect lead 1 s, fleet budget, ledger row) on the server. (The
  count is a call of its own only when the slot moved past the horizon meanwhile.)

Counting, per shape, over one collector's cycles on a fresh database:
* round trips: the client's protocol messages that wait for the server (each simple Query and
  each extended-protocol Sync), from libpq's own trace of the connection, in a pass of its own
  (tracing slows the client);
* commits: the database's xact_commit (pg_stat_database) before and after;
* WAL bytes: pg_stat_wal's wal_bytes before and after, and beside it the pg_current_wal_lsn()
  difference (the server serves nothing else meanwhile: the bench uses a server of its own,
  BF4PS_BENCH_DIR);
* engine WAL bytes: the WAL bytes less the records that write the statistics payload (the
  stats tables STATS_TABLES, their indexes and TOAST), read back with pg_walinspect: a record
  counts as payload when its first block is one of those relations' (the commit records and
  everything else are the engine's);
* event rows: collection_events rows added;
* client CPU: this process's CPU time; server CPU: the CPU time of the server's processes
  (postmaster and its children: the backend, WAL writer, checkpointer, autovacuum).

usage: python -m bench.queue_meter [--cycles 500] [--soldiers 10000] [--json] [--breakdown]

With --breakdown each shape also gets `wal_by_relation`: the WAL bytes and records per cycle by
the relation of each record's first block (records of no relation, such as commits, by their
resource manager and record type), largest first.

With --json it prints one JSON object, {"bench": {...}, "product": {...}, "bare1": {...},
"machine": "..."},
each shape with the keys of FIELDS (round_trips, commits, wal_bytes, engine_wal_bytes,
server_cpu_ms, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from bench import queue_cycle, queue_floor
from bench.common import fresh_database, machine
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn, connection, with_dbname
from bf4ps.domain import Lane, Resource
from bf4ps.gates import admission
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.settings import SendTimings
from bf4ps.stats.store import writer_for
from tests import captures

REPO = Path(__file__).resolve().parent.parent
DETAILED = captures.captures_dir() / "2020-battlelog-net/detailed-TheOnlyBond.json"
EGRESS = "meter-egress"
GATE = SendTimings(margin=0.0, horizon=2.0, lease_seconds=60, connect_lead=1.0)
Cycle = Callable[[Conn, CollectorRef, Policy], Awaitable[bool]]
Step = Callable[[Conn], Awaitable[bool]]  # one cycle of a shape on its connection
# the statistics payload a success writes (db/sql/stats.sql, progress.sql): not the engine's
STATS_TABLES = ("detailed_stats_current", "detailed_stats_history", "profile_current",
                "soldier_weapon_stats", "soldier_weapon_history", "soldier_vehicle_stats",
                "soldier_vehicle_history", "weapon_catalog", "vehicle_catalog",
                "item_intervals", "soldier_intervals", "progress_flags", "gains_boards",
                "gains_board_items")
# WAL records between two LSNs whose first block is a relation of the stats tables (the table,
# its indexes, its TOAST table and the TOAST's index), and their bytes
PAYLOAD_WAL = """
WITH rels AS (
  SELECT c.oid, c.reltoastrelid FROM pg_class c WHERE c.relname = ANY(%(tables)s)
), every_rel AS (
  SELECT oid FROM rels
  UNION SELECT reltoastrelid FROM rels WHERE reltoastrelid <> 0
  UNION SELECT i.indexrelid FROM pg_index i
        WHERE i.indrelid IN (SELECT oid FROM rels UNION SELECT reltoastrelid FROM rels)
), nodes AS (
  SELECT pg_relation_filenode(oid) AS node FROM every_rel
)
SELECT count(*) AS records, coalesce(sum(record_length), 0) AS bytes
FROM pg_get_wal_block_info(%(a)s::pg_lsn, %(b)s::pg_lsn, false) w
WHERE w.block_id = 0
  AND w.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND w.relfilenode IN (SELECT node FROM nodes)
"""
# every WAL record between two LSNs by the relation of its first block (else by its kind)
WAL_BY_RELATION = """
SELECT COALESCE(c.relname::text, r.resource_manager || '/' || split_part(r.record_type, ' ', 1))
         AS what,
       count(*) AS records, sum(r.record_length) AS bytes, sum(r.fpi_length) AS fpi
FROM pg_get_wal_records_info(%(a)s::pg_lsn, %(b)s::pg_lsn) r
LEFT JOIN pg_get_wal_block_info(%(a)s::pg_lsn, %(b)s::pg_lsn, false) w
       ON w.start_lsn = r.start_lsn AND w.block_id = 0
LEFT JOIN pg_class c ON w.relfilenode = pg_relation_filenode(c.oid)
      AND w.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
GROUP BY 1 ORDER BY 3 DESC
"""


def bench_cycle() -> Cycle:
    """The bench's gate-less cycle: the slot is open at once, so the claim starts its job, and
    each success claims (and starts) the next in its own call: one round trip, one commit."""
    held: list[ClaimedJob | None] = [None]

    async def cycle(conn: Conn, me: CollectorRef, policy: Policy) -> bool:
        job = held[0] or await qclaim.claim(conn, me, 60, start=True)
        if job is None:
            return False
        out = await finalize.succeed(conn, me, job, finalize.Attempt(200, 1), policy,
                                     then=finalize.NextClaim(me.lane, 60, start=True))
        held[0] = out.next_job
        return out.committed

    return cycle


def product_cycle(payload: bytes) -> Cycle:
    """A collector's cycle: the job the last success claimed and counted (or a look, claim and
    count), its start alone at the slot (a heap-only update: the slot is at least the connect
    lead away), then the fenced success with real statistics, which also makes the next look,
    claim and count on the server."""
    parsed = parse_detailed(payload)
    held: list[ClaimedJob | None] = [None]
    counted: list[admission.Slot | None] = [None]

    async def cycle(conn: Conn, me: CollectorRef, policy: Policy) -> bool:
        job = held[0]
        adm = (await admission.admit_held(conn, me, GATE, job, counted[0])
               if job is not None else await admission.admit(conn, me, GATE))
        if not isinstance(adm, admission.Admitted):
            return False
        await qclaim.start(conn, adm.job, GATE.lease_seconds, adm.slot_at)
        out = await finalize.succeed(conn, me, adm.job, finalize.Attempt(200, 900, {
            "bytes": len(payload)}), policy, writer_for(Resource.DETAILED, parsed),
            then=finalize.NextClaim(me.lane, GATE.lease_seconds,
                                    gate=GATE))
        held[0], counted[0] = out.next_job, admission.counted_next(out)
        return out.committed

    return cycle


def bare1_step() -> Step:
    """bare1's cycle: the first claims (started) its job, then each is one call of
    bare_finish_next: the fenced removal of the job done and the claim of the next."""
    held: list[queue_floor.BareJob | None] = [None]

    async def step(conn: Conn) -> bool:
        job = held[0] or await queue_floor.claim1(conn)
        if job is None:
            return False
        done, held[0] = await queue_floor.finish_next(conn, job)
        return done

    return step


def engine_shape(name: str, cycle: Cycle, data_dir: Path) -> Callable[[Conn], Awaitable[Step]]:
    """The engine's shapes begin by registering their collector on the connection."""
    async def begin(conn: Conn) -> Step:
        me = await register(conn, data_dir, Wanted(f"meter-{name}", "bench", Lane.BACKGROUND,
                                                   EGRESS, None, "bench"))
        policy = Policy()
        return lambda c: cycle(c, me, policy)

    return begin


@dataclass(frozen=True)
class Shape:
    """A shape's database (migrated and seeded with `seed(url, soldiers, jobs)`) and how its
    cycle begins on the metered connection."""

    migrated: bool
    seed: Callable[[str, int, int], Coroutine[Any, Any, None]]
    begin: Callable[[Conn], Awaitable[Step]]


async def seed_bare(url: str, soldiers: int, jobs: int) -> None:
    del soldiers  # the bare table has jobs only
    await queue_floor.prepare(url, jobs)


async def bare_begin(conn: Conn) -> Step:
    del conn
    return bare1_step()


async def seed(url: str, soldiers: int, jobs: int) -> None:
    await queue_cycle.seed(url, soldiers, jobs)
    await queue_cycle.add_jobs(url, soldiers, jobs)
    async with connection(url) as conn:
        # the product's gate and a fleet budget that never binds (admission still does its
        # sums, as on a fleet with a budget)
        await conn.execute(
            "INSERT INTO egress_gates (egress_key, min_interval_seconds) VALUES (%s, 0.001) "
            "ON CONFLICT (egress_key) DO NOTHING", [EGRESS])
        await conn.execute("UPDATE fleet_budget SET requests = 1000000000, "
                           "window_seconds = 3600")
        # a fleet that has collected before: a row of history per soldier, analyzed, so the
        # statistics writer's read of a soldier's newest row is planned as on a fleet (by its
        # key); an empty table, planned for once, stayed a sequential scan for the whole run
        await conn.execute("INSERT INTO detailed_stats_history (soldier_id, fetched_at) "
                           "SELECT soldier_id, now() - interval '1 day' FROM soldiers")
        await conn.execute("ANALYZE detailed_stats_history")


@dataclass
class Reading:
    commits: int
    wal_lsn: str
    wal_bytes: int  # pg_stat_wal
    events: int
    server_cpu: float
    client_cpu: float


def server_processes(backend_pid: int) -> list[psutil.Process]:
    postmaster = psutil.Process(backend_pid).parent()
    assert postmaster is not None
    return [postmaster, *postmaster.children()]


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


async def read(admin: psycopg.AsyncConnection[Any], conn: Conn, dbname: str,
               migrated: bool) -> Reading:
    # the worker's own counters reach pg_stat_database at its next flush: force it
    await conn.execute("SELECT pg_stat_force_next_flush()")
    await conn.execute("SELECT 1")
    await admin.execute("SELECT pg_stat_force_next_flush()")
    cur = await admin.execute(
        "SELECT xact_commit, pg_current_wal_lsn()::text, "
        "(SELECT wal_bytes FROM pg_stat_wal) FROM pg_stat_database WHERE datname = %s",
        [dbname])
    row = await cur.fetchone()
    assert row is not None
    # the event log's rows (bare1's database has none): one statement either way, so the
    # readings' own commits are the same for every shape
    ev = await (await conn.execute("SELECT count(*) AS n FROM collection_events" if migrated
                                   else "SELECT 0 AS n")).fetchone()
    assert ev is not None
    pid = await (await conn.execute("SELECT pg_backend_pid() AS p")).fetchone()
    assert pid is not None
    return Reading(int(row[0]), str(row[1]), int(row[2]), int(ev["n"]),
                   cpu_of(server_processes(int(pid["p"]))), time.process_time())


async def wal_bytes(admin: psycopg.AsyncConnection[Any], a: str, b: str) -> int:
    cur = await admin.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", [b, a])
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def payload_wal(conn: Conn, a: str, b: str) -> int:
    """Bytes of the WAL records between LSNs `a` and `b` that write the statistics payload."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    cur = await conn.execute(PAYLOAD_WAL, {"tables": list(STATS_TABLES), "a": a, "b": b})
    row = await cur.fetchone()
    assert row is not None
    return int(row["bytes"])


async def wal_by_relation(conn: Conn, a: str, b: str, cycles: int) -> list[dict[str, Any]]:
    """Per cycle: WAL bytes, records and full-page-image bytes by relation (WAL_BY_RELATION)."""
    cur = await conn.execute(WAL_BY_RELATION, {"a": a, "b": b})
    return [{"what": r["what"], "bytes": round(float(r["bytes"]) / cycles, 1),
             "records": round(float(r["records"]) / cycles, 2),
             "fpi_bytes": round(float(r["fpi"]) / cycles, 1)} for r in await cur.fetchall()]


async def run_cycles(conn: Conn, step: Step, n: int) -> int:
    done = 0
    for _ in range(n):
        done += bool(await step(conn))
    return done


def count_round_trips(trace: Path) -> int:
    """Client messages that wait for an answer, in libpq's trace: Query (simple protocol) and
    Sync (the end of an extended-protocol exchange)."""
    trips = 0
    for line in trace.read_text(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] == "F" and parts[2].split(" ", 1)[0] in ("Query",
                                                                                 "Sync"):
            trips += 1
    return trips


async def meter(url: str, admin_url: str, shape: Shape, cycles: int,
                breakdown: bool = False) -> dict[str, Any]:
    dbname = str(conninfo_to_dict(url)["dbname"])
    async with (connection(url) as conn,
                await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin):
        step = await shape.begin(conn)
        await run_cycles(conn, step, 20)  # warm: prepared statements, caches
        before = await read(admin, conn, dbname, shape.migrated)
        done = await run_cycles(conn, step, cycles)
        after = await read(admin, conn, dbname, shape.migrated)
        assert done == cycles, (dbname, done, cycles)
        trace = Path(tempfile.mkstemp(prefix="bf4ps-meter-", suffix=".trace")[1])
        with trace.open("w") as fh:
            conn.pgconn.trace(fh.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            traced = 50
            assert await run_cycles(conn, step, traced) == traced
            conn.pgconn.untrace()
        trips = count_round_trips(trace) / traced
        trace.unlink()
        wal = await wal_bytes(admin, before.wal_lsn, after.wal_lsn)
        payload = await payload_wal(conn, before.wal_lsn, after.wal_lsn)
        by_rel = (await wal_by_relation(conn, before.wal_lsn, after.wal_lsn, cycles)
                  if breakdown else None)
    # the two readings' own statements: 3 autocommit transactions on the worker's session
    commits = (after.commits - before.commits - 3) / cycles
    out: dict[str, Any] = {"round_trips": trips, "commits": commits,
            "wal_bytes": (after.wal_bytes - before.wal_bytes) / cycles,
            "wal_lsn_bytes": wal / cycles,
            "engine_wal_bytes": (after.wal_bytes - before.wal_bytes - payload) / cycles,
            "payload_wal_bytes": payload / cycles,
            "event_rows": (after.events - before.events) / cycles,
            "client_cpu_ms": (after.client_cpu - before.client_cpu) * 1000 / cycles,
            "server_cpu_ms": (after.server_cpu - before.server_cpu) * 1000 / cycles}
    if by_rel is not None:
        out["wal_by_relation"] = by_rel
    return out


FIELDS = (("round_trips", "round trips", "{:.1f}"), ("commits", "commits", "{:.2f}"),
          ("wal_bytes", "WAL bytes", "{:,.0f}"), ("wal_lsn_bytes", "WAL (LSN diff)", "{:,.0f}"),
          ("engine_wal_bytes", "engine WAL bytes", "{:,.0f}"),
          ("payload_wal_bytes", "stats WAL bytes", "{:,.0f}"),
          ("event_rows", "event rows", "{:.2f}"),
          ("client_cpu_ms", "client CPU ms", "{:.3f}"),
          ("server_cpu_ms", "server CPU ms", "{:.3f}"))


def shapes() -> dict[str, Shape]:
    data_dir = Path(tempfile.mkdtemp(prefix="bf4ps-meter-ids-"))
    return {"bench": Shape(True, seed, engine_shape("bench", bench_cycle(), data_dir)),
            "product": Shape(True, seed, engine_shape(
                "product", product_cycle(DETAILED.read_bytes()), data_dir)),
            "bare1": Shape(False, seed_bare, bare_begin)}


def run(soldiers: int, cycles: int, breakdown: bool = False) -> dict[str, dict[str, Any]]:
    """Every shape, each on a fresh database of the bench's server: per-cycle figures."""
    results: dict[str, dict[str, Any]] = {}
    for name, shape in shapes().items():
        url = fresh_database(f"bench_meter_{name}", migrated=shape.migrated)
        with psycopg.connect(with_dbname(url, "postgres"), autocommit=True) as admin:
            # a checkpoint before the seed: its pages then need no full-page image when the
            # cycles touch them, and no checkpoint falls inside the measurement
            admin.execute("CHECKPOINT")
        asyncio.run(shape.seed(url, soldiers, cycles + 200))
        admin_url = with_dbname(url, "postgres")
        results[name] = asyncio.run(meter(url, admin_url, shape, cycles, breakdown))
    return results


def report(results: dict[str, dict[str, Any]], cycles: int, soldiers: int) -> None:
    print(f"per cycle, {cycles} cycles of one collector, {soldiers:,} soldiers:")
    print(f"{'':16}" + "".join(f"{shape:>12}" for shape in results))
    for key, label, fmt in FIELDS:
        print(f"{label:16}" + "".join(f"{fmt.format(r[key]):>12}" for r in results.values()))
    for shape, r in results.items():
        for row in r.get("wal_by_relation", []):
            print(f"wal {shape:8} {row['what']:42} {row['bytes']:>9,.1f} B "
                  f"{row['records']:>6.2f} records {row['fpi_bytes']:>8,.1f} B FPI")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cycles", type=int, default=500)
    ap.add_argument("--soldiers", type=int, default=10_000)
    ap.add_argument("--json", action="store_true", help="one JSON object (see above)")
    ap.add_argument("--breakdown", action="store_true", help="WAL per relation (see above)")
    args = ap.parse_args()
    os.environ.setdefault("BF4PS_BENCH_DIR", str(Path(tempfile.gettempdir()) / "bf4ps-meter"))
    before = machine()
    results = run(args.soldiers, args.cycles, args.breakdown)
    if args.json:
        print(json.dumps({**results, "cycles": args.cycles, "soldiers": args.soldiers,
                          "machine": before, "machine_after": machine()}))
        return
    print(f"machine: {before}")
    report(results, args.cycles, args.soldiers)


if __name__ == "__main__":
    main()
