"""Fenced finalization. Success commits the caller's stats writes, the collection state, the
`succeeded` event and the job's removal in one transaction, only while the caller still owns an
unexpired lease; a failure is classified, backs off or parks, and never touches statistics."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from psycopg import pq
from psycopg.rows import BaseRowFactory
from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from bf4ps.db.queries import begin_then_one, execute, mapped, one, one_then_commit
from bf4ps.domain import ErrorClass, Lane
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.queue.backoff import is_terminal, retry_delay
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome, job_event_fields
from bf4ps.settings import SendTimings

log = logging.getLogger(__name__)

StatsWriter = Callable[[Conn, ClaimedJob, datetime], Awaitable[None]]
LEASE_LOST = "BF401"  # queue_succeed, strict: the lease was not ours (db/functions/queue.sql)


@dataclass(frozen=True, slots=True)
class Attempt:
    """What happened on the wire (for the event)."""

    http_status: int | None = None
    duration_ms: int | None = None
    details: dict[str, Any] | None = None


class _LeaseLost(Exception):
    pass


async def _now(conn: Conn) -> datetime:
    cur = await conn.execute("SELECT clock_timestamp() AS now")
    row = await cur.fetchone()
    assert row is not None and isinstance(row["now"], datetime)
    return row["now"]


@dataclass(frozen=True, slots=True)
class _Held:
    """The locked job's claim and start, carried by the event that ends its lease."""

    claimed_at: datetime | None
    started_at: datetime | None


async def _lock(conn: Conn, job: ClaimedJob, statuses: list[str]) -> _Held:
    lease = job.lease
    row = await one(conn, _Held, "lock_owned_job", {
        "job_id": lease.job_id, "collector_uuid": lease.collector_uuid,
        "lease_token": lease.lease_token, "statuses": statuses})
    if row is None:
        raise _LeaseLost
    return row


class _Landed(NamedTuple):
    event_type: str | None


class _Holder(NamedTuple):
    collector_uuid: UUID | None
    status: str


class _Failures(NamedTuple):
    consecutive_failures: int


class _Parking(NamedTuple):
    parking: int


async def _reject(conn: Conn, me: CollectorRef, job: ClaimedJob, what: str) -> Outcome:
    """The lease is not ours: a stale finalize, recorded as such. Unless this lease's own
    outcome is already in the log: a retry after a commit that landed while its answer was
    lost with the connection (the server restarting between the commit and the reply). That
    work is done, once; it is neither stale nor a reason to stop the collector."""
    landed = await one(conn, _Landed, "job_own_outcome", {"job_id": job.job_id,
                                                           "lease_token": job.lease.lease_token})
    if landed is not None and landed.event_type is not None:
        log.warning("job %s: its %s had committed before the connection was lost (found in "
                    "the log); not finalized again", job.job_id, what)
        return Outcome(True, landed.event_type)
    # who holds the job now, never their lease token (the fence of their lease)
    now_row = await one(conn, _Holder, "job_snapshot", {"job_id": job.job_id,
                                                         "lease_token": job.lease.lease_token})
    holder = now_row.collector_uuid if now_row else None
    details = {"attempted": what,
               "current_holder": str(holder) if holder is not None else None,
               "current_status": now_row.status if now_row else "gone"}
    async with conn.transaction():
        await events.record(conn, EventType.STALE_FINALIZE_REJECTED, details=details,
                            **me.event_fields(), **job_event_fields(job))
    return Outcome(False, EventType.STALE_FINALIZE_REJECTED)


@dataclass(frozen=True, slots=True)
class NextClaim:
    """The collector's next claim, made in the success's own transaction when it would claim
    anyway (the fixed order: finalize first, then the claim). ``start``: its slot is open now,
    so it is running at once (no gate: the bench's cycle). ``gate``: the caller's timings; the
    claim is then made inside one admission on the server (admission_succeed in
    db/functions/admission.sql): nothing is claimed unless the egress opens within the claim
    horizon, and then its request is counted in its slot in the same commit
    (Outcome.next_slot_at / next_ledger_id)."""

    lane: Lane
    lease_seconds: float
    soldier_id: int | None = None
    start: bool = False
    gate: SendTimings | None = None


async def succeed(conn: Conn, me: CollectorRef, job: ClaimedJob, attempt: Attempt,
                  policy: Policy, write_stats: StatsWriter | None = None,
                  then: NextClaim | None = None) -> Outcome:
    """Commit the caller's statistics, the current state, the succeeded event and the job's
    removal together (and, with ``then``, the collector's next claim); nothing at all when the
    lease is no longer ours. Without statistics it is one call and one commit."""
    params = {"job_id": job.job_id, "collector_uuid": job.lease.collector_uuid,
              "lease_token": job.lease.lease_token, "http_status": attempt.http_status,
              "duration_ms": attempt.duration_ms,
              "details": Jsonb(attempt.details) if attempt.details else None,
              "freshness_seconds": policy.freshness(job.stats_resource)
              if job.kind.has_state else 0.0,
              "next": then is not None, "lane": then.lane.value if then else None,
              "lease_seconds": then.lease_seconds if then else None,
              "soldier_id": then.soldier_id if then else None,
              "start": then.start if then else False,
              "strict": write_stats is not None} | _timings(then)
    try:
        if write_stats is None:
            return _succeeded(await _finalize_success(conn, me, params))
        return await _with_stats(conn, me, job, params, write_stats)
    except _LeaseLost:
        return await _reject(conn, me, job, "succeed")


def _timings(then: NextClaim | None) -> dict[str, float]:
    """The admission's timings of a success that continues behind a gate (none otherwise)."""
    gate = then.gate if then else None
    if gate is None:
        return {}
    return {"margin": gate.margin, "ahead": gate.ahead, "connect_lead": gate.connect_lead}


def _query(params: dict[str, Any]) -> str:
    return "finalize_success_admitted" if "margin" in params else "finalize_success"


@dataclass(frozen=True, slots=True)
class _Success:
    """A success's row (finalize_success): None `finished` when the lease was not ours."""

    finished: int | None
    next_job: ClaimedJob | None  # claimed with the success
    gate_wait_until: datetime | None
    slot_at: datetime | None
    ledger_id: int | None  # its request counted in slot_at


def _success_rows(collector_uuid: UUID) -> BaseRowFactory[_Success]:
    return mapped(lambda r: _Success(
        r["finished"], ClaimedJob.from_row(r, collector_uuid) if r["job_id"] is not None
        else None, r["gate_wait_until"], r["slot_at"], r["ledger_id"]))


def _succeeded(row: _Success) -> Outcome:
    """The success's row as its outcome: the next job claimed (and counted) with it, if any."""
    counted = row.next_job is not None and row.ledger_id is not None
    return Outcome(True, EventType.SUCCEEDED, next_job=row.next_job,
                   gate_wait_until=row.gate_wait_until,
                   next_slot_at=row.slot_at if counted else None,
                   next_ledger_id=row.ledger_id if counted else None)


async def _with_stats(conn: Conn, me: CollectorRef, job: ClaimedJob, params: dict[str, Any],
                      write_stats: StatsWriter) -> Outcome:
    """The statistics, then the success (and the next job's claim and count), one transaction
    begun in the message of its first statement and whose COMMIT goes in the success's own
    message (a round trip each fewer): the gate and fleet budget rows the count
    locks never wait on a round trip to this collector. A lease lost meanwhile raises in the
    success (BF401, `strict`): the COMMIT is not run and everything rolls back."""
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:  # it would COMMIT the caller's
        raise RuntimeError("a success with statistics is a transaction of its own")
    try:
        now = await _lock_now(conn, params)
        await write_stats(conn, job, now)
        row = await one_then_commit(conn, _success_rows(me.collector_uuid), _query(params),
                                    params)
    except BaseException as exc:
        await _rollback(conn)
        if isinstance(exc, psycopg.Error) and exc.sqlstate == LEASE_LOST:
            raise _LeaseLost from exc
        raise
    assert row is not None and row.finished is not None  # else it raised
    return _succeeded(row)


async def _rollback(conn: Conn) -> None:
    if not conn.closed and conn.info.transaction_status in (pq.TransactionStatus.INTRANS,
                                                             pq.TransactionStatus.INERROR):
        await conn.execute("ROLLBACK")


class _Now(NamedTuple):
    now: datetime


async def _lock_now(conn: Conn, params: dict[str, Any]) -> datetime:
    """BEGIN, and the lease is still ours: the database's time (one message)."""
    row = await begin_then_one(conn, _Now, "lock_owned_job_now", params)
    if row is None:
        raise _LeaseLost
    return row.now


async def _finalize_success(conn: Conn, me: CollectorRef, params: dict[str, Any]) -> _Success:
    row = await one(conn, _success_rows(me.collector_uuid), _query(params), params)
    if row is None or row.finished is None:
        raise _LeaseLost
    return row


async def fail(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass, message: str,
               attempt: Attempt, policy: Policy, *, hold_seconds: float | None = None
               ) -> Outcome:
    """Record a classified failure: retry later (job back to pending at next_attempt_at) or park
    the resource as unavailable (job removed). Statistics are never touched. With
    ``hold_seconds`` (an open fleet circuit, gates/circuit.py) nothing is parked: the job is
    held that long at most and the circuit's probes release it sooner."""
    try:
        async with conn.transaction():
            held = await _lock(conn, job, ["claimed", "running"])
            now = await _now(conn)
            failures = await _failures(conn, job) + 1
            await events.record(  # the row that ends the lease carries its claim and start
                conn, EventType.FAILED, result=error.value, error_class=error.value,
                error_message=message, http_status=attempt.http_status,
                duration_ms=attempt.duration_ms, details=attempt.details,
                claimed_at=held.claimed_at, started_at=held.started_at,
                **me.event_fields(), **job_event_fields(job))
            if (hold_seconds is None
                    and is_terminal(failures, error, policy, lookup=not job.kind.has_state)
                    and await _parking_streak(conn, job, error, policy)):
                return await _park(conn, me, job, error, message, now)
            if hold_seconds is not None:  # the circuit (gates/circuit.py) holds this job
                await execute(conn, "circuit_hold_job", {
                    "job_id": job.job_id, "lane": job.lane.value, "resource": job.resource})
            return await _retry(conn, me, job, error, message, now, failures, policy,
                                hold_seconds)
    except _LeaseLost:
        return await _reject(conn, me, job, "fail")


async def _failures(conn: Conn, job: ClaimedJob) -> int:
    if not job.kind.has_state:  # a look-up: its own attempts
        return job.attempt_count - 1
    row = await one(conn, _Failures, "state_failures", {"soldier_id": job.soldier_id,
                                                         "resource": job.resource})
    return row.consecutive_failures if row else 0


async def _parking_streak(conn: Conn, job: ClaimedJob, error: ErrorClass,
                          policy: Policy) -> bool:
    """A not-found parks at once; consecutive failures park only when each of the last
    max_consecutive_failures attempts failed with a parking class (ErrorClass.parks): an
    outage's failures among them (5xx, redirects, timeouts ...) never count toward parking."""
    if not error.retryable or not job.kind.has_state:
        return True
    n = policy.max_consecutive_failures
    row = await one(conn, _Parking, "parking_streak", {
        "soldier_id": job.soldier_id, "resource": job.resource, "n": n,
        "classes": [c.value for c in ErrorClass if c.parks]})
    return row is not None and row.parking >= n


async def _park(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass, message: str,
                now: datetime) -> Outcome:
    if job.kind.has_state:
        await execute(conn, "state_unavailable", {
            "job_id": job.job_id, "lease_token": job.lease.lease_token, "now": now,
            "error_class": error.value, "error_message": message[:500]})
    lease = {"job_id": job.job_id, "lease_token": job.lease.lease_token}
    await execute(conn, "job_note_error", lease | {"error_class": error.value,
                                                   "error_message": message[:500]})
    await execute(conn, "delete_job", lease)
    await events.record(conn, EventType.UNAVAILABLE, result=error.value,
                        error_class=error.value, **me.event_fields(), **job_event_fields(job))
    return Outcome(True, EventType.UNAVAILABLE)


async def _retry(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass,
                 message: str, now: datetime, failures: int, policy: Policy,
                 hold_seconds: float | None = None) -> Outcome:
    delay = hold_seconds if hold_seconds is not None else retry_delay(failures, error,
                                                                      job.lane, policy)
    next_at = now + timedelta(seconds=delay)
    if job.kind.has_state:
        await execute(conn, "state_retry", {
            "job_id": job.job_id, "lease_token": job.lease.lease_token, "now": now,
            "next_attempt_at": next_at, "error_class": error.value,
            "error_message": message[:500]})
    await execute(conn, "job_retry", {
        "job_id": job.job_id, "lease_token": job.lease.lease_token, "eligible_at": next_at,
        "error_class": error.value, "error_message": message[:500]})
    await events.record(conn, EventType.RETRY_SCHEDULED, result=error.value,
                        error_class=error.value, details={"retry_in_seconds": round(delay, 1),
                                                         "consecutive_failures": failures,
                                                         "circuit_hold": hold_seconds is not None},
                        **me.event_fields(), **job_event_fields(job))
    return Outcome(True, EventType.RETRY_SCHEDULED, next_at)
