"""The bounded feeder: keeps the background lane's runnable working set at its target by
materializing only the deficit, split by class shares (unused shares borrowed) and, inside the
bootstrap classes, by the progressive resource mix. No cursor: collection_state answers what
remains eligible, so a restart (or a kill -9 mid-feed) picks up exactly where it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.domain import PriorityClass
from bf4ps.gates import circuit
from bf4ps.policy import Policy
from bf4ps.queue import figures
from bf4ps.scheduler.mix import class_quota, resource_quota


@dataclass
class FeedReport:
    depth_before: int = 0
    target: int = 0
    created: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.created.values())


class _Count(NamedTuple):
    n: int


class _Queued(NamedTuple):
    resource: str
    n: int


class _Locked(NamedTuple):
    locked: bool


async def _depth(conn: Conn) -> int:
    row = await one(conn, _Count, "runnable_depth", {"lane": "background"})
    return row.n if row else 0


async def _feed(conn: Conn, activity: str, resource: str, n: int, policy: Policy) -> int:
    row = await one(conn, _Count, "feed_class", {
        "activity_class": activity, "resource": resource, "n": n,
        "aging_seconds": policy.aging(PriorityClass(activity))})
    return row.n if row else 0


async def _feed_activity(conn: Conn, activity: str, n: int, policy: Policy,
                         coverage: dict[str, dict[str, int]],
                         blocked: frozenset[str] = frozenset()) -> int:
    """Fill up to n for one activity class across resources; unused resource quota flows to
    the other joined resources. A resource whose fleet circuit is open (`blocked`) gets
    nothing: its work waits for the circuit's probes (gates/circuit.py)."""
    queued = dict(await all_rows(conn, _Queued, "queued_by_resource",
                                 {"priority_class": activity}))
    quotas = {r: v for r, v in resource_quota(activity, n, policy, coverage, queued).items()
              if r not in blocked}
    made = 0
    for resource in quotas:
        made += await _feed(conn, activity, resource, quotas[resource], policy)
    for resource in quotas:  # second pass: what one resource could not use, others may
        if made >= n:
            break
        made += await _feed(conn, activity, resource, n - made, policy)
    return made


async def replenish(conn: Conn, policy: Policy) -> FeedReport:
    """One feeding pass in one transaction (serialized by an advisory transaction lock)."""
    report = FeedReport(target=policy.working_set_background)
    async with conn.transaction():
        row = await one(conn, _Locked, "feeder_lock")
        if not row or not row.locked:
            return report
        report.depth_before = await _depth(conn)
        deficit = report.target - report.depth_before
        if deficit <= 0:
            return report
        coverage = await figures.coverage(conn)
        blocked = frozenset(r for lane, r in await circuit.open_circuits(conn)
                            if lane == "background")
        quotas = class_quota(deficit, policy)
        for activity, n in quotas.items():
            report.created[activity] = await _fill(conn, activity, n, policy, coverage,
                                                   blocked)
        left = deficit - report.total
        for activity in quotas:  # borrowing: unused shares go to classes with work
            if left <= 0:
                break
            more = await _fill(conn, activity, left, policy, coverage, blocked)
            report.created[activity] = report.created.get(activity, 0) + more
            left -= more
    return report


async def _fill(conn: Conn, activity: str, n: int, policy: Policy,
                coverage: dict[str, dict[str, int]], blocked: frozenset[str]) -> int:
    if n <= 0:
        return 0
    if activity == "retry":
        row = await one(conn, _Count, "feed_retry", {"n": n})
        return row.n if row else 0
    return await _feed_activity(conn, activity, n, policy, coverage, blocked)

