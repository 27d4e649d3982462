"""Resolving a lookup job: the interactive collector searched Battlelog for a name; this picks
the persona (`found`: none is a not-found), then, as the writer of the collector's fenced
success transaction (`Resolution`), records the soldier and turns the request into collection
work, so all of it commits (or not) with the job's removal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from bf4ps.battlelog.models import SearchHit
from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute, one
from bf4ps.domain import JobKind, Platform, SourceType
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.interactive import demand
from bf4ps.interactive.demand import KnownSoldier
from bf4ps.policy import Policy
from bf4ps.queue.jobs import ClaimedJob
from bf4ps.stats import soldiers

SEARCH_UNAVAILABLE_NOTE = "search unavailable, retried later"
"""What a look-up's request says while Battlelog's search answers in a way BF4PS does not
recognize (written by the request_lookup_waits trigger (db/schema.sql), which owns the text;
tests/system/test_search_session.py checks the two agree)."""


def pick(hits: tuple[SearchHit, ...], name: str, platform: Platform) -> SearchHit | None:
    """The hit on the wanted platform whose name is exactly `name` (case-insensitive)."""
    wanted = name.strip().casefold()
    for hit in hits:
        if hit.platform_int == platform.battlelog_int and hit.name.casefold() == wanted:
            return hit
    return None


def found(job: ClaimedJob, hits: tuple[SearchHit, ...]) -> SearchHit | None:
    """The lookup job's soldier among the search's hits (None: not found)."""
    if job.lookup_name is None or job.lookup_platform is None or job.request_id is None:
        raise ValueError(f"job {job.job_id} is not a lookup job")
    return pick(hits, job.lookup_name, job.lookup_platform)


def not_found_message(job: ClaimedJob) -> str:
    platform = job.lookup_platform.value if job.lookup_platform else "?"
    return f"no BF4 soldier named {job.lookup_name!r} on {platform}"


@dataclass(slots=True)
class Resolution:
    """The writer of a lookup's success (queue.finalize.StatsWriter): records `hit` as the job's
    soldier; `soldier_id` says which once it ran."""

    hit: SearchHit
    policy: Policy
    soldier_id: int | None = None

    async def __call__(self, conn: Conn, job: ClaimedJob, now: datetime) -> None:
        self.soldier_id = await resolve_lookup(conn, job, self.hit, self.policy)


class _Attached(NamedTuple):
    created_at: datetime


async def resolve_lookup(conn: Conn, job: ClaimedJob, hit: SearchHit, policy: Policy) -> int:
    """The soldier id of `hit` (upserted, source battlelog, seen now), with the job's request
    attached to it and its stale resources enqueued as interactive jobs of that request (ranked
    at the request's submission, so it keeps its place). Writes a lookup_resolved event. Runs
    in the caller's transaction."""
    if job.lookup_platform is None or job.request_id is None:
        raise ValueError(f"job {job.job_id} is not a lookup job")
    now = datetime.now(UTC)
    up = await soldiers.upsert(conn, soldiers.Sighting(
        hit.persona_id, job.lookup_platform, hit.name, now, now, SourceType.BATTLELOG),
        lease=(job.job_id, job.lease.lease_token))
    target = KnownSoldier(up.soldier_id, hit.persona_id, job.lookup_platform, hit.name)
    await demand.lock(conn, f"soldier:{target.soldier_id}")
    lease = {"job_id": job.job_id, "lease_token": job.lease.lease_token,
             "soldier_id": target.soldier_id}
    row = await one(conn, _Attached, "lookup_request_resolved", lease | {"resources": None})
    since = row.created_at if row else now
    planned = await demand.plan(conn, target, job.request_id, since, policy)
    await execute(conn, "lookup_request_resolved", lease | {
        "resources": list(planned.resources)})
    await events.record(
        conn, EventType.LOOKUP_RESOLVED, job_id=job.job_id, soldier_id=target.soldier_id,
        collector_uuid=job.lease.collector_uuid, lease_token=job.lease.lease_token,
        persona_id=target.persona_id, platform=target.platform.value, resource=JobKind.LOOKUP.value,
        lane=job.lane.value, priority_class=job.priority_class.value, result="found",
        details={"name": hit.name, "new_soldier": up.inserted,
                 "resources": list(planned.resources), "jobs_created": planned.created})
    return target.soldier_id
