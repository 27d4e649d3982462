"""A player's submission: validated, rate limited per client, and turned into interactive work
in one transaction. Never calls Battlelog: a known soldier's stale resources become interactive
jobs (existing work is coalesced or promoted by the queue engine); an unknown name becomes one
lookup job that the interactive collector resolves (see lookup.py). The estimate is the read
side's (views/estimate.py): the caller passes an Estimator, whose first send is stored as the
request's eta_at; the answer people read is views/request_status.submission."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID, uuid4

from bf4ps import soldiers
from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute, one, one_row
from bf4ps.domain import JobKind, JobReason, Lane, Platform, PriorityClass, SourceType
from bf4ps.interactive import demand
from bf4ps.interactive.demand import Target
from bf4ps.interactive.inputs import (
    InputError,
    parse_client_key,
    parse_name,
    parse_persona_id,
    parse_platform,
)
from bf4ps.policy import Policy
from bf4ps.queue.enqueue import Demand, enqueue
from bf4ps.queue.ranking import rank


class SubmitError(Exception):
    """A submission refused for a reason other than its input's shape."""


class RateLimited(SubmitError):
    def __init__(self, retry_after: float, limits: Limits) -> None:
        super().__init__(f"too many requests: at most {limits.requests} per "
                         f"{limits.window_seconds:.0f} s; retry in {retry_after:.0f} s")
        self.retry_after = retry_after


class UnknownSoldier(SubmitError, LookupError):
    pass


@dataclass(frozen=True, slots=True)
class Limits:
    """Per client: at most `requests` new requests per `window_seconds`."""

    requests: int = 10
    window_seconds: float = 60.0


DEFAULT_LIMITS = Limits()


class Estimated(Protocol):
    """An estimate of the read side (views/estimate.py): when the first Battlelog request of
    the request should be sent, stored as its eta_at."""

    @property
    def eta_at(self) -> datetime: ...


# The estimate of a request just planned (None: nothing waits), made in its transaction.
Estimator = Callable[[Conn, UUID], Awaitable[Estimated | None]]


async def no_estimate(conn: Conn, request_id: UUID) -> Estimated | None:
    return None


@dataclass(frozen=True, slots=True)
class Submission:
    request_id: UUID
    soldier_id: int | None
    status: str  # queued | done (nothing was stale) | collecting (an open request reused)
    eta_at: datetime | None  # the estimate stored at submission (or of the reused request)
    created: int  # jobs created (the rest were coalesced into or promoted from existing work)
    resources: tuple[str, ...]  # what the request collects ("lookup" first for unknown names)
    reused: bool = False  # an open request for the same soldier/name was returned instead
    lookup_name: str | None = None
    estimate: Estimated | None = None  # the estimator's, for a request planned just now


async def submit(conn: Conn, *, platform: Platform | str, name: str | None = None,
                 persona_id: int | str | None = None, client_key: str, policy: Policy,
                 limits: Limits = DEFAULT_LIMITS,
                 estimator: Estimator = no_estimate) -> Submission:
    """Submit a collection request for a soldier named by persona id (+ platform) or by name.
    Raises InputError, RateLimited or UnknownSoldier (a persona id not known here and no name
    to register it under)."""
    plat = parse_platform(platform)
    clean_name = parse_name(name) if name is not None else None
    pid = parse_persona_id(persona_id) if persona_id is not None else None
    if clean_name is None and pid is None:
        raise InputError("name", "a soldier name or persona id is required")
    key = parse_client_key(client_key)
    async with conn.transaction():
        await _rate_check(conn, key, limits)
        target = await find(conn, plat, clean_name, pid)
        if target is None and pid is not None:
            if clean_name is None:
                raise UnknownSoldier(f"persona {pid} on {plat} is not known here and came "
                                     "without a usable soldier name; submit it by name, or "
                                     "by its Battlelog URL with the name in it")
            target = await _register(conn, pid, plat, clean_name)
        if target is not None:
            return await _for_soldier(conn, target, key, policy, estimator)
        assert clean_name is not None
        return await _for_lookup(conn, clean_name, plat, key, policy, estimator)


async def find(conn: Conn, platform: Platform, name: str | None,
               persona_id: int | None) -> Target | None:
    """A known soldier by persona id + platform, else by name (current or former)."""
    if persona_id is not None:
        row = await one(conn, "interactive_soldier_by_persona",
                        {"persona_id": persona_id, "platform": platform.value})
    else:
        row = await one(conn, "interactive_soldier_by_name",
                        {"name": name, "platform": platform.value})
    return Target.from_row(row) if row else None


async def _rate_check(conn: Conn, key: str, limits: Limits) -> None:
    await demand.lock(conn, f"rate:{key}")
    row = await one_row(conn, "interactive_rate_count",
                        {"client_key": key, "window_seconds": limits.window_seconds})
    if int(row["n"]) >= limits.requests:
        wait = (row["oldest"] - row["now"]).total_seconds() + limits.window_seconds
        raise RateLimited(max(1.0, wait), limits)


async def _register(conn: Conn, persona_id: int, platform: Platform, name: str) -> Target:
    now = datetime.now(UTC)
    up = await soldiers.upsert(conn, soldiers.Sighting(persona_id, platform, name, now, now,
                                                       SourceType.MANUAL))
    return Target(up.soldier_id, persona_id, platform, name)


async def _insert(conn: Conn, request_id: UUID, platform: Platform, key: str,
                  soldier_id: int | None, lookup_name: str | None) -> datetime:
    row = await one_row(conn, "interactive_request_insert", {
        "request_id": request_id, "soldier_id": soldier_id, "lookup_name": lookup_name,
        "platform": platform.value, "client_key": key, "resources": []})
    created_at: datetime = row["created_at"]
    return created_at


async def _for_soldier(conn: Conn, target: Target, key: str, policy: Policy,
                       estimator: Estimator) -> Submission:
    await demand.lock(conn, f"soldier:{target.soldier_id}")
    existing = await one(conn, "interactive_open_for_soldier",
                         {"soldier_id": target.soldier_id})
    if existing is not None:
        return await _reused(conn, existing)
    request_id = uuid4()
    since = await _insert(conn, request_id, target.platform, key, target.soldier_id, None)
    planned = await demand.plan(conn, target, request_id, since, policy)
    row = await one(conn, "interactive_request_jobs", {"request_id": request_id})
    attached = int(row["n"]) if row else 0
    if not planned.resources or attached == 0:
        message = ("every resource is fresh" if not planned.resources
                   else "already being collected")
        await _planned(conn, request_id, planned.resources, None, done=True, message=message)
        return Submission(request_id, target.soldier_id, "done", None, planned.created,
                          planned.resources)
    est = await estimator(conn, request_id)
    eta_at = est.eta_at if est else None
    await _planned(conn, request_id, planned.resources, eta_at)
    return Submission(request_id, target.soldier_id, "queued", eta_at, planned.created,
                      planned.resources, estimate=est)


async def _for_lookup(conn: Conn, name: str, platform: Platform, key: str, policy: Policy,
                      estimator: Estimator) -> Submission:
    await demand.lock(conn, f"lookup:{platform.value}:{name.lower()}")
    existing = await one(conn, "interactive_open_for_name",
                         {"name": name, "platform": platform.value})
    if existing is not None:
        return await _reused(conn, existing, lookup_name=name)
    request_id = uuid4()
    since = await _insert(conn, request_id, platform, key, None, name)
    await enqueue(conn, Demand(
        soldier_id=None, resource=JobKind.LOOKUP.value, lane=Lane.INTERACTIVE,
        priority_class=PriorityClass.INTERACTIVE,
        rank=rank(since, PriorityClass.INTERACTIVE, policy), reason=JobReason.LOOKUP,
        eligible_at=since, request_id=request_id, lookup_name=name, lookup_platform=platform))
    est = await estimator(conn, request_id)
    eta_at = est.eta_at if est else None
    await _planned(conn, request_id, (), eta_at)
    return Submission(request_id, None, "queued", eta_at, 1, (JobKind.LOOKUP.value,),
                      lookup_name=name, estimate=est)


async def _planned(conn: Conn, request_id: UUID, resources: tuple[str, ...],
                   eta_at: datetime | None, *, done: bool = False,
                   message: str | None = None) -> None:
    await execute(conn, "interactive_request_planned", {
        "request_id": request_id, "resources": list(resources), "eta_at": eta_at,
        "done": done, "message": message})


async def _reused(conn: Conn, row: dict[str, Any],
                  lookup_name: str | None = None) -> Submission:
    resources = tuple(row["resources"]) or ((JobKind.LOOKUP.value,) if lookup_name else ())
    return Submission(row["request_id"], row["soldier_id"], str(row["status"]), row["eta_at"],
                      0, resources, reused=True, lookup_name=lookup_name)
