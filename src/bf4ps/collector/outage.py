"""An answer that says Battlelog is not itself (classify.is_outage: 5xx, a redirect to a login
or maintenance page, an error page, a timeout, a login wall) cools this collector's egress: for
the answer's Retry-After when it gave one (at most ``retry_after_max_seconds``), else for
``outage_cooldown_seconds``. A throttle's Retry-After (a 429 saying how long) is honoured the
same way, beside the throttle's exponential cool-down (gates/throttle.py). The admission never
opens a slot of a cooling egress, so nothing is sent from it meanwhile. The throttle streak is
not touched here: an outage is not our rate's fault.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from bf4ps.battlelog.classify import is_outage
from bf4ps.battlelog.models import FetchResult
from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.queue.jobs import CollectorRef


class _Cooled(NamedTuple):
    cooldown_until: datetime


def cool_seconds(result: FetchResult, policy: Policy) -> float:
    """How long an outage answer cools the egress."""
    retry_after = result.details.get("retry_after_seconds")
    if isinstance(retry_after, int | float):
        return min(float(retry_after), policy.retry_after_max_seconds)
    return policy.outage_cooldown_seconds


async def cool(conn: Conn, me: CollectorRef, result: FetchResult, policy: Policy,
               signature: str) -> float | None:
    """Cool the egress after an outage answer, or after any answer with a Retry-After (a 429
    saying how long: honoured beside the throttle's own cool-down); the seconds, None when it
    was neither."""
    if not is_outage(result) and "retry_after_seconds" not in result.details:
        return None
    seconds = cool_seconds(result, policy)
    if seconds <= 0:
        return 0.0
    async with conn.transaction():
        row = await one(conn, _Cooled, "gate_cool",
                        {"egress_key": me.egress_key, "seconds": seconds})
        if row is not None:
            await events.record(
                conn, EventType.EGRESS_COOLED, http_status=result.http_status,
                result=signature[:40], error_class=result.error_class.value
                if result.error_class else None, **me.event_fields(),
                details={"seconds": round(seconds, 3), "signature": signature,
                         "retry_after": "retry_after_seconds" in result.details,
                         "cooldown_until": row.cooldown_until.isoformat()})
    return seconds
