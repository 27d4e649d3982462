"""When will a request's first Battlelog request be sent? A best-effort estimate from measured
throughput and the work ahead of it (the submission stores its eta_at from here; the request
status and the submission's answer in views/ read it live).

The interactive lane serves its jobs one at a time per egress, FIFO by rank, each at a gate
slot. A job costs max(its requests x the lane's interval, its measured started -> succeeded
time + the connect lead); the request's first job starts when the lane is free (its next slot,
after the jobs held now, never before the idle collector's next poll) plus the cost of each
pending job ahead. The interval and the slot are the server's pacing rule (interactive_pacing).
Defaults stand in until measured (docs/architecture.md, "Interactive requests and their
estimate")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one_row
from bf4ps.domain import JobKind
from bf4ps.settings import SendTimings
from bf4ps.stats.soldiers import ALL_RESOURCES

# Until measured: seconds from started to succeeded, and physical requests per job.
DEFAULT_DURATION: dict[str, float] = {
    JobKind.DETAILED: 0.6, JobKind.PROFILE: 1.2, JobKind.WEAPONS: 1.6, JobKind.VEHICLES: 1.3,
    JobKind.LOOKUP: 1.0}
DEFAULT_REQUESTS: dict[str, float] = {
    JobKind.DETAILED: 1.0, JobKind.PROFILE: 2.0, JobKind.WEAPONS: 1.0, JobKind.VEHICLES: 1.0,
    JobKind.LOOKUP: 1.0}
OVERHEAD_SECONDS = 0.05  # finalize + next claim, when a job outlasts the gate interval
MEASURE_WINDOW_SECONDS = 6 * 3600.0
MEASURE_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Costs:
    """The lane's service model: gate interval and per-resource job cost."""

    interval: float
    next_free: datetime
    now: datetime
    serving: bool
    durations: dict[str, float] = field(default_factory=dict)
    requests: dict[str, float] = field(default_factory=dict)
    measured: bool = False
    lead: float = 0.0  # the connect lead: a slot is at least this long after its claim

    def duration(self, resource: str) -> float:
        return self.durations.get(resource, DEFAULT_DURATION.get(resource, 1.0))

    def requests_per_job(self, resource: str) -> float:
        return self.requests.get(resource, DEFAULT_REQUESTS.get(resource, 1.0))

    def job_cost(self, resource: str) -> float:
        return max(self.requests_per_job(resource) * self.interval,
                   self.done_after(resource))

    def done_after(self, resource: str) -> float:
        """From a job's start to the earliest slot of its collector's next job."""
        return self.duration(resource) + OVERHEAD_SECONDS + self.lead


@dataclass(frozen=True, slots=True)
class Estimate:
    position: int  # jobs served before the request's first job
    eta_at: datetime  # when its first Battlelog request should be sent
    seconds: float  # from now
    per_job_seconds: float  # the lane's typical job cost (gate interval or duration)
    measured: bool  # from measured throughput (else defaults)
    serving: bool  # an interactive collector is healthy and not drained
    done_at: datetime  # when its last job should be done (best effort: see finish_at)


class _Duration(NamedTuple):
    resource: str
    mean_seconds: Decimal | None  # avg of extract(epoch ...): numeric


class _Requests(NamedTuple):
    resource: str
    requests: int
    jobs: int


class _Job(NamedTuple):
    """One of the request's jobs, in queue order (interactive_jobs_in_order)."""

    job_id: int
    rank: datetime
    status: str
    resource: str
    started_at: datetime | None


class _Ahead(NamedTuple):
    resource: str
    n: int


class _Leased(NamedTuple):
    """A leased job ahead of the request, with its requests counted so far."""

    resource: str
    requests_counted: int
    claimed_at: datetime
    started_at: datetime | None


@dataclass(frozen=True, slots=True)
class LanePacing:
    """The interactive lane's pacing as the server reads its rule (interactive_pacing)."""

    interval_seconds: float  # the lane's egresses together (rates add up)
    next_free: datetime  # their earliest slot
    now: datetime
    serving: bool  # an interactive collector is healthy and not drained
    egresses: list[str]


async def pacing(conn: Conn, timings: SendTimings) -> LanePacing:
    """The lane's pacing by the admission's own rule, asked of the server."""
    return await one_row(conn, LanePacing, "interactive_pacing", {
        "margin": timings.margin, "connect_lead": timings.connect_lead,
        "seed_interval": timings.seed_interval})


async def costs(conn: Conn, timings: SendTimings) -> Costs:
    pace = await pacing(conn, timings)
    durations = {r.resource: float(r.mean_seconds) for r in await all_rows(
        conn, _Duration, "interactive_measured_durations",
        {"window_seconds": MEASURE_WINDOW_SECONDS, "limit": MEASURE_LIMIT})
        if r.mean_seconds is not None}
    requests: dict[str, float] = {}
    if pace.egresses:
        requests = {r.resource: r.requests / max(1, r.jobs) for r in await all_rows(
            conn, _Requests, "interactive_measured_requests",
            {"egresses": pace.egresses, "window_seconds": MEASURE_WINDOW_SECONDS})}
    return Costs(pace.interval_seconds, pace.next_free, pace.now, pace.serving, durations,
                 requests, bool(durations), timings.connect_lead)


async def estimate(conn: Conn, request_id: UUID, timings: SendTimings,
                   model: Costs | None = None) -> Estimate | None:
    """The request's place in the interactive queue and when its first request should go out;
    None when it has no job left in the queue."""
    jobs = await all_rows(conn, _Job, "interactive_jobs_in_order", {"request_id": request_id})
    if not jobs:
        return None
    first = jobs[0]
    c = model or await costs(conn, timings)
    typical = c.job_cost("detailed")
    resources = [j.resource for j in jobs]
    if first.status != "pending":
        at = first.started_at or max(c.now, c.next_free)
        return Estimate(0, at, max(0.0, (at - c.now).total_seconds()), typical, c.measured,
                        c.serving, finish_at(c, at, resources))
    params = {"rank": first.rank, "job_id": first.job_id, "horizon_seconds": 0.0}
    pending = await all_rows(conn, _Ahead, "interactive_pending_ahead", params)
    leased = await all_rows(conn, _Leased, "interactive_leased_ahead", params)
    free_at = _free_at(c, leased, timings)
    ahead = sum(r.n for r in pending)
    eta_at = free_at + timedelta(seconds=sum(r.n * c.job_cost(r.resource) for r in pending))
    return Estimate(ahead + len(leased), eta_at, max(0.0, (eta_at - c.now).total_seconds()),
                    typical, c.measured, c.serving, finish_at(c, eta_at, resources))


def finish_at(c: Costs, first_start: datetime, resources: list[str]) -> datetime:
    """When the last of the request's jobs (in claim order, the first starting at first_start)
    should be done: one collector chains them, each starting a job cost after the one before.
    A lookup is followed by the four resources of the soldier it finds. Never before now."""
    if resources[-1] == JobKind.LOOKUP:
        resources = [*resources, *ALL_RESOURCES]
    seconds = sum(c.job_cost(r) for r in resources[:-1]) + c.duration(resources[-1])
    return max(c.now, first_start + timedelta(seconds=seconds))


def _free_at(c: Costs, leased: list[_Leased], timings: SendTimings) -> datetime:
    """When the lane can start the next pending job."""
    free_at = c.next_free
    if not leased:  # an idle collector finds new work at its next poll, for a slot the
        # connect lead after that
        return max(free_at, c.now + timedelta(seconds=timings.idle_poll / 2 + c.lead))
    for job in leased:
        resource = job.resource
        left = max(0.0, c.requests_per_job(resource) - job.requests_counted)
        free_at += timedelta(seconds=left * c.interval)
        began = job.started_at or max(c.now, job.claimed_at)
        free_at = max(free_at, began + timedelta(seconds=c.done_after(resource)))
    return free_at
