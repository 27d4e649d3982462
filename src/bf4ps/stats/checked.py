"""The statistics writer a collector hands to finalize.succeed: the plausibility check first
(plausible.py, on the stored values, in the same fenced transaction), then the write, then the
raw answer into the archive (archive.py) and the events of a reset or an unconfirmed first
answer. An implausible answer raises plausible.Implausible: the transaction rolls back and
nothing of the answer is stored."""

from __future__ import annotations

from datetime import datetime

from bf4ps.battlelog.models import Parsed
from bf4ps.db.connect import Conn
from bf4ps.domain import Resource
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.queue.finalize import StatsWriter
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, job_event_fields
from bf4ps.stats import archive, plausible
from bf4ps.stats.store import writer_for


def checked_writer(me: CollectorRef, resource: Resource, parsed: Parsed, policy: Policy,
                   raw: archive.RawAnswer | None) -> StatsWriter:
    write = writer_for(resource, parsed)

    async def write_stats(conn: Conn, job: ClaimedJob, now: datetime) -> None:
        if job.soldier_id is None:
            raise ValueError(f"job {job.job_id} has no soldier to store statistics for")
        accepted = await plausible.judge(conn, job, resource, parsed, now, policy)
        await write(conn, job, now)
        if raw is not None:
            await archive.keep(conn, job.soldier_id, raw, archive.STORED,
                               policy.archive_answers_kept)
        if accepted.reset is not None:
            await events.record(conn, EventType.STATS_RESET, result="reset",
                                details=accepted.reset.details(), **me.event_fields(),
                                **job_event_fields(job))
        if accepted.unconfirmed:
            await events.record(conn, EventType.STATS_UNCONFIRMED, result="all_zero",
                                **me.event_fields(), **job_event_fields(job))

    return write_stats
