"""One job, start to finish: wait for the slot, start (fenced), fetch, finalize (fenced)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta

import psycopg
from psycopg_pool import AsyncConnectionPool

from bf4ps.battlelog.classify import slows_egress
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.models import FetchResult, LinkedSoldier, ProfileStats, SearchHit
from bf4ps.battlelog.window import SendWindow
from bf4ps.collector import judged, outage
from bf4ps.collector.clock import DbClock
from bf4ps.collector.heartbeat import Heartbeat, LeaseLost
from bf4ps.collector.search import search
from bf4ps.collector.slots import Pacing, further_request, give_up, send_in_slot
from bf4ps.db.connect import OUTAGE_ERRORS, Conn
from bf4ps.domain import ErrorClass, Resource
from bf4ps.gates import circuit, throttle
from bf4ps.gates.admission import Admitted, Pause, Slot, counted_next, no_pause
from bf4ps.interactive import lookup
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.events import EventType
from bf4ps.queue.finalize import Attempt, NextClaim
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome
from bf4ps.settings import SendTimings
from bf4ps.stats import archive, plausible
from bf4ps.stats.checked import checked_writer

log = logging.getLogger(__name__)

START_LEAD = timedelta(seconds=0.05)  # the start transition is written this long before the
# request is begun (the connect lead before the slot)


@dataclass
class Context:
    me: CollectorRef
    client: BattlelogClient
    gate: SendTimings
    heartbeat: Heartbeat
    throttle_base: float
    throttle_cap: float
    resolved_soldier: int | None = None  # the soldier a lookup just found (for chaining)
    pool: AsyncConnectionPool[Conn] | None = None  # a fresh connection for a late finalize
    pause: Pause = field(default=no_pause)  # test-only pause points (testhook.py)
    abandoned: ClaimedJob | None = None  # the job held when the loop was cancelled
    clock: DbClock = field(default_factory=DbClock)  # database time on this host
    # the next claim a success makes in its own transaction, when the loop would claim anyway
    # (runner.py decides; None: finalize alone)
    chain: Callable[[], NextClaim | None] = field(default=lambda: None)
    held: ClaimedJob | None = None  # claimed by the last success
    held_slot: Slot | None = None  # ... and counted in this slot by it (None: not counted yet)


async def run_job(conn: Conn, ctx: Context, adm: Admitted, policy: Policy,
                  stop: asyncio.Event) -> Outcome | None:
    """Serve one admitted job; None when it was given back (shutdown before the send)."""
    job = adm.job
    ctx.heartbeat.current = job
    ctx.heartbeat.finishing = ctx.heartbeat.sent = False
    pacing = Pacing(ctx.me, ctx.gate, policy, job, ctx.clock)
    try:
        # claimed → running is committed just before the request is begun (the connect lead
        # before the slot), so the database round trip is not spent out of the slot's
        # tolerance; the recorded start is the slot itself
        if not await ctx.clock.sleep_until(pacing.begin(adm.slot) - START_LEAD, stop):
            ctx.heartbeat.finishing = True  # its lease ends here, not lost
            await give_up(conn, pacing, adm.slot, "stopping before the slot")
            await qclaim.release(conn, ctx.me, job, "shutdown")
            return None
        started = await qclaim.start(conn, job, ctx.gate.lease_seconds, adm.slot_at)
        if started is None:
            log.warning("job %s: lease lost before the request; nothing sent", job.job_id)
            await give_up(conn, pacing, adm.slot, "lease lost before the slot")
            return None
        ctx.heartbeat.sent = True
        await ctx.clock.sleep_until(pacing.begin(adm.slot))
        await ctx.pause("fetch")
        sent = await send_in_slot(
            conn, pacing, adm.slot, lambda window: fetch(conn, ctx, pacing, window))
        if sent is None:
            await _stop_if_lease_lapsed(conn, ctx, job)
            return None
        result, slot = sent
        if result is None:
            return None
        if slot != adm.slot:  # the start's slot was given up as late
            result.details["sent_slot_at"] = slot.at.isoformat()
            await qclaim.reslot(conn, job, ctx.gate.lease_seconds, started, slot.at)
        await ctx.pause("finalize")
        outcome = await conclude(conn, ctx, job, result, policy)
        if outcome.event == EventType.STALE_FINALIZE_REJECTED and ctx.heartbeat.lost is None:
            # the lease lapsed while the request was out (a stall): the fence refused the late
            # answer, and the collector stops for a clean restart, however the heartbeat fared
            ctx.heartbeat.lost = LeaseLost(f"the lease of job {job.job_id} lapsed while its "
                                           "request was out")
        return outcome
    except asyncio.CancelledError:
        ctx.abandoned = job  # supervision stopped the loop: the runner lets the job go
        raise
    finally:
        ctx.heartbeat.current = None


async def _stop_if_lease_lapsed(conn: Conn, ctx: Context, job: ClaimedJob) -> None:
    """Nothing was sent after the start; if the lease is gone too (a stall past it), the
    collector stops, as when the heartbeat finds it lost."""
    if ctx.heartbeat.lost is None and await qclaim.renew(
            conn, job.lease, ctx.gate.lease_seconds) is None:
        ctx.heartbeat.lost = LeaseLost(f"the lease of job {job.job_id} lapsed before its "
                                       "request was sent")


async def fetch(conn: Conn, ctx: Context, pacing: Pacing, window: SendWindow
                ) -> FetchResult | None:
    """The job's request(s), the first in the admitted slot. None: a further request found no
    slot (the job is left to its lease, as when no first slot could be had)."""
    job = pacing.job
    if job.is_lookup:
        assert job.lookup_name is not None
        return await search(conn, ctx.client, pacing, job.lookup_name, window)
    assert job.persona_id is not None and job.platform is not None
    result = await ctx.client.fetch(job.stats_resource, job.persona_id, job.platform,
                                    window=window)
    parsed = result.parsed
    if result.ok and isinstance(parsed, ProfileStats) and parsed.battlelog_user_id:
        linked = await _account_soldiers(conn, ctx, pacing, parsed.battlelog_user_id)
        if linked is not None:
            result.parsed = replace(parsed, linked_soldiers=linked)
    return result


async def _account_soldiers(conn: Conn, ctx: Context, pacing: Pacing,
                            user_id: int) -> tuple[LinkedSoldier, ...] | None:
    """The owning account's soldiers: a second physical request, through the same gates (the
    stats request is already sent, so a missed slot only drops this one)."""
    extra = await further_request(
        conn, pacing, lambda later: ctx.client.account_soldiers(user_id, window=later))
    if extra is None:
        return None
    if extra.ok and isinstance(extra.parsed, tuple):
        return tuple(s for s in extra.parsed if isinstance(s, LinkedSoldier))
    if slows_egress(extra):
        await throttle.throttled(conn, ctx.me, ctx.throttle_base, ctx.throttle_cap,
                                 extra.http_status, resource=Resource.PROFILE.value,
                                 reason=f"the account's soldiers: {extra.message}")
    return None


def _attempt(result: FetchResult) -> Attempt:
    details: dict[str, int | float | str] = {"bytes": result.size_bytes}
    details.update({k: v for k, v in result.details.items()
                    if isinstance(v, int | float | str)})
    return Attempt(result.http_status, int(result.duration_seconds * 1000), dict(details))


async def conclude(conn: Conn, ctx: Context, job: ClaimedJob, result: FetchResult,
                   policy: Policy) -> Outcome:
    """Finalize, retrying through database outages (the fence makes retries safe): on the same
    connection while it lives, else on a fresh one from the pool (a collector cut from the
    database reports its answer when it is back; too late, the fence rejects it)."""
    ctx.heartbeat.finishing = True
    attempt = _attempt(result)
    raw = None  # the raw answer for the archive (stats/archive.py), compressed before any lock
    if result.body and job.soldier_id is not None and policy.archive_answers_kept > 0:
        raw = await archive.pack(Resource(job.resource), result.http_status, result.body)
    for delay in (0.5, 1, 2, 4, 8, 15, 30, 30, 30, 30):
        try:
            if not conn.closed:
                return await _finalize_once(conn, ctx, job, result, attempt, policy, raw)
            if ctx.pool is None:
                raise psycopg.OperationalError("the connection is closed")
            async with ctx.pool.connection() as fresh:
                return await _finalize_once(fresh, ctx, job, result, attempt, policy, raw)
        except OUTAGE_ERRORS as exc:
            log.warning("job %s: finalize failed (%s); retrying in %s s", job.job_id, exc,
                        delay)
            await asyncio.sleep(delay)
    return await _finalize_once(conn, ctx, job, result, attempt, policy, raw)


async def _finalize_once(conn: Conn, ctx: Context, job: ClaimedJob, result: FetchResult,
                         attempt: Attempt, policy: Policy,
                         raw: archive.RawAnswer | None = None) -> Outcome:
    if job.is_lookup and result.ok:
        return await _finalize_lookup(conn, ctx, job, result, attempt, policy)
    if result.ok and result.parsed is not None:
        resource = Resource(job.resource)
        try:
            outcome = await finalize.succeed(
                conn, ctx.me, job, attempt, policy,
                checked_writer(ctx.me, resource, result.parsed, policy, raw),
                then=ctx.chain())
            ctx.held, ctx.held_slot = outcome.next_job, counted_next(outcome)
        except plausible.Implausible as exc:  # nothing of it was stored
            return await judged.implausible(conn, ctx.me, ctx.heartbeat, job, exc.verdict,
                                            attempt, policy, raw)
        except (ValueError, TypeError, psycopg.DataError, psycopg.IntegrityError) as exc:
            # our storage refused the data: a classified internal failure, not an outage
            return await finalize.fail(conn, ctx.me, job, ErrorClass.INTERNAL,
                                       f"storing failed: {exc}", attempt, policy)
        if outcome.committed:
            await throttle.succeeded(conn, ctx.me)
            await judged.circuit_success(conn, ctx.me, ctx.heartbeat, job)
        return outcome
    error = result.error_class or ErrorClass.INTERNAL
    # an outage cools the egress (its Retry-After) before anything else is sent from it
    await outage.cool(conn, ctx.me, result, policy, circuit.signature(error, result))
    outcome = await judged.fail(conn, ctx.me, ctx.heartbeat, job, error, result.message,
                                attempt, policy, result)
    if raw is not None and outcome.committed and job.soldier_id is not None:
        await archive.keep(conn, job.soldier_id, raw, str(attempt.details.get("signature")
                           if attempt.details else error.value), policy.archive_answers_kept)
    if slows_egress(result):  # a 403/429, or a soft throttle (a null body, stats missing)
        await throttle.throttled(conn, ctx.me, ctx.throttle_base, ctx.throttle_cap,
                                 result.http_status, resource=job.resource,
                                 reason=result.message)
    return outcome


async def _finalize_lookup(conn: Conn, ctx: Context, job: ClaimedJob, result: FetchResult,
                           attempt: Attempt, policy: Policy) -> Outcome:
    """A name search answered: the soldier is recorded and its request becomes collection work
    in the same fenced transaction as the lookup job's removal; no match is a not-found."""
    parsed = result.parsed if isinstance(result.parsed, tuple) else ()
    hit = lookup.found(job, tuple(h for h in parsed if isinstance(h, SearchHit)))
    if hit is None:
        return await judged.fail(conn, ctx.me, ctx.heartbeat, job, ErrorClass.NOT_FOUND,
                                 lookup.not_found_message(job), attempt, policy, None)
    resolution = lookup.Resolution(hit, policy)
    outcome = await finalize.succeed(conn, ctx.me, job, attempt, policy, resolution)
    ctx.resolved_soldier = resolution.soldier_id if outcome.committed else None
    if outcome.committed:
        await judged.circuit_success(conn, ctx.me, ctx.heartbeat, job)
    return outcome
