"""Reading the event log: one search for the CLI, the API and the console, and the human text
rendered from an event's structured fields."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q


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

    def params(self) -> dict[str, Any]:
        return {"persona_id": self.persona_id, "platform": self.platform,
                "collector": self.collector, "resource": self.resource,
                "event_type": self.event_type, "since": self.since, "until": self.until,
                "name": self.name.lower() if self.name else None,
                "limit": max(1, min(self.limit, 1000))}

    def describe(self) -> str:
        """The filters in use, for 'no events match (name TheOnlyBond, type failed)'."""
        shown = {"name": self.name, "persona": self.persona_id, "platform": self.platform,
                 "collector": self.collector, "resource": self.resource,
                 "type": self.event_type, "since": self.since}
        return ", ".join(f"{k} {v}" for k, v in shown.items() if v is not None)


async def search(conn: Conn, flt: EventFilter) -> list[dict[str, Any]]:
    cur = await conn.execute(q("events_search"), flt.params())
    return [dict(r) for r in await cur.fetchall()]


def render(e: dict[str, Any]) -> str:
    """One line of human text, built from the fields (the log stores no prose)."""
    who = e.get("collector_name") or "scheduler"
    what = e["event_type"].replace("_", " ")
    target = _target(e)
    extras = []
    if e.get("attempt_number"):
        extras.append(f"attempt {e['attempt_number']}")
    if e.get("http_status"):
        extras.append(f"HTTP {e['http_status']}")
    if e.get("duration_ms") is not None:
        extras.append(f"{e['duration_ms']} ms")
    if e.get("wait_ms") is not None:
        extras.append(f"waited {e['wait_ms']} ms")
    if e.get("error_class"):
        message = e.get("error_message")
        extras.append(f"{e['error_class']}: {message}" if message else e["error_class"])
    tail = f" ({', '.join(extras)})" if extras else ""
    return f"{e['occurred_at']:%Y-%m-%d %H:%M:%S} UTC  {who}: {what}{target}{tail}"


def _target(e: dict[str, Any]) -> str:
    """What the event is about: a soldier's resource, else (a name lookup, whose persona is
    not known yet) the job."""
    resource = e.get("resource") or ""
    if e.get("persona_id"):
        who = f"{e['persona_id']}/{e.get('platform')}"
        name = e.get("soldier_name")
        return f" {resource} of {name} ({who})" if name else f" {resource} of {who}"
    if not e.get("job_id"):
        return ""
    parts = [resource, "job", str(e["job_id"])]
    if e.get("platform"):
        parts += ["on", e["platform"]]
    return " " + " ".join(p for p in parts if p)
