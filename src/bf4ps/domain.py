"""Vocabulary shared by every part: platforms, resources, lanes, classes, failure classes.

These values are also the CHECK constraints of the schema (db/schema.sql);
a test keeps the two in agreement.
"""

from __future__ import annotations

from enum import StrEnum


class Platform(StrEnum):
    PC = "pc"
    XBOX360 = "xbox360"
    PS3 = "ps3"
    PS4 = "ps4"
    XBOXONE = "xboxone"

    @property
    def battlelog_int(self) -> int:
        return PLATFORM_INTS[self]

    @classmethod
    def from_battlelog_int(cls, value: int) -> Platform:
        for platform, number in PLATFORM_INTS.items():
            if number == value:
                return platform
        raise ValueError(f"unknown Battlelog platform number {value}")


PLATFORM_INTS: dict[Platform, int] = {
    Platform.PC: 1,
    Platform.XBOX360: 2,
    Platform.PS3: 4,
    Platform.PS4: 32,
    Platform.XBOXONE: 64,
}


class Resource(StrEnum):
    DETAILED = "detailed"
    PROFILE = "profile"
    WEAPONS = "weapons"
    VEHICLES = "vehicles"


class JobKind(StrEnum):
    """What a queue job does: collect one resource of a soldier, or look a name up (an
    interactive submission of a name not seen yet; it has no soldier and no collection state)."""

    DETAILED = "detailed"
    PROFILE = "profile"
    WEAPONS = "weapons"
    VEHICLES = "vehicles"
    LOOKUP = "lookup"

    @property
    def resource(self) -> Resource | None:
        """The resource collected, None for a look-up."""
        return None if self is JobKind.LOOKUP else Resource(self.value)

    @property
    def has_state(self) -> bool:
        """Whether the job's outcome is kept in collection_state (every resource job)."""
        return self is not JobKind.LOOKUP



class Lane(StrEnum):
    BACKGROUND = "background"
    INTERACTIVE = "interactive"


class PriorityClass(StrEnum):
    """Highest first. The claim order within a lane is the job's rank (see queue/ranking.py)."""

    INTERACTIVE = "interactive"
    ACTIVE = "active"
    RECENT = "recent"
    BOOTSTRAP = "bootstrap"


class StateStatus(StrEnum):
    """Durable per soldier+resource collection status (collection_state.status)."""

    NEVER_ATTEMPTED = "never_attempted"
    CURRENT = "current"
    DUE = "due"
    RETRY_WAIT = "retry_wait"
    UNAVAILABLE = "unavailable"


class ErrorClass(StrEnum):
    """How a failed attempt is classified. Retryable classes back off; terminal ones park."""

    THROTTLE = "throttle"  # 403 / 429 / TOOMANYSEARCHES / "too many"
    TIMEOUT = "timeout"  # timeouts and connection failures
    SERVER = "server"  # HTTP 5xx and HTML error pages
    NOT_FOUND = "not_found"  # "type":"error", unknown persona: terminal
    MALFORMED = "malformed"  # non-JSON, missing generalStats/mainWeaponStats: retryable
    INTERNAL = "internal"  # BF4PS / database / infrastructure
    # an answer BF4PS does not recognize (an unknown error wording, an unknown HTML page, a
    # success envelope without its data, a login wall): retried with backoff, never parked
    UNRECOGNIZED = "unrecognized"
    # a well-formed answer that contradicts what BF4PS already knows (lifetime counters lower
    # than the stored ones, a career of zeros): retried with backoff, never stored as current,
    # never parked (stats/plausible.py)
    IMPLAUSIBLE = "implausible"

    @property
    def retryable(self) -> bool:
        return self is not ErrorClass.NOT_FOUND

    @property
    def parks(self) -> bool:
        """May repeated failures of this class park a resource? Only the evidenced not-found
        (at once) and payloads that are malformed for this soldier (after
        max_consecutive_failures of them in a row, queue/finalize.py). Every "Battlelog is not
        itself" signal (5xx, redirects, HTML pages, timeouts, login walls, throttles, unknown
        or implausible answers) and our own internal errors say nothing about the soldier."""
        return self in (ErrorClass.NOT_FOUND, ErrorClass.MALFORMED)

    @property
    def gives_up_lookup(self) -> bool:
        """May repeated failures of this class end a look-up (a name search, no soldier yet,
        nothing parked) as failed? Not throttles, internal errors, unknown answers (a login
        wall, an unverified empty search) or implausible ones: those are retried."""
        return self not in (ErrorClass.THROTTLE, ErrorClass.INTERNAL, ErrorClass.UNRECOGNIZED,
                            ErrorClass.IMPLAUSIBLE)

    @property
    def is_outage(self) -> bool:
        """A sign that Battlelog (or the way to it) is not itself: it cools the egress and
        feeds the fleet circuit, and never counts toward parking."""
        return self in (ErrorClass.SERVER, ErrorClass.TIMEOUT)


class SourceType(StrEnum):
    BF4SW = "bf4sw"  # seen playing by BF4SW
    MANUAL = "manual"  # named by a submitted Battlelog URL (unconfirmed)
    BATTLELOG = "battlelog"  # found by Battlelog's own name search (a website lookup)


class JobReason(StrEnum):
    """Why a job exists (collection_jobs.reason, and the `created` event's result). A due
    resource's job takes the reason it was made due for (collection_state.due_reason)."""

    BF4SW_DISCOVERY = "bf4sw_discovery"
    BOOTSTRAP = "bootstrap"
    ACTIVE_REFRESH = "active_refresh"  # stale while active, or a long play session
    FINAL_REFRESH = "final_refresh"  # a play session ended: the snapshot that closes it
    SCHEDULED_PROFILE = "scheduled_profile"  # the slow profile cadence, active or not
    RETRY = "retry"
    MANUAL = "manual"
    LOOKUP = "lookup"


# BF4SW writes platform strings of its own ("PC", "PS4", "PS5", "XBox", "XBoxOne", ...).
BF4SW_PLATFORMS: dict[str, Platform] = {
    "pc": Platform.PC,
    "ps4": Platform.PS4,
    "ps5": Platform.PS4,
    "ps3": Platform.PS3,
    "xbox360": Platform.XBOX360,
}


def bf4sw_platform(raw: str) -> Platform | None:
    """BF4SW's platform string as a BF4PS platform; None when unknown (the alias is skipped)."""
    key = raw.strip().casefold().replace(" ", "")
    if key in BF4SW_PLATFORMS:
        return BF4SW_PLATFORMS[key]
    if key.startswith("xbox"):  # XBox, XBoxOne, XBoxSeries...: Battlelog's xboxone
        return Platform.XBOXONE
    return None
