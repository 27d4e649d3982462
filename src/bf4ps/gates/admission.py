"""Admission: the next send slot for this egress (and the fleet budget), a job allowed to use
it, and the request counted in the ledger before anything is sent. The gate, budget and ledger
work is one server-side call (admission_slot in db/schema.sql), so no lock any other collector
needs is held across a round trip to this one. Nothing is claimed unless the slot opens within
the claim horizon (at least the connect lead: a request is begun that long before its slot, so
no slot is sooner than that)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
from bf4ps.domain import Lane
from bf4ps.policy import Policy
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
lease to fence (admission_slot in db/schema.sql)."""


async def _call(conn: Conn, me: CollectorRef, cfg: SendTimings, policy: Policy,
                job: ClaimedJob | None, *,
                unattached: tuple[str, str] | None = None) -> _Answer:
    """One admission_slot() call: a look (no job), the count for a held job, or the count of a
    request of no job and no collector (`unattached`: its budget class and resource)."""
    job_id: int | None
    budget_class: str | None
    resource: str | None
    if unattached is not None:
        job_id, token, (budget_class, resource), collector = (
            UNATTACHED_JOB_ID, None, unattached, None)
    else:
        job_id = job.job_id if job else None
        token = job.lease.lease_token if job else None
        budget_class, resource = (job.budget_class, job.resource) if job else (None, None)
        collector = me.collector_uuid
    return await one_row(conn, _Answer, "admission_slot", {
        "egress_key": me.egress_key, "collector_uuid": collector,
        "job_id": job_id, "lease_token": token,
        "interactive": me.lane is Lane.INTERACTIVE, "margin": cfg.margin, "ahead": cfg.ahead,
        "connect_lead": cfg.connect_lead, "policy": Jsonb(_budget_policy(policy)),
        "budget_class": budget_class, "resource": resource})


def _budget_policy(policy: Policy) -> dict[str, float]:
    return {"cap_active": policy.budget_cap_active,
            "floor_interactive": policy.budget_floor_interactive,
            "floor_bootstrap": policy.budget_floor_bootstrap,
            "floor_retry": policy.budget_floor_retry}


async def admit(conn: Conn, me: CollectorRef, cfg: SendTimings, policy: Policy,
                soldier_id: int | None = None, *, pause: Pause = no_pause) -> Admitted | Wait:
    """A look at the gates (no lock, no write); a claim of a job they allow, only when the slot
    opens within the horizon; then the job's request counted in its slot. Each is one statement
    on its own: no lock is held across a round trip. Another collector may take the slot
    between the look and the count: the job is then kept (its lease runs) and counted in the
    next slot, or given back when none opens soon."""
    look = await _call(conn, me, cfg, policy, None)
    if look.outcome != "open":
        return Wait(look.wait_until)
    job = await qclaim.claim(conn, me, cfg.lease_seconds, soldier_id=soldier_id,
                             classes=look.classes)
    if job is None:
        return Wait(None, idle=True)
    return await count_claimed(conn, me, cfg, policy, job, pause=pause)


def look_params(me: CollectorRef, cfg: SendTimings, policy: Policy) -> dict[str, Any]:
    """The gate a success's chained claim is admitted by on the server
    (queue_succeed_counted's p_gate, migration 0032): one admission under the count's locks,
    in the success's transaction, claims the next job only when the egress opens within the
    horizon, of the classes the budget allows, and counts its request in its slot."""
    return {"egress": me.egress_key, "interactive": me.lane is Lane.INTERACTIVE,
            "margin": cfg.margin, "ahead": cfg.ahead, "connect_lead": cfg.connect_lead,
            "policy": _budget_policy(policy)}


async def count_claimed(conn: Conn, me: CollectorRef, cfg: SendTimings, policy: Policy,
                        job: ClaimedJob, *, pause: Pause = no_pause) -> Admitted | Wait:
    """The count of a job just claimed (by `admit`, or by the success before it): kept and
    counted in the next slot when another collector took this one, given back when none opens
    soon."""
    await pause("admission")
    deadline = datetime.now(UTC) + timedelta(
        seconds=min(COUNT_PATIENCE, cfg.lease_seconds / 4))
    while True:
        got = await extra_slot(conn, me, cfg, policy, job)
        if isinstance(got, Slot):
            return Admitted(job, got)
        if got.until is None:  # the lease is gone: nothing to give back
            return Wait(None)
        if got.until > deadline:
            await qclaim.release(conn, me, job, "gate_closed")
            return Wait(got.until)
        await asyncio.sleep(max(0.0, (got.until - datetime.now(UTC)).total_seconds()))


async def admit_held(conn: Conn, me: CollectorRef, cfg: SendTimings, policy: Policy,
                     job: ClaimedJob, slot: Slot | None, *,
                     pause: Pause = no_pause) -> Admitted | Wait:
    """A job the last success claimed: admitted in the slot that success counted in its own
    commit (`counted_next`), else counted now (count_claimed)."""
    if slot is not None:
        return Admitted(job, slot)
    return await count_claimed(conn, me, cfg, policy, job, pause=pause)


async def extra_slot(conn: Conn, me: CollectorRef, cfg: SendTimings, policy: Policy,
                     job: ClaimedJob) -> Slot | Wait:
    """A send slot for a job held (its first request, or a further one such as the profile's
    account lookup), counted in the ledger before anything is sent. Fenced by the job's lease:
    Wait(None) when it is no longer ours."""
    return _slot_of(await _call(conn, me, cfg, policy, job))


def counted_next(outcome: Outcome) -> Slot | None:
    """The slot a success counted for the next job it claimed, in its own commit (a chained
    claim with a gate: queue_succeed_counted in db/schema.sql); None: that job is not counted
    yet (count_claimed counts it)."""
    if outcome.next_slot_at is None or outcome.next_ledger_id is None:
        return None
    return Slot(outcome.next_slot_at, outcome.next_ledger_id)


def _slot_of(got: _Answer) -> Slot | Wait:
    if got.outcome == "counted":
        assert got.slot is not None and got.ledger_id is not None
        return Slot(got.slot, int(got.ledger_id))
    return Wait(got.wait_until)


async def operator_slot(conn: Conn, egress_key: str, cfg: SendTimings, policy: Policy,
                        resource: str) -> Slot | Wait:
    """A slot for a request that serves no job (an operator's `bf4ps battlelog fetch`): the
    egress gate and the fleet budget as for any request, counted in the ledger before it is
    sent, as interactive work of no collector."""
    # the gate and budget steps read only the egress and the lane of who asks
    asking = CollectorRef(UUID(int=0), "operator", "", egress_key, Lane.INTERACTIVE)
    return _slot_of(await _call(conn, asking, cfg, policy, None,
                                unattached=("interactive", resource)))
