"""Where a request stands, for its status page and the API: its status, its place in the
interactive queue and a live ETA while it waits, and per resource the job and collection state
(looked up by soldier + resource, so work coalesced into another request still shows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.interactive import eta
from bf4ps.interactive.eta import Estimate, GateDefaults
from bf4ps.soldiers import ALL_RESOURCES

OPEN = ("queued", "collecting")
NOTHING_DUE = "every resource is fresh"  # the message of a request that found nothing due


@dataclass(frozen=True, slots=True)
class ResourceProgress:
    resource: str
    job_status: str | None  # pending | claimed | running | None (no live job)
    attempts: int
    job_error_class: str | None  # the last failed attempt of the live job
    retry_at: datetime | None  # a pending job waiting for its backoff
    state_status: str | None  # collection_state status
    last_success_at: datetime | None
    last_attempt_at: datetime | None
    last_error_class: str | None


@dataclass(frozen=True, slots=True)
class RequestStatus:
    request_id: UUID
    status: str
    platform: str
    lookup_name: str | None
    soldier_id: int | None
    persona_id: int | None
    soldier_name: str | None
    created_at: datetime
    eta_at: datetime | None  # the estimate made at submission
    first_request_at: datetime | None
    finished_at: datetime | None
    message: str | None
    now: datetime
    estimate: Estimate | None  # live, while the request waits
    resources: tuple[ResourceProgress, ...]
    refreshable_at: datetime | None = None  # nothing was due: when a refresh would collect

    @property
    def nothing_due(self) -> bool:
        return self.status == "done" and self.message == NOTHING_DUE

    @property
    def is_open(self) -> bool:
        return self.status in OPEN

    def as_dict(self) -> dict[str, Any]:
        est = self.estimate
        return {
            "request_id": str(self.request_id), "status": self.status,
            "platform": self.platform, "lookup_name": self.lookup_name,
            "soldier": None if self.soldier_id is None else {
                "soldier_id": self.soldier_id, "persona_id": self.persona_id,
                "name": self.soldier_name, "platform": self.platform,
                "url": f"/soldiers/{self.platform}/{self.persona_id}"},
            "created_at": _iso(self.created_at), "eta_at": _iso(self.eta_at),
            "first_request_at": _iso(self.first_request_at),
            "finished_at": _iso(self.finished_at), "message": self.message,
            "now": _iso(self.now),
            "position": est.position if est else None,
            "estimated_start_at": _iso(est.eta_at) if est else None,
            "estimated_seconds": round(est.seconds, 1) if est else None,
            "estimated_done_at": _iso(est.done_at) if est else None,
            "estimated_done_seconds": (round((est.done_at - self.now).total_seconds(), 1)
                                       if est else None),
            "estimate_measured": est.measured if est else None,
            "collector_serving": est.serving if est else None,
            "resources": [_progress_dict(p) for p in self.resources],
            "refreshable_at": _iso(self.refreshable_at),
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _progress_dict(p: ResourceProgress) -> dict[str, Any]:
    return {"resource": p.resource, "job_status": p.job_status, "attempts": p.attempts,
            "job_error_class": p.job_error_class, "retry_at": _iso(p.retry_at),
            "state_status": p.state_status, "last_success_at": _iso(p.last_success_at),
            "last_attempt_at": _iso(p.last_attempt_at), "last_error_class": p.last_error_class}


async def request_status(conn: Conn, request_id: UUID, gate: GateDefaults,
                         min_age_seconds: float | None = None) -> RequestStatus | None:
    """`min_age_seconds` (the policy's interactive minimum age) lets a request that found
    nothing due say when the soldier becomes refreshable."""
    cur = await conn.execute(q("interactive_request_get"), {"request_id": request_id})
    row = await cur.fetchone()
    if row is None:
        return None
    status = str(row["status"])
    estimate = await eta.estimate(conn, request_id, gate) if status in OPEN else None
    resources = await _resources(conn, row)
    refreshable = None
    if min_age_seconds is not None and row["message"] == NOTHING_DUE:
        refreshable = refreshable_at(resources, min_age_seconds)
    return RequestStatus(
        request_id=request_id, status=status, platform=str(row["platform"]),
        lookup_name=row["lookup_name"], soldier_id=row["soldier_id"],
        persona_id=row["persona_id"], soldier_name=row["current_name"],
        created_at=row["created_at"], eta_at=row["eta_at"],
        first_request_at=row["first_request_at"], finished_at=row["finished_at"],
        message=row["message"], now=row["now"], estimate=estimate,
        resources=resources, refreshable_at=refreshable)


def refreshable_at(resources: tuple[ResourceProgress, ...],
                   min_age_seconds: float) -> datetime | None:
    """When the first resource gets old enough for a manual refresh to collect it again."""
    collected = [r.last_success_at for r in resources if r.last_success_at is not None]
    return min(collected) + timedelta(seconds=min_age_seconds) if collected else None


async def _resources(conn: Conn, row: dict[str, Any]) -> tuple[ResourceProgress, ...]:
    if row["soldier_id"] is None:
        cur = await conn.execute(q("interactive_lookup_job"), {"request_id": row["request_id"]})
        job = await cur.fetchone()
        return (_lookup_progress(job),)
    cur = await conn.execute(q("interactive_request_resources"), {
        "request_id": row["request_id"], "soldier_id": row["soldier_id"],
        "resources": list(row["resources"]) or ALL_RESOURCES})
    steps = tuple(_progress(r) for r in await cur.fetchall())
    if row["lookup_name"]:  # a name look-up found the soldier: the chain's first step is done
        found = ResourceProgress("lookup", None, 0, None, None, "current", None, None, None)
        return (found, *steps)
    return steps


def _lookup_progress(job: dict[str, Any] | None) -> ResourceProgress:
    if job is None:
        return ResourceProgress("lookup", None, 0, None, None, None, None, None, None)
    return ResourceProgress("lookup", str(job["status"]), int(job["attempt_count"]),
                            job["last_error_class"], _retry_at(job), None, None, None, None)


def _retry_at(job: dict[str, Any]) -> datetime | None:
    if job["last_error_class"] and job["status"] == "pending":
        at: datetime = job["eligible_at"]
        return at
    return None


def _progress(r: dict[str, Any]) -> ResourceProgress:
    job_status = r["job_status"]
    retry = None
    if job_status == "pending" and r["job_error_class"]:
        retry = r["eligible_at"]
    return ResourceProgress(
        resource=str(r["resource"]), job_status=job_status,
        attempts=int(r["attempt_count"] or 0), job_error_class=r["job_error_class"],
        retry_at=retry, state_status=r["state_status"], last_success_at=r["last_success_at"],
        last_attempt_at=r["last_attempt_at"], last_error_class=r["last_error_class"])
