"""Sending within a slot. A request leaves in its slot or not at all: the slot is checked
before the request and again at the socket (the client's send window: the request is begun
the connect lead ahead of the slot and its headers wait there for it). A slot given up was
counted in the ledger before anything could be sent; since nothing was sent, its ledger row is
marked unsent and stops counting against the budgets. A new slot is then taken.

Slots are database times: every wait and check here reads the database's clock as this host
measured it (clock.py), not the host's own."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from bf4ps.battlelog.window import SendTooLate, SendWindow
from bf4ps.collector.clock import DbClock
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.gates import admission
from bf4ps.gates.admission import Slot, Wait
from bf4ps.queue.jobs import ClaimedJob, CollectorRef
from bf4ps.settings import SendTimings

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Pacing:
    """Whose slots, on which gate, for which job."""

    me: CollectorRef
    gate: SendTimings
    job: ClaimedJob
    clock: DbClock = field(default_factory=DbClock)

    @property
    def tolerance(self) -> float:
        # half the margin may be spent before the request is written, half is left for what
        # follows (the network, the far end reading it); a quarter re-slotted too often
        return self.gate.margin / 2

    def window(self, slot: Slot) -> SendWindow:
        """When the request may be written: from the slot to its deadline (on this host's
        clock, at which the database's reads them)."""
        return SendWindow(self.clock.host_epoch(slot.at),
                          self.clock.host_epoch(slot.at + timedelta(seconds=self.tolerance)))

    def begin(self, slot: Slot) -> datetime:
        """When to begin the request: the connect lead before the slot."""
        return slot.at - timedelta(seconds=self.gate.connect_lead)


async def next_slot(conn: Conn, p: Pacing, tries: int = 20) -> Slot | None:
    """A further send slot for a job already held, slept up to its connect lead; None when
    none could be had."""
    for _ in range(tries):
        got = await admission.extra_slot(conn, p.me, p.gate, p.job)
        if not isinstance(got, Wait):
            await p.clock.sleep_until(p.begin(got))
            return got
        if got.until is None:
            return None
        await p.clock.sleep_until(got.until)
    return None


async def give_up(conn: Conn, p: Pacing, slot: Slot, why: str) -> None:
    """Nothing was sent in this slot: its ledger row stops counting."""
    log.info("job %s: %s; slot given up", p.job.job_id, why)
    await unsent(conn, p.me, p.job, slot)


async def unsent(conn: Conn, me: CollectorRef, job: ClaimedJob, slot: Slot) -> None:
    """The job's request was not sent in `slot`: its ledger row stops counting (fenced by the
    job's lease, so before any release)."""
    await conn.execute(q("ledger_unsent"), {"request_id": slot.request_id,
                                            "collector_uuid": me.collector_uuid,
                                            "lease_token": job.lease.lease_token})


async def on_time(conn: Conn, p: Pacing, slot: Slot) -> Slot | None:
    """Never send late: a request sent well after its slot could follow the next slot's request
    (another collector's, on time) too closely. A late slot is given up and a new one taken.
    The slot to send in; None: no slot could be had (nothing was sent)."""
    for _ in range(20):
        late = -p.clock.seconds_until(slot.at)
        if late <= p.tolerance:
            return slot
        await give_up(conn, p, slot, f"slot missed by {late:.3f} s")
        got = await next_slot(conn, p)
        if got is None:
            return None
        slot = got
    return None


async def send_in_slot(conn: Conn, p: Pacing, slot: Slot,
                       send: Callable[[SendWindow], Awaitable[T]], *, tries: int = 20
                       ) -> tuple[T, Slot] | None:
    """`send(window)` within a slot; its answer and the slot it was sent in. A request refused
    at the socket as too late (a stall between the check and the write) is past its slot's
    tolerance, so the next on-time check gives that slot up and takes a new one. None: nothing
    was sent."""
    for _ in range(tries):
        in_slot = await on_time(conn, p, slot)
        if in_slot is None:
            return None
        slot = in_slot
        try:
            return await send(p.window(slot)), slot
        except SendTooLate as late:
            log.info("job %s: %s", p.job.job_id, late)
    await give_up(conn, p, slot, f"refused at the socket {tries} time(s)")
    return None


async def further_request(conn: Conn, p: Pacing,
                          send: Callable[[SendWindow], Awaitable[T]]) -> T | None:
    """A further physical request for a job whose first request has been sent: its own slot
    through the same gates, one try at the socket (a missed slot drops only this request).
    None: nothing was sent."""
    slot = await next_slot(conn, p, tries=3)
    if slot is None:
        return None
    sent = await send_in_slot(conn, p, slot, send, tries=1)
    return None if sent is None else sent[0]
