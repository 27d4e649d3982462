"""Request a collection: the one use case behind the website's submit button, the API and
`bf4ps request`. A parsed target (target.py), rate limited per client, becomes interactive work
in one transaction. Never calls Battlelog: a known soldier's stale resources become interactive
jobs (existing work is coalesced or promoted by the queue engine); an unknown name becomes one
lookup job that the interactive collector resolves (lookup.py). With the gate settings, the
lane's estimate (capacity/eta.py) is made in the same transaction and stored as eta_at."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID, uuid4

from bf4ps import policy as policy_mod
from bf4ps.capacity import eta
from bf4ps.capacity.eta import Estimate
from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute, mapped, one, one_row
from bf4ps.domain import JobKind, JobReason, Lane, Platform, PriorityClass, SourceType
from bf4ps.interactive import demand
from bf4ps.interactive.demand import KnownSoldier
from bf4ps.interactive.inputs import parse_client_key
from bf4ps.interactive.target import ByName, ByPersona, Target
from bf4ps.policy import Policy
from bf4ps.queue.enqueue import Demand, enqueue
from bf4ps.queue.ranking import rank
from bf4ps.settings import SendTimings
from bf4ps.stats import soldiers


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
    estimate: Estimate | None = None  # made in its transaction, for a request planned now


_KNOWN = mapped(KnownSoldier.from_row)


class _Rate(NamedTuple):
    n: int
    oldest: datetime | None
    now: datetime


class _Created(NamedTuple):
    created_at: datetime


class _Open(NamedTuple):
    """An open request (interactive_open_for_soldier / _for_name)."""

    request_id: UUID
    soldier_id: int | None
    status: str
    resources: list[str]
    eta_at: datetime | None


class _Count(NamedTuple):
    n: int


async def submit(conn: Conn, target: Target, *, client_key: str,
                 policy: Policy | None = None, limits: Limits = DEFAULT_LIMITS,
                 gate: SendTimings | None = None) -> Submission:
    """Submit a collection request for `target`; with `gate`, its estimate is stored as its
    eta_at. Raises RateLimited, or UnknownSoldier (a persona id not known here and no name to
    register it under)."""
    key = parse_client_key(client_key)
    if policy is None:
        policy = await policy_mod.load(conn)
    async with conn.transaction():
        await _rate_check(conn, key, limits)
        known = await find(conn, target)
        if known is None and isinstance(target, ByPersona):
            known = await _register(conn, target)
        if known is not None:
            return await _for_soldier(conn, known, key, policy, gate)
        assert isinstance(target, ByName)
        return await _for_lookup(conn, target, key, policy, gate)


async def find(conn: Conn, target: Target) -> KnownSoldier | None:
    """A known soldier by persona id + platform, else by name (current or former)."""
    if isinstance(target, ByPersona):
        return await one(conn, _KNOWN, "interactive_soldier_by_persona",
                         {"persona_id": target.persona_id, "platform": target.platform.value})
    return await one(conn, _KNOWN, "interactive_soldier_by_name",
                     {"name": target.name, "platform": target.platform.value})


async def _rate_check(conn: Conn, key: str, limits: Limits) -> None:
    await demand.lock(conn, f"rate:{key}")
    row = await one_row(conn, _Rate, "interactive_rate_count",
                        {"client_key": key, "window_seconds": limits.window_seconds})
    if row.n >= limits.requests:
        wait = ((row.oldest or row.now) - row.now).total_seconds() + limits.window_seconds
        raise RateLimited(max(1.0, wait), limits)


async def _register(conn: Conn, target: ByPersona) -> KnownSoldier:
    if target.name is None:
        raise UnknownSoldier(f"persona {target.persona_id} on {target.platform} is not known "
                             "here and came without a usable soldier name; submit it by name, "
                             "or by its Battlelog URL with the name in it")
    now = datetime.now(UTC)
    up = await soldiers.upsert(conn, soldiers.Sighting(
        target.persona_id, target.platform, target.name, now, now, SourceType.MANUAL))
    return KnownSoldier(up.soldier_id, target.persona_id, target.platform, target.name)


async def _insert(conn: Conn, request_id: UUID, platform: Platform, key: str,
                  soldier_id: int | None, lookup_name: str | None) -> datetime:
    row = await one_row(conn, _Created, "interactive_request_insert", {
        "request_id": request_id, "soldier_id": soldier_id, "lookup_name": lookup_name,
        "platform": platform.value, "client_key": key, "resources": []})
    return row.created_at


async def _for_soldier(conn: Conn, target: KnownSoldier, key: str, policy: Policy,
                       gate: SendTimings | None) -> Submission:
    await demand.lock(conn, f"soldier:{target.soldier_id}")
    existing = await one(conn, _Open, "interactive_open_for_soldier",
                         {"soldier_id": target.soldier_id})
    if existing is not None:
        return await _reused(conn, existing)
    request_id = uuid4()
    since = await _insert(conn, request_id, target.platform, key, target.soldier_id, None)
    planned = await demand.plan(conn, target, request_id, since, policy)
    jobs = await one(conn, _Count, "interactive_request_jobs", {"request_id": request_id})
    attached = jobs.n if jobs else 0
    if not planned.resources or attached == 0:
        message = ("every resource is fresh" if not planned.resources
                   else "already being collected")
        await _planned(conn, request_id, planned.resources, None, done=True, message=message)
        return Submission(request_id, target.soldier_id, "done", None, planned.created,
                          planned.resources)
    est = await _estimate(conn, request_id, gate)
    eta_at = est.eta_at if est else None
    await _planned(conn, request_id, planned.resources, eta_at)
    return Submission(request_id, target.soldier_id, "queued", eta_at, planned.created,
                      planned.resources, estimate=est)


async def _for_lookup(conn: Conn, target: ByName, key: str, policy: Policy,
                      gate: SendTimings | None) -> Submission:
    name, platform = target.name, target.platform
    await demand.lock(conn, f"lookup:{platform.value}:{name.lower()}")
    existing = await one(conn, _Open, "interactive_open_for_name",
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
    est = await _estimate(conn, request_id, gate)
    eta_at = est.eta_at if est else None
    await _planned(conn, request_id, (), eta_at)
    return Submission(request_id, None, "queued", eta_at, 1, (JobKind.LOOKUP.value,),
                      lookup_name=name, estimate=est)


async def _estimate(conn: Conn, request_id: UUID,
                    gate: SendTimings | None) -> Estimate | None:
    """The lane's estimate of a request just planned (None: nothing waits, or no gate)."""
    return await eta.estimate(conn, request_id, gate) if gate is not None else None


async def _planned(conn: Conn, request_id: UUID, resources: tuple[str, ...],
                   eta_at: datetime | None, *, done: bool = False,
                   message: str | None = None) -> None:
    await execute(conn, "interactive_request_planned", {
        "request_id": request_id, "resources": list(resources), "eta_at": eta_at,
        "done": done, "message": message})


async def _reused(conn: Conn, row: _Open, lookup_name: str | None = None) -> Submission:
    resources = tuple(row.resources) or ((JobKind.LOOKUP.value,) if lookup_name else ())
    return Submission(row.request_id, row.soldier_id, row.status, row.eta_at,
                      0, resources, reused=True, lookup_name=lookup_name)
