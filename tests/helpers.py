"""Shared test helpers: real rows through the library's own functions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, execute
from bf4ps.domain import JobReason, Lane, Platform, PriorityClass
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue.enqueue import Demand, Enqueued, enqueue
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.queue.ranking import rank
from tests import load

T0 = datetime(2026, 11, 1, tzinfo=UTC)


# Test set-up of a gate and the fleet budget, written straight to their tables (operators use
# `bf4ps gate set` / `bf4ps budget set`, which audit each change: fleet/conf.py).
GATE_ENSURE = (
    "INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds) "
    "VALUES (%(egress_key)s, %(min_interval)s, %(window_requests)s, %(window_seconds)s) "
    "ON CONFLICT (egress_key) DO UPDATE SET min_interval_seconds = excluded.min_interval_seconds, "
    "window_requests = excluded.window_requests, window_seconds = excluded.window_seconds, "
    "updated_at = now()")
FLEET_CONFIGURE = ("UPDATE fleet_budget SET requests = %(requests)s, "
                   "window_seconds = %(window_seconds)s, updated_at = now() WHERE budget_id = 1")


async def make_soldier(conn: Conn, persona_id: int, platform: Platform = Platform.PC,
                       name: str | None = None, seen: datetime = T0) -> int:
    """A soldier BF4SW saw playing at `seen`, through the intake's own statements (a batch of
    one): identity, name, source and never-attempted state."""
    name = name or f"Soldier{persona_id}"
    rows = await all_rows(conn, _Made, "soldiers_upsert", {
        "persona_ids": [persona_id], "platforms": [platform.value], "names": [name],
        "first_seen": [seen], "played_at": [seen]})
    ids = [rows[0].soldier_id]
    await execute(conn, "intake_upsert_names", {"soldier_ids": ids, "names": [name],
                                                "first_seen": [seen], "last_seen": [seen]})
    await execute(conn, "intake_upsert_sources", {"soldier_ids": ids, "first_seen": [seen],
                                                  "last_seen": [seen], "now": seen})
    return ids[0]


class _Made(NamedTuple):
    soldier_id: int


async def make_collector(conn: Conn, data_dir: Path, name: str,
                         lane: Lane = Lane.BACKGROUND, egress: str = "eg-1") -> CollectorRef:
    return await register(conn, data_dir, Wanted(name, "test-host", lane, egress, None, "test"))


async def gated_collector(conn: Conn, data_dir: Path, name: str = "bg-1",
                          egress: str = "eg-1", budget: tuple[int, float] | None = None
                          ) -> CollectorRef:
    """A background collector and its egress gate (0.1 s), and a fleet budget of `budget`
    (requests, window seconds) when given."""
    me = await make_collector(conn, data_dir, name, egress=egress)
    await conn.execute(GATE_ENSURE, {"egress_key": egress, "min_interval": 0.1,
                                     "window_requests": None, "window_seconds": None})
    if budget is not None:
        await conn.execute(FLEET_CONFIGURE, {"requests": budget[0],
                                             "window_seconds": budget[1]})
    return me


async def nested_plans(conn: Conn) -> list[str]:
    """auto_explain on for this session, nested statements (those of functions) included: the
    plans arrive as notices, in the list returned."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
    for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                    "SET auto_explain.log_nested_statements = on",
                    "SET auto_explain.log_level = 'notice'"):
        await conn.execute(setting)  # type: ignore[arg-type]
    return notices


async def interactive_gate(conn: Conn, data_dir: Path, interval: float = 2.0) -> None:
    """An interactive collector online, with its egress gate: requests get served estimates."""
    await make_collector(conn, data_dir, "web-int-1", Lane.INTERACTIVE, "int-egress")
    await conn.execute(GATE_ENSURE, {"egress_key": "int-egress", "min_interval": interval,
                                          "window_requests": None, "window_seconds": None})


def demand(soldier_id: int, resource: str = "detailed",
           klass: PriorityClass = PriorityClass.BOOTSTRAP, since: datetime = T0,
           request_id: UUID | None = None, policy: Policy | None = None) -> Demand:
    lane = Lane.INTERACTIVE if klass is PriorityClass.INTERACTIVE else Lane.BACKGROUND
    reason = JobReason.MANUAL if klass is PriorityClass.INTERACTIVE else JobReason.BOOTSTRAP
    return Demand(soldier_id, resource, lane, klass, rank(since, klass, policy or Policy()),
                  reason, since - timedelta(seconds=1), request_id)


async def add_job(conn: Conn, soldier_id: int, resource: str = "detailed",
                  klass: PriorityClass = PriorityClass.BOOTSTRAP,
                  since: datetime = T0) -> Enqueued:
    async with conn.transaction():
        return await enqueue(conn, demand(soldier_id, resource, klass, since))


async def started_job(conn: Conn, me: CollectorRef, soldier_id: int) -> ClaimedJob:
    """A detailed job of the soldier, due now, claimed by `me` and started (its request out)."""
    await add_job(conn, soldier_id)
    await conn.execute("UPDATE collection_jobs SET eligible_at = now() WHERE soldier_id = %(s)s",
                       {"s": soldier_id})
    return await claim_started(conn, me)


async def claim_started(conn: Conn, me: CollectorRef) -> ClaimedJob:
    """The next job in claim order, claimed by `me` and started (its request out)."""
    job = await qclaim.claim(conn, me, 60)
    assert job is not None
    async with conn.transaction():
        assert await qclaim.start(conn, job, 60, job.claimed_at) is not None
    return job


async def count(conn: Conn, sql: str, params: dict[str, object] | None = None) -> int:
    cur = await conn.execute(sql, params or {})  # type: ignore[arg-type]
    row = await cur.fetchone()
    if row is None:
        return 0
    value = next(iter(row.values()))
    return 0 if value is None else int(value)


async def seed_work(conn: Conn, n: int, resources: tuple[str, ...] = ("detailed",),
                    persona_base: int = 1_500_000_000, platform: str = "pc") -> None:
    """n soldiers with never-attempted state and one pending bootstrap job per resource."""
    await conn.execute(
        "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at) "
        "SELECT %(base)s + g, %(platform)s, 'Sim' || g, now() - interval '90 days', "
        "now() - interval '60 days' FROM generate_series(1, %(n)s) g "
        "ON CONFLICT DO NOTHING",
        {"base": persona_base, "n": n, "platform": platform})
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource) SELECT soldier_id, r "
        "FROM soldiers, unnest(ARRAY['detailed','profile','weapons','vehicles']) r "
        "ON CONFLICT DO NOTHING")
    await conn.execute(
        "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason) "
        "SELECT s.soldier_id, r, 'background', 'bootstrap', now() + s.soldier_id * "
        "interval '1 ms', 'bootstrap' FROM soldiers s, unnest(%(resources)s::text[]) r "
        "WHERE s.persona_id > %(base)s ON CONFLICT DO NOTHING",
        {"resources": list(resources), "base": persona_base})


async def wait_for(conn: Conn, sql: str, params: dict[str, object] | None = None,
                   *, timeout: float = 60, poll: float = 0.2,
                   context: Callable[[], str] | None = None) -> int:
    """Poll until the query's single value is truthy; returns it. On timeout (`timeout` scaled
    by the suite's load factor) an AssertionError, with `context()` (a fleet's log tails:
    Fleet.tails) saying what the processes were doing."""
    import asyncio

    deadline = load.deadline(timeout)
    while True:
        value = await count(conn, sql, params)
        if value:
            return value
        if deadline.expired():
            raise AssertionError(f"timed out after {deadline.allowed():.0f} s waiting for: "
                                 f"{sql}" + (f"\n{context()}" if context else ""))
        await asyncio.sleep(poll)


async def set_policy(conn: Conn, **values: float) -> None:
    """Store scheduling policy as `bf4ps config set` does (validated, audited): the database's
    policy, which the admission reads itself (budget shares)."""
    from bf4ps import policy

    for key, value in values.items():
        await policy.set_value(conn, key, str(value), by="test")
