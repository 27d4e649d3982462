"""Admission: the next send slot for this egress (and the fleet budget), a job allowed to use
it, and the request counted in the ledger before anything is sent. Each step is one server-side
call (db/functions/admission.sql: a look, a count, a count of no job), so no lock any other
collector needs is held across a round trip to this one; the egress, the lane and the budget's
shares are the database's, only this process's timings are passed. Nothing is claimed unless
the slot opens within the claim horizon (at least the connect lead)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
from bf4ps.queue import claim as qclaim
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome
from bf4ps.settings import SendTimings

COUNT_PATIENCE = 10.0  # a job claimed in a race for its slot waits this long for the next one
# (a quarter of its lease at most), else it is given back


@dataclass(frozen=True)
class Slot:
    """A send time and the request_ledger row that counts it."""

    at: datetime
    request_id: int


@dataclass(frozen=True)
class Admitted:
    job: ClaimedJob
    slot: Slot

    @property
    def slot_at(self) -> datetime:
        return self.slot.at


@dataclass(frozen=True)
class Wait:
    """Nothing claimed: try again at `until` (gate closed) or later (no work: idle)."""

    until: datetime | None
    idle: bool = False


Pause = Callable[[str], Awaitable[None]]  # a test-only hook at a named point (testhook.py)


async def no_pause(point: str) -> None:
    return None


@dataclass(frozen=True)
class _Answer:
    outcome: str  # open | wait | counted | lost
    slot: datetime | None
    wait_until: datetime | None
    ledger_id: int | None
    classes: list[str] | None


UNATTACHED_JOB_ID = 0
"""The job id of a request that belongs to no queue job (recon, `bf4ps battlelog fetch`): its
slot is counted in the ledger like any other, in its job's budget class and resource, with no
lease to fence (admission_count_unattached in db/functions/admission.sql)."""


def _timings(cfg: SendTimings) -> dict[str, float]:
    return {"margin": cfg.margin, "ahead": cfg.ahead, "connect_lead": cfg.connect_lead}


async def _look(conn: Conn, me: CollectorRef, cfg: SendTimings) -> _Answer:
    return await one_row(conn, _Answer, "admission_look",
                         {"collector_uuid": me.collector_uuid} | _timings(cfg))


async def _count(conn: Conn, me: CollectorRef, cfg: SendTimings, job: ClaimedJob) -> _Answer:
    """The count for a held job; a recon request (no queue job) is counted as one of no job,
    in its budget class and resource, for the recon's own registration."""
    if job.job_id == UNATTACHED_JOB_ID:
        return await _count_unattached(conn, me.egress_key, me.collector_uuid, cfg,
                                       (job.budget_class, job.resource))
    return await one_row(conn, _Answer, "admission_count", {
        "collector_uuid": me.collector_uuid, "job_id": job.job_id,
        "lease_token": job.lease.lease_token} | _timings(cfg))


async def _count_unattached(conn: Conn, egress_key: str, collector: UUID | None,
                            cfg: SendTimings, what: tuple[str, str]) -> _Answer:
    budget_class, resource = what
    return await one_row(conn, _Answer, "admission_count_unattached", {
        "egress_key": egress_key, "collector_uuid": collector, "budget_class": budget_class,
        "resource": resource} | _timings(cfg))


async def admit(conn: Conn, me: CollectorRef, cfg: SendTimings,
                soldier_id: int | None = None, *, pause: Pause = no_pause) -> Admitted | Wait:
    """A look at the gates (no lock, no write); a claim of a job they allow, only when the slot
    opens within the horizon; then the job's request counted in its slot. Each is one statement
    on its own: no lock is held across a round trip. Another collector may take the slot
    between the look and the count: the job is then kept (its lease runs) and counted in the
    next slot, or given back when none opens soon."""
    look = await _look(conn, me, cfg)
    if look.outcome != "open":
        return Wait(look.wait_until)
    job = await qclaim.claim(conn, me, cfg.lease_seconds, soldier_id=soldier_id,
                             classes=look.classes)
    if job is None:
        return Wait(None, idle=True)
    return await count_claimed(conn, me, cfg, job, pause=pause)


async def count_claimed(conn: Conn, me: CollectorRef, cfg: SendTimings, job: ClaimedJob, *,
                        pause: Pause = no_pause) -> Admitted | Wait:
    """The count of a job just claimed (by `admit`, or by the success before it): kept and
    counted in the next slot when another collector took this one, given back when none opens
    soon."""
    await pause("admission")
    deadline = datetime.now(UTC) + timedelta(
        seconds=min(COUNT_PATIENCE, cfg.lease_seconds / 4))
    while True:
        got = await extra_slot(conn, me, cfg, job)
        if isinstance(got, Slot):
            return Admitted(job, got)
        if got.until is None:  # the lease is gone: nothing to give back
            return Wait(None)
        if got.until > deadline:
            await qclaim.release(conn, me, job, "gate_closed")
            return Wait(got.until)
        await asyncio.sleep(max(0.0, (got.until - datetime.now(UTC)).total_seconds()))


async def admit_held(conn: Conn, me: CollectorRef, cfg: SendTimings, job: ClaimedJob,
                     slot: Slot | None, *, pause: Pause = no_pause) -> Admitted | Wait:
    """A job the last success claimed: admitted in the slot that success counted in its own
    commit (`counted_next`), else counted now (count_claimed)."""
    if slot is not None:
        return Admitted(job, slot)
    return await count_claimed(conn, me, cfg, job, pause=pause)


async def extra_slot(conn: Conn, me: CollectorRef, cfg: SendTimings,
                     job: ClaimedJob) -> Slot | Wait:
    """A send slot for a job held (its first request, or a further one such as the profile's
    account lookup), counted in the ledger before anything is sent. Fenced by the job's lease:
    Wait(None) when it is no longer ours."""
    return _slot_of(await _count(conn, me, cfg, job))


def counted_next(outcome: Outcome) -> Slot | None:
    """The slot a success counted for the next job it claimed, in its own commit (a chained
    claim with a gate: admission_succeed in db/functions/admission.sql); None: that job is not
    counted yet (count_claimed counts it)."""
    if outcome.next_slot_at is None or outcome.next_ledger_id is None:
        return None
    return Slot(outcome.next_slot_at, outcome.next_ledger_id)


def _slot_of(got: _Answer) -> Slot | Wait:
    if got.outcome == "counted":
        assert got.slot is not None and got.ledger_id is not None
        return Slot(got.slot, int(got.ledger_id))
    return Wait(got.wait_until)


async def operator_slot(conn: Conn, egress_key: str, cfg: SendTimings,
                        resource: str) -> Slot | Wait:
    """A slot for a request that serves no job (an operator's `bf4ps battlelog fetch`): the
    egress gate and the fleet budget as for any request, counted in the ledger before it is
    sent, as interactive work of no collector."""
    return _slot_of(await _count_unattached(conn, egress_key, None, cfg,
                                            ("interactive", resource)))
