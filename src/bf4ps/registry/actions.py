"""Operator actions on the registry: drain, resume, disable, retire (each an event)."""

from __future__ import annotations

from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, q
from bf4ps.domain import Lane
from bf4ps.queue import events
from bf4ps.queue.events import EventType
from bf4ps.queue.jobs import CollectorRef


class ControlError(LookupError):
    pass


ACTIONS: dict[str, tuple[dict[str, Any], EventType]] = {
    "drain": ({"enabled": None, "drained": True}, EventType.COLLECTOR_DRAINED),
    "resume": ({"enabled": True, "drained": False}, EventType.COLLECTOR_RESUMED),
    "disable": ({"enabled": False, "drained": None}, EventType.COLLECTOR_DISABLED),
}


async def act(conn: Conn, action: str, name: str,
              reason: str = "operator requested") -> dict[str, Any]:
    async with conn.transaction():
        if action == "retire":
            row = await _retire(conn, name)
            kind = EventType.COLLECTOR_RETIRED
        else:
            flags, kind = ACTIONS[action]
            row = await one(conn, "collector_set_flags",
                                     {"name": name, "reason": reason, **flags})
        if row is None:
            raise ControlError(f"no current collector named {name!r}")
        ref = CollectorRef(row["collector_uuid"], row["collector_name"], row["hostname"],
                           row["egress_key"], Lane(row["lane"]))
        await events.record(conn, kind, **ref.event_fields(), lane=ref.lane.value,
                            result=action, details={"reason": reason})
        return row


async def _retire(conn: Conn, name: str) -> dict[str, Any] | None:
    row = await one(conn, "collector_by_name", {"name": name})
    if row is None:
        return None
    await conn.execute(q("collector_retire"), {"collector_uuid": row["collector_uuid"],
                                               "replaced_by": None})
    return row
