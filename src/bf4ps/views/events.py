"""Reading the event log: one search for the CLI, the API and the console, each event typed,
and the human text rendered from an event's structured fields."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows
from bf4ps.events.log import EventType
from bf4ps.views.fields import (
    CollectorName,
    EgressKey,
    Moment,
    PersonaParam,
    PlatformName,
    SoldierName,
)

WINDOWS = {"15m": 900, "1h": 3600, "6h": 21600, "24h": 86400, "7d": 604800, "30d": 2592000,
           "180d": 15552000}
Window = Literal["15m", "1h", "6h", "24h", "7d", "30d", "180d"]
EventResource = Literal["detailed", "profile", "weapons", "vehicles", "lookup"]  # JobKind (a test)


class Event(BaseModel):
    """One collection_events row, with its soldier's current name (a look-up's: the name it
    resolved)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: int
    occurred_at: datetime
    event_type: str
    collector_name: str | None = None
    hostname: str | None = None
    egress_key: str | None = None
    lane: str | None = None
    job_id: int | None = None
    soldier_id: int | None = None
    persona_id: int | None = None
    platform: str | None = None
    resource: str | None = None
    priority_class: str | None = None
    attempt_number: int | None = None
    result: str | None = None
    duration_ms: int | None = None
    wait_ms: int | None = None
    http_status: int | None = None
    error_class: str | None = None
    error_message: str | None = None
    details: dict[str, Any] | None = None
    soldier_name: str | None = None


@dataclass(frozen=True)
class EventFilter:
    persona_id: int | None = None
    platform: str | None = None
    collector: str | None = None
    resource: str | None = None
    event_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 100
    name: str | None = None  # the soldier's current or a former name, any case
    egress: str | None = None  # the rate-limit domain (egress key), exact

    def params(self) -> dict[str, object]:
        """events_search's named parameters: the filters, the name lower-cased, the limit
        kept within 1..1,000."""
        return asdict(self) | {"name": self.name.lower() if self.name else None,
                               "limit": max(1, min(self.limit, 1000))}

    def describe(self) -> str:
        """The filters in use, for 'no events match (name TheOnlyBond, type failed)'."""
        shown = {"name": self.name, "persona": self.persona_id, "platform": self.platform,
                 "collector": self.collector, "egress": self.egress, "resource": self.resource,
                 "type": self.event_type, "since": self.since, "until": self.until}
        return ", ".join(f"{k} {v}" for k, v in shown.items() if v is not None)


async def search(conn: Conn, flt: EventFilter) -> list[Event]:
    return await all_rows(conn, Event, "events_search", flt.params())


def render(e: Event) -> str:
    """One line of human text, built from the fields (the log stores no prose)."""
    who = e.collector_name or "scheduler"
    what = e.event_type.replace("_", " ")
    extras = []
    if e.attempt_number:
        extras.append(f"attempt {e.attempt_number}")
    if e.http_status:
        extras.append(f"HTTP {e.http_status}")
    if e.duration_ms is not None:
        extras.append(f"{e.duration_ms} ms")
    if e.wait_ms is not None:
        extras.append(f"waited {e.wait_ms} ms")
    if e.error_class:
        extras.append(f"{e.error_class}: {e.error_message}" if e.error_message
                      else e.error_class)
    tail = f" ({', '.join(extras)})" if extras else ""
    return f"{e.occurred_at:%Y-%m-%d %H:%M:%S} UTC  {who}: {what}{_target(e)}{tail}"


def _target(e: Event) -> str:
    """What the event is about: a soldier's resource, else (a name lookup, whose persona is
    not known yet) the job."""
    resource = e.resource or ""
    if e.persona_id:
        who = f"{e.persona_id}/{e.platform}"
        name = e.soldier_name
        return f" {resource} of {name} ({who})" if name else f" {resource} of {who}"
    if not e.job_id:
        return ""
    parts = [resource, "job", str(e.job_id)]
    if e.platform:
        parts += ["on", e.platform]
    return " " + " ".join(p for p in parts if p)


class EventQuery(BaseModel):
    """The event-log search's filters (/api/ops/events, /ops/events), each validated; a time
    window always applies (since defaults to `window` before until, until to now)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    persona_id: PersonaParam | None = None
    name: SoldierName | None = None  # current or former, any case
    platform: PlatformName | None = None
    collector: CollectorName | None = None
    egress: EgressKey | None = None
    resource: EventResource | None = None
    type: EventType | None = None
    window: Window = "24h"
    since: Moment | None = None
    until: Moment | None = None
    limit: Annotated[int, Field(ge=1, le=500)] = 100

    def filter(self) -> EventFilter:
        until = self.until or datetime.now(UTC) + timedelta(seconds=1)
        return EventFilter(
            persona_id=self.persona_id, name=self.name,
            platform=self.platform.value if self.platform else None, collector=self.collector,
            egress=self.egress, resource=self.resource,
            event_type=self.type.value if self.type else None,
            since=self.since or until - timedelta(seconds=WINDOWS[self.window]), until=until,
            limit=self.limit)


class Events(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    events: list[Event]
