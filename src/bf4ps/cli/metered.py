"""`bf4ps battlelog fetch` on a fleet: every Battlelog request is counted. On a host with a
configured database (BF4PS_DATABASE_URL, or an embedded server's data directory) each request
takes a slot of the egress gate it leaves through and of the fleet budget, counted in the
request ledger before it is sent, and is sent in that slot on the database's clock, as a
collector's. Without the database it is refused unless --unmetered, which says the fleet's
ceiling no longer holds. A host with no database at all has no fleet to protect."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import click

from bf4ps.battlelog.models import FetchResult
from bf4ps.battlelog.window import SendTooLate, SendWindow
from bf4ps.collector.clock import DbClock, measure
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.fleet import conf as fleetconf
from bf4ps.gates import admission
from bf4ps.gates.admission import Slot, Wait
from bf4ps.gates.restore import Marks, current_hold
from bf4ps.settings import SendTimings, Settings

log = logging.getLogger(__name__)

Call = Callable[[SendWindow | None], Awaitable[FetchResult]]
UNMETERED_WARNING = (
    "warning: --unmetered: this request bypasses the egress gates, the fleet budget and the "
    "request ledger; it is counted nowhere, so the fleet's request ceiling no longer holds "
    "while it is sent")


class Refused(click.ClickException):
    """Nothing was sent."""


def fleet_configured(settings: Settings) -> bool:
    """A database is configured here: requests are the fleet's to count."""
    return settings.database_url is not None or settings.pgdata.exists()


class Unmetered:
    async def send(self, call: Call, kind: str) -> FetchResult:
        return await call(None)


@dataclass
class Metered:
    """Each request in a slot of `egress`, counted before it is sent."""

    conn: Conn
    settings: Settings
    egress: str
    max_wait: float
    clock: DbClock = field(default_factory=DbClock)
    counted: list[Slot] = field(default_factory=list)
    marks: Marks = field(default_factory=Marks)  # shown at each guard check, as a collector's

    async def prepare(self) -> None:
        if await fleetconf.gate(self.conn, self.egress) is None:
            raise Refused(f"no egress gate {self.egress!r}: `bf4ps gate list` shows the fleet's "
                          "egresses (`bf4ps gate set EGRESS --create --interval S` makes one)")
        self.clock.set(await measure(self.conn))

    async def send(self, call: Call, kind: str) -> FetchResult:
        cfg = SendTimings.from_settings(self.settings)
        deadline = self.clock.now() + timedelta(seconds=self.max_wait)
        while True:
            slot = await self._slot(kind, deadline)
            await self.clock.sleep_until(slot.at - timedelta(seconds=cfg.connect_lead))
            window = SendWindow(self.clock.host_epoch(slot.at), self.clock.host_epoch(
                slot.at + timedelta(seconds=cfg.margin / 2)))
            try:
                result = await call(window)
            except SendTooLate as late:  # nothing was sent: the slot stops counting
                await self.conn.execute(q("ledger_unsent_operator"),
                                        {"request_id": slot.request_id})
                log.info("%s; taking another slot", late)
                continue
            self.counted.append(slot)
            result.details.update({"egress": self.egress, "ledger_request_id": slot.request_id,
                                   "slot_at": slot.at.isoformat()})
            return result

    async def _slot(self, kind: str, deadline: datetime) -> Slot:
        cfg = SendTimings.from_settings(self.settings)
        while True:
            held = await current_hold(self.conn, self.marks)
            if held is not None:
                if held.until > deadline:
                    raise Refused(f"sends are held until {held.until:%Y-%m-%d %H:%M:%S} UTC after "
                                  f"a restore ({held.reason}); nothing was sent")
                await self.clock.sleep_until(held.until)
                continue
            got = await admission.operator_slot(self.conn, self.egress, cfg, kind)
            if not isinstance(got, Wait):
                return got
            until = got.until or self.clock.now() + timedelta(seconds=1)
            if until > deadline:
                raise Refused(f"egress {self.egress} has no slot within {self.max_wait:g} s "
                              "(its pacing, a cool-down or the fleet budget); nothing was sent")
            await self.clock.sleep_until(until)
