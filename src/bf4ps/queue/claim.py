"""Claim (one call), claimed → running (a heap-only update), lease renewal, release (one
statement with its event), and the reaper of expired leases."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Present, all_rows, execute, one
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Lease


def _lease_params(lease: Lease) -> dict[str, Any]:
    return {"job_id": lease.job_id, "collector_uuid": lease.collector_uuid,
            "lease_token": lease.lease_token}


async def claim(conn: Conn, me: CollectorRef, lease_seconds: float,
                *, soldier_id: int | None = None, classes: list[str] | None = None,
                start: bool = False) -> ClaimedJob | None:
    """Claim one job of my lane (or of one soldier, for chaining; or of some budget classes),
    reclaiming an expired lease first (lease_expired + reclaimed). With ``start`` (the slot is
    open now) the job is running at once. One call, one commit."""
    return await one(conn, ClaimedJob.rows(me.collector_uuid), "claim_job", {
        "collector_uuid": me.collector_uuid, "lane": me.lane.value,
        "lease_seconds": lease_seconds, "soldier_id": soldier_id, "classes": classes,
        "start": start,
    })


@dataclass(frozen=True, slots=True)
class Started:
    claimed_at: datetime
    started_at: datetime
    lease_expires_at: datetime


async def start(conn: Conn, job: ClaimedJob, lease_seconds: float,
                started_at: datetime) -> Started | None:
    """claimed → running at `started_at` (the slot the request is sent in), a heap-only update
    with no event (the instant travels on the row that ends the lease). None: the lease is no
    longer ours."""
    params = _lease_params(job.lease) | {"lease_seconds": lease_seconds,
                                          "started_at": started_at}
    return await one(conn, Started, "start_job", params)


class _Renewed(NamedTuple):
    lease_expires_at: datetime


class _Job(NamedTuple):
    job_id: int


async def reslot(conn: Conn, job: ClaimedJob, lease_seconds: float, started: Started,
                 sent_at: datetime) -> None:
    """The request went out in a later slot than its start recorded: the job's start moves to
    `sent_at` (the interactive part's trigger moves its request's first request along).
    Nothing changes once the lease is no longer ours."""
    await execute(conn, "reslot_job", _lease_params(job.lease) | {
        "lease_seconds": lease_seconds, "sent_at": sent_at})


async def renew(conn: Conn, lease: Lease, lease_seconds: float) -> datetime | None:
    """Extend the lease; None when it is no longer ours (the caller must abandon the job)."""
    row = await one(conn, _Renewed, "renew_lease", _lease_params(lease) | {
        "lease_seconds": lease_seconds})
    return row.lease_expires_at if row else None


async def release(conn: Conn, me: CollectorRef, job: ClaimedJob, why: str) -> bool:
    """Give a claimed (not yet running) job back to the queue, e.g. on drain or shutdown; the
    release and its event are one statement."""
    return await one(conn, Present, "release_job",
                     _lease_params(job.lease) | {"why": why}) is not None


async def expire_abandoned(conn: Conn, me: CollectorRef) -> list[int]:
    """End the leases this collector's previous process left behind (see queue.sql); the ids
    of their jobs."""
    rows = await all_rows(conn, _Job, "expire_abandoned", {"collector_uuid": me.collector_uuid})
    return [r.job_id for r in rows]


async def reap_expired(conn: Conn, limit: int = 100) -> int:
    """Expired leases back to the queue (with lease_expired + reclaimed events); the leases
    reaped. Claims also reclaim expired leases inline, so correctness never depends on this."""
    return len(await all_rows(conn, Present, "reap_expired", {"limit": limit}))
