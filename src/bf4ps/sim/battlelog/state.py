"""Per-process simulator state and the parsing of Battlelog request paths."""

from __future__ import annotations

import asyncio
import math
import re
import secrets
import time
from dataclasses import dataclass, field

from bf4ps.battlelog.endpoints import CHECK_SUM_LENGTH
from bf4ps.domain import PLATFORM_INTS
from bf4ps.sim.battlelog.career import SimClock, career_for, is_active
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.faults import PERSONA_RESOURCES, Faults
from bf4ps.sim.battlelog.limiter import RateLimiter
from bf4ps.sim.battlelog.lookup import Registry
from bf4ps.sim.battlelog.snapshot import Snapshot, take
from bf4ps.sim.battlelog.stats import SimStats
from bf4ps.sim.play import Schedule

PLATFORM_NUMBERS = frozenset(PLATFORM_INTS.values())
_PREFIX = re.compile(r"/bf4(?:/[a-z]{2}(?:[-_][a-z]{2})?)?(?=/|$)", re.IGNORECASE)
_ROUTES = tuple(
    (resource, re.compile(pattern, re.IGNORECASE))
    for resource, pattern in (
        ("detailed", r"/warsawdetailedstatspopulate/(\d+)/(\d+)/?"),
        ("profile", r"/warsawoverviewpopulate/(\d+)/(\d+)/?"),
        ("weapons", r"/warsawweaponspopulatestats/(\d+)/(\d+)(?:/stats)?/?"),
        ("vehicles", r"/warsawvehiclespopulatestats/(\d+)/(\d+)(?:/stats)?/?"),
        ("soldiers", r"/user/overviewboxstats/(\d+)/?"),
        ("search", r"/search/query/?"),
        ("index", r"/?"),
    )
)


@dataclass(frozen=True, slots=True)
class Call:
    """A parsed Battlelog request."""

    resource: str  # detailed | profile | weapons | vehicles | soldiers | search | index | unknown
    ids: tuple[int, ...] = ()
    query: str = ""
    check_sum: str | None = None  # search: the form's post-check-sum
    session_id: str | None = None  # the request's session cookie


def parse_call(path: str) -> Call:
    prefix = _PREFIX.match(path)
    if prefix is None:
        return Call("unknown")
    rest = path[prefix.end() :]
    for resource, pattern in _ROUTES:
        match = pattern.fullmatch(rest)
        if match:
            return Call(resource, tuple(int(group) for group in match.groups()))
    return Call("unknown")


@dataclass(slots=True)
class SimState:
    config: SimConfig
    clock: SimClock = field(init=False)
    limiter: RateLimiter = field(init=False)
    stats: SimStats = field(init=False)
    faults: Faults = field(init=False)
    registry: Registry = field(default_factory=Registry)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)  # set when the server exits
    check_sums: set[str] = field(default_factory=set)  # of the sessions the start page opened
    # logged-in session ids (POST /__sim/login) and when each expires (monotonic seconds)
    logins: dict[str, float] = field(default_factory=dict)
    good_searches: int = 0  # searches answered with personas since empty_search_after was set

    def __post_init__(self) -> None:
        self.clock = SimClock(self.config.speed)
        self.limiter = RateLimiter(self.config)
        self.stats = SimStats(self.config)
        self.faults = Faults(self.config)

    def open_session(self) -> str:
        """A new session id (the start page's cookie); its check-sum is now valid."""
        session_id = secrets.token_hex(16)
        self.check_sums.add(session_id[:CHECK_SUM_LENGTH])
        return session_id

    def log_in(self) -> str:
        """A logged-in session id (what an operator copies from a browser), valid for search."""
        session_id = self.open_session()
        lifetime = self.config.session_seconds
        self.logins[session_id] = time.monotonic() + lifetime if lifetime > 0 else math.inf
        return session_id

    def log_out(self, session_id: str) -> bool:
        """Expire a logged-in session now (as Battlelog would when it ends one); was it one?"""
        return self.logins.pop(session_id, None) is not None

    def logged_in(self, session_id: str | None) -> bool:
        """Is this a logged-in session that has not expired?"""
        expires = self.logins.get(session_id or "")
        return expires is not None and time.monotonic() < expires

    def walled(self, call: Call, session_id: str | None) -> bool:
        """Does the login wall stop this request (no valid logged-in session)?"""
        wall = self.config.login_wall
        if wall == "none" or self.logged_in(session_id):
            return False
        if call.resource == "search":
            return wall in ("search", "both")
        return call.resource in PERSONA_RESOURCES and wall in ("stats", "both")

    def search_lies(self) -> bool:
        """Does search answer an empty list now (empty_search_after good answers were given)?"""
        after = self.config.empty_search_after
        return after is not None and self.good_searches >= after

    def answered_search(self, body: bytes) -> None:
        """Count a search answered with personas (for empty_search_after)."""
        if not body.endswith(b'"data":[]}'):
            self.good_searches += 1

    def refuses_search(self, call: Call) -> bool:
        return (self.config.search_check_sum == "required"
                and call.check_sum not in self.check_sums)

    def schedule(self) -> Schedule:
        c = self.config
        return Schedule(speed=c.speed, anchor=c.play_anchor, players=c.session_players)

    def snapshot(self, persona_id: int, at: float | None = None) -> Snapshot:
        schedule = self.schedule()
        career = career_for(persona_id)
        if schedule.plays(persona_id):
            played = schedule.played(persona_id, time.time() if at is None else at)
            return take(persona_id, 1.0 + played / career.time_played)
        active = is_active(persona_id, self.config.active_fraction)
        return take(persona_id, career.growth(self.clock.elapsed(), active))


__all__ = ["PERSONA_RESOURCES", "Call", "SimState", "parse_call"]
