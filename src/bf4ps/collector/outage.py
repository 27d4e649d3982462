"""An answer that says Battlelog is not itself (classify.is_outage: 5xx, a redirect to a login
or maintenance page, an error page, a timeout, a login wall) cools this collector's egress: for
the answer's Retry-After (at most ``retry_after_max_seconds``; a 429's too, beside the
throttle's own cool-down, gates/throttle.py), else for ``outage_cooldown_seconds`` counted from
the request's send (a timeout has already rested its egress that long). The admission opens no
slot of a cooling egress. The throttle streak is not touched: an outage is not our rate's
fault. ``outage_cooldown_jitter`` spreads the cool-down (the plain one ± half of it, a
Retry-After's only upward), so egresses cooled by one outage resume apart. The
``egress_cooled`` event names its signal (``retry_after``, ``login_wall``, ``login_redirect``,
``http_5xx``, ``timeout`` ...) and the resource asked for.
"""
from __future__ import annotations

import random
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


def cool_seconds(result: FetchResult, policy: Policy, rng: random.Random | None = None
                 ) -> float:
    """How long from now an outage answer cools the egress: the outage cool-down times 1 ± the
    jitter (its mean unchanged), counted from the request's send (the time the answer took is
    part of it: a hung request's wait is its egress's rest), or the answer's Retry-After (at
    most the cap; from the answer, which says it) plus up to the jitter times the outage
    cool-down (a Retry-After is never cut short)."""
    spread = policy.outage_cooldown_jitter * policy.outage_cooldown_seconds
    draw = (rng or random).uniform(0, spread)
    retry_after = result.details.get("retry_after_seconds")
    if isinstance(retry_after, int | float):
        return min(float(retry_after), policy.retry_after_max_seconds) + draw
    # counted from the send: a request that hung (a timeout) already kept its egress quiet
    return max(0.0, policy.outage_cooldown_seconds - spread / 2 + draw
               - result.duration_seconds)


def cool_signal(result: FetchResult) -> str:
    """What the cool-down was for: a Retry-After, else the answer's recognized signal
    (``login_wall``, ``login_redirect``, ``http_5xx`` ...), else its class (``timeout``)."""
    if "retry_after_seconds" in result.details:
        return "retry_after"
    signal = result.details.get("signal")
    if isinstance(signal, str):
        return signal
    return result.error_class.value if result.error_class else "unknown"


async def cool(conn: Conn, me: CollectorRef, result: FetchResult, policy: Policy,
               signature: str, resource: str | None = None) -> float | None:
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
                if result.error_class else None, resource=resource, **me.event_fields(),
                details={"seconds": round(seconds, 3), "signature": signature,
                         "signal": cool_signal(result),
                         "retry_after": "retry_after_seconds" in result.details,
                         "cooldown_until": row.cooldown_until.isoformat()})
    return seconds
