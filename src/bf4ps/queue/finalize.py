"""Fenced finalization. Success commits the caller's stats writes, the collection state, the
`succeeded` event and the job's removal in one transaction, only while the caller still owns an
unexpired lease; a failure is classified, backs off or parks, and never touches statistics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import ErrorClass
from bf4ps.policy import Policy
from bf4ps.queue import events
from bf4ps.queue.backoff import is_terminal, retry_delay
from bf4ps.queue.events import EventType
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome, job_event_fields

StatsWriter = Callable[[Conn, ClaimedJob, datetime], Awaitable[None]]


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


async def _lock(conn: Conn, job: ClaimedJob, statuses: list[str]) -> None:
    lease = job.lease
    cur = await conn.execute(q("lock_owned_job"), {
        "job_id": lease.job_id, "collector_uuid": lease.collector_uuid,
        "lease_token": lease.lease_token, "statuses": statuses})
    if await cur.fetchone() is None:
        raise _LeaseLost


async def _reject(conn: Conn, me: CollectorRef, job: ClaimedJob, what: str) -> Outcome:
    cur = await conn.execute(q("job_snapshot"), {"job_id": job.job_id})
    now_row = await cur.fetchone()
    details = {"attempted": what,
               "current_token": str(now_row["lease_token"]) if now_row else None,
               "current_status": now_row["status"] if now_row else "gone"}
    async with conn.transaction():
        await events.record(conn, EventType.STALE_FINALIZE_REJECTED, details=details,
                            **me.event_fields(), **job_event_fields(job))
    return Outcome(False, EventType.STALE_FINALIZE_REJECTED)


async def _request_progress(conn: Conn, job: ClaimedJob, final_status: str,
                            message: str | None = None) -> None:
    if job.request_id is not None:
        await conn.execute(q("request_progress"), {
            "request_id": job.request_id, "final_status": final_status, "message": message})


async def succeed(conn: Conn, me: CollectorRef, job: ClaimedJob, attempt: Attempt,
                  policy: Policy, write_stats: StatsWriter | None = None) -> Outcome:
    """Commit the caller's statistics, the current state, the succeeded event and the job's
    removal together; nothing at all when the lease is no longer ours."""
    params = {"job_id": job.job_id, "collector_uuid": job.lease.collector_uuid,
              "lease_token": job.lease.lease_token, "http_status": attempt.http_status,
              "duration_ms": attempt.duration_ms,
              "details": Jsonb(attempt.details) if attempt.details else None,
              "freshness_seconds": 0.0 if job.is_lookup else policy.freshness(
                  job.stats_resource)}
    try:
        if write_stats is None:
            await _finalize_success(conn, params)
        else:
            async with conn.transaction():
                now = await _lock_now(conn, params)
                await write_stats(conn, job, now)
                await _finalize_success(conn, params)
    except _LeaseLost:
        return await _reject(conn, me, job, "succeed")
    return Outcome(True, EventType.SUCCEEDED)


async def _lock_now(conn: Conn, params: dict[str, Any]) -> datetime:
    cur = await conn.execute(q("lock_owned_job_now"), params)
    row = await cur.fetchone()
    if row is None:
        raise _LeaseLost
    now = row["now"]
    assert isinstance(now, datetime)
    return now


async def _finalize_success(conn: Conn, params: dict[str, Any]) -> None:
    cur = await conn.execute(q("finalize_success"), params)
    if await cur.fetchone() is None:
        raise _LeaseLost


SEARCH_UNAVAILABLE_NOTE = "search unavailable, retried later"


async def fail(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass, message: str,
               attempt: Attempt, policy: Policy, *, hold_seconds: float | None = None
               ) -> Outcome:
    """Record a classified failure: retry later (job back to pending at next_attempt_at) or park
    the resource as unavailable (job removed). Statistics are never touched. With
    ``hold_seconds`` (an open fleet circuit, gates/circuit.py) nothing is parked: the job is
    held that long at most and the circuit's probes release it sooner."""
    try:
        async with conn.transaction():
            await _lock(conn, job, ["claimed", "running"])
            now = await _now(conn)
            failures = await _failures(conn, job) + 1
            await events.record(
                conn, EventType.FAILED, result=error.value, error_class=error.value,
                error_message=message, http_status=attempt.http_status,
                duration_ms=attempt.duration_ms, details=attempt.details,
                **me.event_fields(), **job_event_fields(job))
            if hold_seconds is None and is_terminal(failures, error, policy):
                return await _park(conn, me, job, error, message, now)
            if hold_seconds is not None:  # the circuit (gates/circuit.py) holds this job
                await conn.execute(q("circuit_hold_job"), {
                    "job_id": job.job_id, "lane": job.lane.value, "resource": job.resource})
            return await _retry(conn, me, job, error, message, now, failures, policy,
                                hold_seconds)
    except _LeaseLost:
        return await _reject(conn, me, job, "fail")


async def _failures(conn: Conn, job: ClaimedJob) -> int:
    if job.is_lookup:
        return job.attempt_count - 1
    cur = await conn.execute(q("state_failures"), {"soldier_id": job.soldier_id,
                                                   "resource": job.resource})
    row = await cur.fetchone()
    return int(str(row["consecutive_failures"])) if row else 0


async def _park(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass, message: str,
                now: datetime) -> Outcome:
    if not job.is_lookup:
        await conn.execute(q("state_unavailable"), {
            "soldier_id": job.soldier_id, "resource": job.resource, "now": now,
            "error_class": error.value, "error_message": message[:500]})
    await conn.execute(q("delete_job"), {"job_id": job.job_id,
                                         "lease_token": job.lease.lease_token})
    await events.record(conn, EventType.UNAVAILABLE, result=error.value,
                        error_class=error.value, **me.event_fields(), **job_event_fields(job))
    final = "not_found" if job.is_lookup else "done"
    await _request_progress(conn, job, final, message if job.is_lookup else None)
    return Outcome(True, EventType.UNAVAILABLE)


async def _retry(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass,
                 message: str, now: datetime, failures: int, policy: Policy,
                 hold_seconds: float | None = None) -> Outcome:
    delay = hold_seconds if hold_seconds is not None else retry_delay(failures, error,
                                                                      job.lane, policy)
    if job.is_lookup and job.request_id is not None and error is ErrorClass.UNRECOGNIZED:
        await conn.execute(q("request_note"), {"request_id": job.request_id,
                                               "message": SEARCH_UNAVAILABLE_NOTE})
    next_at = now + timedelta(seconds=delay)
    if not job.is_lookup:
        await conn.execute(q("state_retry"), {
            "soldier_id": job.soldier_id, "resource": job.resource, "now": now,
            "next_attempt_at": next_at, "error_class": error.value,
            "error_message": message[:500]})
    await conn.execute(q("job_retry"), {
        "job_id": job.job_id, "lease_token": job.lease.lease_token, "eligible_at": next_at,
        "error_class": error.value, "error_message": message[:500]})
    await events.record(conn, EventType.RETRY_SCHEDULED, result=error.value,
                        error_class=error.value, details={"retry_in_seconds": round(delay, 1),
                                                         "consecutive_failures": failures,
                                                         "circuit_hold": hold_seconds is not None},
                        **me.event_fields(), **job_event_fields(job))
    return Outcome(True, EventType.RETRY_SCHEDULED, next_at)
