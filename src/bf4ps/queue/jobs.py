"""What the engine hands out and takes back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from psycopg.rows import BaseRowFactory

from bf4ps.db.queries import mapped
from bf4ps.domain import JobKind, Lane, Platform, PriorityClass, Resource


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof of one specific claim: all three must match for any state-changing write."""

    job_id: int
    collector_uuid: UUID
    lease_token: UUID


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    lease: Lease
    soldier_id: int | None
    kind: JobKind
    lane: Lane
    priority_class: PriorityClass
    reason: str
    attempt_count: int
    claimed_at: datetime
    lease_expires_at: datetime
    reclaimed: bool
    is_retry: bool
    persona_id: int | None
    platform: Platform | None
    soldier_name: str | None
    request_id: UUID | None
    lookup_name: str | None
    lookup_platform: Platform | None

    @property
    def job_id(self) -> int:
        return self.lease.job_id

    @property
    def budget_class(self) -> str:
        """The fleet budget's class: retries are their own class whatever their priority."""
        return "retry" if self.is_retry else self.priority_class.value

    @property
    def resource(self) -> str:
        """The job's resource column (a Resource value, or the look-up's kind)."""
        return self.kind.value

    @property
    def is_lookup(self) -> bool:
        return self.kind is JobKind.LOOKUP

    @property
    def stats_resource(self) -> Resource:
        resource = self.kind.resource
        if resource is None:
            raise ValueError(f"job {self.job_id} is a look-up: it collects no resource")
        return resource

    @classmethod
    def rows(cls, collector_uuid: UUID) -> BaseRowFactory[ClaimedJob]:
        """The row factory of a claim's rows (claim_job, a chained claim's)."""
        return mapped(lambda row: cls.from_row(row, collector_uuid))

    @classmethod
    def from_row(cls, row: Mapping[str, Any], collector_uuid: UUID) -> ClaimedJob:
        platform = row.get("platform")
        lookup_platform = row.get("lookup_platform")
        return cls(
            lease=Lease(int(row["job_id"]), collector_uuid, row["lease_token"]),
            soldier_id=row["soldier_id"],
            kind=JobKind(row["resource"]),
            lane=Lane(row["lane"]),
            priority_class=PriorityClass(row["priority_class"]),
            reason=str(row["reason"]),
            attempt_count=int(row["attempt_count"]),
            claimed_at=row["claimed_at"],
            lease_expires_at=row["lease_expires_at"],
            reclaimed=bool(row["reclaimed"]),
            is_retry=bool(row.get("is_retry")),
            persona_id=row.get("persona_id"),
            platform=Platform(platform) if platform else None,
            soldier_name=row.get("current_name"),
            request_id=row.get("request_id"),
            lookup_name=row.get("lookup_name"),
            lookup_platform=Platform(lookup_platform) if lookup_platform else None,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finalize or fail call did; a success that also claimed the collector's next job
    (finalize.NextClaim) hands it over, with its request's slot and ledger row when the same
    commit counted it (a NextClaim with a gate), or says when its gate opens."""

    committed: bool
    event: str
    next_attempt_at: datetime | None = None
    next_job: ClaimedJob | None = None
    gate_wait_until: datetime | None = None
    next_slot_at: datetime | None = None
    next_ledger_id: int | None = None


class CollectorFields(TypedDict):
    """The event columns naming a collector (events.record's keywords)."""

    collector_uuid: UUID
    collector_name: str
    hostname: str
    egress_key: str


class JobFields(TypedDict):
    """The event columns naming a job (events.record's keywords)."""

    job_id: int
    lease_token: UUID
    soldier_id: int | None
    persona_id: int | None
    platform: str | None
    resource: str
    lane: str
    priority_class: str
    attempt_number: int


@dataclass(frozen=True, slots=True)
class CollectorRef:
    """The registered collector incarnation acting, snapshotted into its events."""

    collector_uuid: UUID
    name: str
    hostname: str
    egress_key: str
    lane: Lane

    def event_fields(self) -> CollectorFields:
        return {"collector_uuid": self.collector_uuid, "collector_name": self.name,
                "hostname": self.hostname, "egress_key": self.egress_key}


def job_event_fields(job: ClaimedJob) -> JobFields:
    platform = job.platform or job.lookup_platform
    return {
        "job_id": job.job_id, "lease_token": job.lease.lease_token,
        "soldier_id": job.soldier_id, "persona_id": job.persona_id,
        "platform": platform.value if platform else None, "resource": job.resource,
        "lane": job.lane.value, "priority_class": job.priority_class.value,
        "attempt_number": job.attempt_count,
    }
