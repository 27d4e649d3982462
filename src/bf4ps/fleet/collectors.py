"""Operator actions on the registry: drain, resume, disable, retire (each an event)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, q
from bf4ps.domain import Lane
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.queue.jobs import CollectorRef


class ControlError(LookupError):
    pass


@dataclass(frozen=True)
class Controlled:
    """The collector an action changed, as its registry row is after the change."""

    collector_uuid: UUID
    collector_name: str
    hostname: str
    egress_key: str
    lane: str
    enabled: bool
    drained: bool

    def ref(self) -> CollectorRef:
        return CollectorRef(self.collector_uuid, self.collector_name, self.hostname,
                            self.egress_key, Lane(self.lane))


# the flags each action sets (None: left as it is)
ACTIONS: dict[str, tuple[dict[str, bool | None], EventType]] = {
    "drain": ({"enabled": None, "drained": True}, EventType.COLLECTOR_DRAINED),
    "resume": ({"enabled": True, "drained": False}, EventType.COLLECTOR_RESUMED),
    "disable": ({"enabled": False, "drained": None}, EventType.COLLECTOR_DISABLED),
}


async def act(conn: Conn, action: str, name: str,
              reason: str = "operator requested") -> Controlled:
    async with conn.transaction():
        if action == "retire":
            row = await _retire(conn, name)
            kind = EventType.COLLECTOR_RETIRED
        else:
            flags, kind = ACTIONS[action]
            row = await one(conn, Controlled, "collector_set_flags",
                               {"name": name, "reason": reason, **flags})
        if row is None:
            raise ControlError(f"no current collector named {name!r}")
        ref = row.ref()
        await events.record(conn, kind, **ref.event_fields(), lane=ref.lane.value,
                            result=action, details={"reason": reason})
        return row


async def _retire(conn: Conn, name: str) -> Controlled | None:
    row = await one(conn, Controlled, "collector_by_name", {"name": name})
    if row is None:
        return None
    await conn.execute(q("collector_retire"), {"collector_uuid": row.collector_uuid,
                                               "replaced_by": None})
    return row
