"""Turn a request for a known soldier into interactive jobs: every resource that is missing,
not current or older than the policy's minimum age. Coalescing and promotion of existing work
are the queue engine's (enqueue); this module only decides what to ask for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, execute
from bf4ps.domain import JobReason, Lane, Platform, PriorityClass
from bf4ps.policy import Policy
from bf4ps.queue.enqueue import Demand, enqueue
from bf4ps.queue.ranking import rank
from bf4ps.stats.soldiers import ALL_RESOURCES


@dataclass(frozen=True, slots=True)
class KnownSoldier:
    """A known soldier."""

    soldier_id: int
    persona_id: int
    platform: Platform
    name: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> KnownSoldier:
        return cls(int(row["soldier_id"]), int(row["persona_id"]), Platform(row["platform"]),
                   str(row["current_name"]))


@dataclass(frozen=True, slots=True)
class Planned:
    resources: tuple[str, ...]
    created: int  # new jobs; the others were coalesced into (or promoted) existing work


async def lock(conn: Conn, key: str) -> None:
    """A transaction-scoped advisory lock on `key` (serializes submissions for it)."""
    await execute(conn, "interactive_lock", {"key": key})


class _Stale(NamedTuple):
    resource: str


async def stale_resources(conn: Conn, soldier_id: int, policy: Policy) -> tuple[str, ...]:
    rows = await all_rows(conn, _Stale, "interactive_stale_resources", {
        "soldier_id": soldier_id, "resources": ALL_RESOURCES,
        "min_age_seconds": policy.interactive_min_age_seconds})
    return tuple(r.resource for r in rows)


async def plan(conn: Conn, target: KnownSoldier, request_id: UUID, since: datetime,
               policy: Policy) -> Planned:
    """Enqueue the stale resources of `target` as interactive work of `request_id`, ranked at
    `since` (FIFO among interactive requests). Runs in the caller's transaction."""
    await execute(conn, "state_init", {"soldier_id": target.soldier_id,
                                       "eligible_since": since})
    wanted = await stale_resources(conn, target.soldier_id, policy)
    created = 0
    for resource in wanted:
        demand = Demand(
            soldier_id=target.soldier_id, resource=resource, lane=Lane.INTERACTIVE,
            priority_class=PriorityClass.INTERACTIVE,
            rank=rank(since, PriorityClass.INTERACTIVE, policy), reason=JobReason.MANUAL,
            eligible_at=since, request_id=request_id)
        result = await enqueue(conn, demand, persona_id=target.persona_id,
                               platform=target.platform.value)
        created += result.action == "created"
    return Planned(wanted, created)
