"""Throttle responses cool the whole egress down (exponential, capped); successes let it
recover one step at a time. Both transitions are events.

A hard throttle (a 403/429 or a throttle message) cools the egress at once. A soft throttle
(an answer with nothing in it: a null body, a success without its stats) is Battlelog's own
noise when it comes alone (1.6-8.4 % of detailed answers on the record, all retried fine, no
403/429 at all): the job retries and the egress goes on. Only a run of them on one egress,
``soft_throttle_run`` of its last ``soft_throttle_answers`` answers since its last cool-down,
is taken for a throttle (docs/battlelog.md "Soft throttles"). The ``egress_throttled`` event
says which signal it was and on which resource.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, q
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.queue.jobs import CollectorRef

SOFT_THROTTLE = "soft_throttle"
THROTTLE_MESSAGE = "throttle_message"


class _Throttled(NamedTuple):
    throttle_streak: int
    cooldown_until: datetime


class _Streak(NamedTuple):
    throttle_streak: int


class _Soft(NamedTuple):
    soft: int
    answers: int
    cooling: bool


class Cause(NamedTuple):
    """What cooled the egress: the signal (``http_403``, ``http_429``, ``throttle_message``,
    ``soft_throttle``), the resource asked for, and the answer's HTTP status."""

    signal: str
    resource: str | None = None
    http_status: int | None = None


def hard_signal(http_status: int | None) -> str:
    """The signal of a hard throttle: its status when it was a 403/429, else its message."""
    return f"http_{http_status}" if http_status in (403, 429) else THROTTLE_MESSAGE


async def throttled(conn: Conn, me: CollectorRef, base: float, cap: float, cause: Cause,
                    extra: dict[str, int] | None = None) -> None:
    async with conn.transaction():
        row = await one(conn, _Throttled, "gate_throttled", {
            "egress_key": me.egress_key, "base_seconds": base, "max_seconds": cap})
        if row is None:
            return
        await events.record(conn, EventType.EGRESS_THROTTLED, http_status=cause.http_status,
                            error_class="throttle", resource=cause.resource,
                            result=cause.signal, **me.event_fields(),
                            details={"signal": cause.signal, "streak": row.throttle_streak,
                                     "cooldown_until": row.cooldown_until.isoformat(),
                                     **(extra or {})})


async def soft_answer(conn: Conn, me: CollectorRef, base: float, cap: float, policy: Policy,
                      cause: Cause) -> bool:
    """A soft throttle was just finalized (its event is in the log): cool the egress when it
    completes a run, unless it is cooling already. True when it cooled it."""
    run = min(policy.soft_throttle_run, policy.soft_throttle_answers)
    async with conn.transaction():  # one collector of the egress at a time: one cool-down
        await conn.execute(q("egress_soft_lock"), {"egress_key": me.egress_key})
        seen = await one(conn, _Soft, "egress_soft_answers", {
            "egress_key": me.egress_key, "answers": policy.soft_throttle_answers,
            "window_seconds": policy.soft_throttle_window_seconds})
        if seen is None or seen.cooling or seen.soft < run:
            return False
        await throttled(conn, me, base, cap, cause, {"soft_answers": seen.soft,
                                                     "answers": seen.answers})
    return True


async def succeeded(conn: Conn, me: CollectorRef) -> None:
    async with conn.transaction():
        row = await one(conn, _Streak, "gate_recovered", {"egress_key": me.egress_key})
        if row is not None and row.throttle_streak == 0:
            await events.record(conn, EventType.EGRESS_RECOVERED, **me.event_fields())
