"""Where a request stands, for its status page, the API and the CLI: its status, its place in
the interactive queue and a live estimate while it waits, and per resource the job and
collection state (looked up by soldier + resource, so work coalesced into another request still
shows). Also the answer to a submission: what was submitted, with the same live estimate."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, NamedTuple
from uuid import UUID

from bf4ps.capacity import eta
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.domain import JobKind, Platform
from bf4ps.interactive.submit import Submission
from bf4ps.settings import SendTimings
from bf4ps.stats.soldiers import ALL_RESOURCES
from bf4ps.views.fields import BattlelogUrl, PersonaId, PlatformName, SoldierName
from bf4ps.views.soldier import Model

OPEN = ("queued", "collecting")
NOTHING_DUE = "every resource is fresh"  # the message of a request that found nothing due
RequestState = Literal["queued", "collecting", "done", "not_found", "failed"]
Step = Literal["lookup", "detailed", "profile", "weapons", "vehicles"]  # JobKind (a test checks)


class StepProgress(Model):
    """One step of a request (the look-up, then each resource)."""

    resource: Step
    job_status: Literal["pending", "claimed", "running"] | None  # None: no live job
    attempts: int
    job_error_class: str | None  # the last failed attempt of the live job
    retry_at: datetime | None  # a pending job waiting for its backoff
    state_status: str | None  # collection_state status
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    last_error_class: str | None


class RequestSoldier(Model):
    soldier_id: int
    persona_id: int | None
    name: str | None
    platform: Platform
    url: str


class RequestStatus(Model):
    request_id: UUID
    status: RequestState
    platform: Platform
    lookup_name: str | None
    soldier: RequestSoldier | None
    created_at: datetime
    eta_at: datetime | None  # the estimate made at submission
    first_request_at: datetime | None
    finished_at: datetime | None
    message: str | None
    now: datetime
    position: int | None  # the live estimate, while the request waits
    estimated_start_at: datetime | None
    estimated_seconds: float | None
    estimated_done_at: datetime | None
    estimated_done_seconds: float | None
    estimate_measured: bool | None
    collector_serving: bool | None
    resources: list[StepProgress]
    refreshable_at: datetime | None  # nothing was due: when a refresh would collect again

    @property
    def is_open(self) -> bool:
        return self.status in OPEN


class SubmitRequest(Model):
    """A submission (POST /api/requests): a Battlelog soldier URL, or a name and/or a persona
    id with a platform."""

    name: SoldierName | None = None
    platform: PlatformName | None = None
    persona_id: PersonaId | None = None
    url: BattlelogUrl | None = None


class SubmissionView(Model):
    """The answer to a submission (the API's 202 body, `bf4ps request --json`)."""

    request_id: UUID
    status: RequestState
    soldier_id: int | None
    lookup_name: str | None
    eta_at: datetime | None  # when the first Battlelog request should be sent
    position: int | None  # interactive jobs ahead of this request's first job
    jobs_created: int  # the rest were coalesced into or promoted from existing work
    resources: list[Step]  # what the request collects ("lookup" first for unknown names)
    reused: bool  # an open request for the same soldier/name was returned instead
    collector_serving: bool | None  # an interactive collector is online (None: nothing waits)
    estimated_done_at: datetime | None  # when everything should be collected (best effort)
    status_url: str
    api_url: str


async def submission(conn: Conn, sub: Submission, gate: SendTimings) -> SubmissionView:
    """The submission's answer with its estimate: the one made in its transaction, or (for a
    reused open request) a live one."""
    est = sub.estimate
    if est is None and sub.status in OPEN:
        est = await eta.estimate(conn, sub.request_id, gate)
    return SubmissionView(
        request_id=sub.request_id, status=sub.status, soldier_id=sub.soldier_id,
        lookup_name=sub.lookup_name, eta_at=est.eta_at if est else sub.eta_at,
        position=est.position if est else None, jobs_created=sub.created,
        resources=list(sub.resources),
        reused=sub.reused, collector_serving=est.serving if est else None,
        estimated_done_at=est.done_at if est else None,
        status_url=f"/requests/{sub.request_id}", api_url=f"/api/requests/{sub.request_id}")


class _Request(NamedTuple):
    """An interactive request with its soldier (interactive_request_get)."""

    request_id: UUID
    soldier_id: int | None
    lookup_name: str | None
    platform: str
    status: str
    resources: list[str]
    eta_at: datetime | None
    first_request_at: datetime | None
    finished_at: datetime | None
    message: str | None
    created_at: datetime
    persona_id: int | None
    current_name: str | None
    now: datetime


class _LookupJob(NamedTuple):
    status: str
    attempt_count: int
    last_error_class: str | None
    eligible_at: datetime


class _Step(NamedTuple):
    """One resource of a request: its job, if any, and its collection state."""

    resource: str
    job_status: str | None
    attempt_count: int | None
    job_error_class: str | None
    eligible_at: datetime | None
    state_status: str | None
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    last_error_class: str | None


async def request_status(conn: Conn, request_id: UUID, gate: SendTimings,
                         min_age_seconds: float | None = None) -> RequestStatus | None:
    """`min_age_seconds` (the policy's interactive minimum age) lets a request that found
    nothing due say when the soldier becomes refreshable."""
    row = await one(conn, _Request, "interactive_request_get", {"request_id": request_id})
    if row is None:
        return None
    status = row.status
    est = await eta.estimate(conn, request_id, gate) if status in OPEN else None
    resources = await _resources(conn, row)
    refreshable = None
    if min_age_seconds is not None and row.message == NOTHING_DUE:
        refreshable = refreshable_at(resources, min_age_seconds)
    platform = Platform(row.platform)
    now = row.now
    return RequestStatus(
        request_id=request_id, status=status, platform=platform,
        lookup_name=row.lookup_name, soldier=_soldier(row, platform),
        created_at=row.created_at, eta_at=row.eta_at,
        first_request_at=row.first_request_at, finished_at=row.finished_at,
        message=row.message, now=now, position=est.position if est else None,
        estimated_start_at=est.eta_at if est else None,
        estimated_seconds=round(est.seconds, 1) if est else None,
        estimated_done_at=est.done_at if est else None,
        estimated_done_seconds=round((est.done_at - now).total_seconds(), 1) if est else None,
        estimate_measured=est.measured if est else None,
        collector_serving=est.serving if est else None, resources=list(resources),
        refreshable_at=refreshable)


def _soldier(row: _Request, platform: Platform) -> RequestSoldier | None:
    if row.soldier_id is None:
        return None
    return RequestSoldier(soldier_id=row.soldier_id, persona_id=row.persona_id,
                          name=row.current_name, platform=platform,
                          url=f"/soldiers/{platform.value}/{row.persona_id}")


def refreshable_at(resources: tuple[StepProgress, ...],
                   min_age_seconds: float) -> datetime | None:
    """When the first resource gets old enough for a manual refresh to collect it again."""
    collected = [r.last_success_at for r in resources if r.last_success_at is not None]
    return min(collected) + timedelta(seconds=min_age_seconds) if collected else None


def _step(resource: str, job_status: str | None = None, attempts: int = 0,
          job_error_class: str | None = None, retry_at: datetime | None = None,
          state_status: str | None = None, last_success_at: datetime | None = None,
          last_attempt_at: datetime | None = None,
          last_error_class: str | None = None) -> StepProgress:
    return StepProgress(
        resource=resource, job_status=job_status, attempts=attempts,
        job_error_class=job_error_class, retry_at=retry_at, state_status=state_status,
        last_success_at=last_success_at, last_attempt_at=last_attempt_at,
        last_error_class=last_error_class)


async def _resources(conn: Conn, row: _Request) -> tuple[StepProgress, ...]:
    if row.soldier_id is None:
        job = await one(conn, _LookupJob, "interactive_lookup_job",
                        {"request_id": row.request_id})
        if job is None:
            return (_step(JobKind.LOOKUP),)
        return (_step(JobKind.LOOKUP, job.status, job.attempt_count, job.last_error_class,
                      _retry_at(job)),)
    rows = await all_rows(conn, _Step, "interactive_request_resources", {
        "request_id": row.request_id, "soldier_id": row.soldier_id,
        "resources": list(row.resources) or ALL_RESOURCES})
    steps = tuple(_progress(r) for r in rows)
    if row.lookup_name:  # a name look-up found the soldier: the chain's first step is done
        return (_step(JobKind.LOOKUP, state_status="current"), *steps)
    return steps


def _retry_at(job: _LookupJob) -> datetime | None:
    if job.last_error_class and job.status == "pending":
        return job.eligible_at
    return None


def _progress(r: _Step) -> StepProgress:
    retry = r.eligible_at if r.job_status == "pending" and r.job_error_class else None
    return _step(r.resource, r.job_status, r.attempt_count or 0, r.job_error_class, retry,
                 r.state_status, r.last_success_at, r.last_attempt_at, r.last_error_class)
