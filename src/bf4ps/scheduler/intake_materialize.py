"""What an imported batch makes actionable (docs/architecture.md, "The BF4SW intake").

A NEW soldier's `detailed` becomes a background job at once (reason bf4sw_discovery), classed
by BF4SW activity (active, recent or bootstrap) and ranked FIFO by import order in its class;
its other resources are left to the feeder. A soldier SEEN AGAIN within the active or recent
window has his pending background jobs of a lower class promoted (keeping their reason and
eligible_at), a never-attempted `detailed` without a job gets one, and, when active, his
current-but-stale resources are marked due. Activity is measured on the source's clock; queue
times on BF4PS's. The seen-again look-ups run unprepared: a generic plan cached while the
tables were small could outlive their growth (see intake_analyze too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Present, all_rows
from bf4ps.domain import JobReason, Lane, PriorityClass, Resource
from bf4ps.policy import Policy
from bf4ps.queue.enqueue import Demand, enqueue
from bf4ps.queue.ranking import outranks, rank
from bf4ps.scheduler.intake_store import Stored

FIRST_RESOURCE = Resource.DETAILED


class _Made(NamedTuple):
    soldier_id: int


class _Pending(NamedTuple):
    """A seen-again soldier's pending background job (intake_pending_jobs)."""

    soldier_id: int
    resource: str
    priority_class: str
    reason: str
    eligible_at: datetime
    persona_id: int
    platform: str


class _Unqueued(NamedTuple):
    soldier_id: int
    persona_id: int
    platform: str


def classify(last_seen: datetime, source_now: datetime, policy: Policy) -> PriorityClass:
    age = (source_now - last_seen).total_seconds()
    if age <= policy.active_window_seconds:
        return PriorityClass.ACTIVE
    if age <= policy.recent_window_seconds:
        return PriorityClass.RECENT
    return PriorityClass.BOOTSTRAP


@dataclass(slots=True)
class Materialized:
    jobs_created: int = 0
    jobs_promoted: int = 0
    marked_due: int = 0
    created_by_class: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class Clocks:
    source_now: datetime  # BF4SW's clock: activity windows
    now: datetime  # BF4PS's clock: ranks and eligibility


async def materialize(conn: Conn, stored: Sequence[Stored], clocks: Clocks, policy: Policy,
                      *, bootstrap_jobs: bool = True, first_jobs: bool = True) -> Materialized:
    """first_jobs=False (the scheduler's intake): no job is created here at all; the bounded
    feeder materializes the new soldiers' work from their state and activity class within a
    tick, so even a first import of 190k soldiers never floods the live queue. Pending jobs of
    soldiers seen again are still promoted and stale active resources still marked due."""
    out = Materialized()
    new = [s for s in stored if s.inserted]
    classes = {s.soldier_id: classify(s.identity.last_seen, clocks.source_now, policy)
               for s in stored}
    wanted = [(s.soldier_id, classes[s.soldier_id]) for s in new
              if bootstrap_jobs or classes[s.soldier_id] is not PriorityClass.BOOTSTRAP]
    if first_jobs:
        await _first_jobs(conn, wanted, clocks.now, policy, out)
    seen = [(s.soldier_id, classes[s.soldier_id]) for s in stored
            if not s.inserted and classes[s.soldier_id] is not PriorityClass.BOOTSTRAP]
    if seen:
        await _promote(conn, seen, clocks.now, policy, out)
        if first_jobs:
            await _unqueued(conn, seen, clocks.now, policy, out)
        active = [sid for sid, klass in seen if klass is PriorityClass.ACTIVE]
        out.marked_due += await mark_due(conn, active, clocks.now, policy)
    return out


async def _first_jobs(conn: Conn, wanted: list[tuple[int, PriorityClass]], now: datetime,
                      policy: Policy, out: Materialized) -> None:
    if not wanted:
        return
    rows = await all_rows(conn, _Made, "intake_enqueue_discovered", {
        "soldier_ids": [sid for sid, _ in wanted],
        "classes": [klass.value for _, klass in wanted],
        "ranks": [rank(now, klass, policy) for _, klass in wanted],
        "resource": FIRST_RESOURCE.value,
        "reason": JobReason.BF4SW_DISCOVERY.value, "now": now})
    made = {r.soldier_id for r in rows}
    classes = dict(wanted)
    for sid in made:
        out.created_by_class[classes[sid].value] += 1
    out.jobs_created += len(made)
    for sid, klass in wanted:  # a job appeared meanwhile (cannot for a new soldier): coalesce
        if sid not in made:
            await _enqueue_first(conn, sid, klass, now, policy, out)


async def _enqueue_first(conn: Conn, soldier_id: int, klass: PriorityClass, now: datetime,
                         policy: Policy, out: Materialized, persona_id: int | None = None,
                         platform: str | None = None) -> None:
    demand = Demand(soldier_id, FIRST_RESOURCE.value, Lane.BACKGROUND, klass,
                    rank(now, klass, policy), JobReason.BF4SW_DISCOVERY, now)
    done = await enqueue(conn, demand, persona_id=persona_id, platform=platform)
    if done.action == "created":
        out.jobs_created += 1
        out.created_by_class[klass.value] += 1
    elif done.action == "promoted":
        out.jobs_promoted += 1


async def _promote(conn: Conn, seen: list[tuple[int, PriorityClass]], now: datetime,
                   policy: Policy, out: Materialized) -> None:
    classes = dict(seen)
    for job in await all_rows(conn, _Pending, "intake_pending_jobs",
                              {"soldier_ids": list(classes)}, prepare=False):
        target = classes[job.soldier_id]
        if not outranks(target, PriorityClass(job.priority_class)):
            continue
        demand = Demand(job.soldier_id, job.resource, Lane.BACKGROUND, target,
                        rank(now, target, policy), JobReason(job.reason), job.eligible_at)
        done = await enqueue(conn, demand, persona_id=job.persona_id, platform=job.platform)
        if done.action == "promoted":
            out.jobs_promoted += 1


async def _unqueued(conn: Conn, seen: list[tuple[int, PriorityClass]], now: datetime,
                    policy: Policy, out: Materialized) -> None:
    classes = dict(seen)
    for row in await all_rows(conn, _Unqueued, "intake_unqueued_never_attempted", {
        "soldier_ids": list(classes), "resource": FIRST_RESOURCE.value}, prepare=False):
        await _enqueue_first(conn, row.soldier_id, classes[row.soldier_id], now, policy, out,
                             row.persona_id, row.platform)


async def mark_due(conn: Conn, soldier_ids: Sequence[int], now: datetime,
                   policy: Policy) -> int:
    """Mark the current-but-stale resources of these (active) soldiers due; returns how many
    (soldier, resource) pairs changed. Jobs are left to the feeder."""
    if not soldier_ids:
        return 0
    return len(await all_rows(conn, Present, "intake_mark_due", {
        "soldier_ids": list(soldier_ids), "now": now,
        "resources": [r.value for r in Resource],
        "freshness_seconds": [policy.freshness(r) for r in Resource]}, prepare=False))
