"""The restore guard's hold (bf4ps_restore_check in db/schema.sql): after a restore
rewound request_ledger, nothing is sent — by a collector, `bf4ps battlelog fetch` or
`bf4ps recon` — until the budget windows no longer hold requests the restore forgot. The
guard notices a restore from the database alone (docs/architecture.md "The restore guard")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, one_row


@dataclass(frozen=True)
class Hold:
    until: datetime
    reason: str
    run_rule: bool = False  # the run rule's (a server start nobody vouched for), not a restore's


@dataclass(frozen=True)
class Receipt:
    """The database's signed word that a ledger row existed (bf4ps_ledger_receipt in
    db/schema.sql): a running collector keeps its newest and shows it at every check, so a
    rewind that kept every identity of the database (a base backup on the same timeline, a
    data-only restore) is still noticed while a collector that was counted past the rewind
    runs."""

    request_id: int
    slot_at: datetime
    receipt: str


class _Receipt(NamedTuple):
    request_id: int
    slot_at: datetime
    receipt: str | None


class _Checked(NamedTuple):
    hold_until: datetime | None
    reason: str | None
    mark: str | None
    now: datetime


class _Held(NamedTuple):
    hold_until: datetime
    reason: str | None
    run_rule: bool


class _Vouched(NamedTuple):
    outcome: str
    run_started_at: datetime | None
    vouched_at: datetime | None
    hold_until: datetime | None
    reason: str | None


async def receipt(conn: Conn, request_id: int) -> Receipt | None:
    """The receipt of a committed ledger row (None: no such row)."""
    row = await one(conn, _Receipt, "ledger_receipt", {"request_id": request_id})
    if row is None or row.receipt is None:  # no row, or no key (a restore under way)
        return None
    return Receipt(row.request_id, row.slot_at, row.receipt)


@dataclass
class Marks:
    """What a running process shows the guard (db/schema.sql): the newest mark the database
    handed it (where the database stood: its WAL position, the ledger's newest row, the
    server's start; signed) and, for a collector, its newest ledger receipt. Held in memory
    only: a database that no longer reaches a mark was rewound, whatever files were lost."""

    seen: Receipt | None = None
    mark: str | None = None


async def current_hold(conn: Conn, marks: Marks | None = None) -> Hold | None:
    """The restore guard's hold now (None: not held), shown the caller's marks, which take the
    new mark the database hands back."""
    marks = marks if marks is not None else Marks()
    seen = marks.seen
    row = await one(conn, _Checked, "restore_check", {
        "request_id": seen.request_id if seen else None,
        "slot_at": seen.slot_at if seen else None, "receipt": seen.receipt if seen else None,
        "mark": marks.mark})
    if row is not None and row.mark is not None:
        marks.mark = row.mark
    if row is None or row.hold_until is None or row.hold_until <= row.now:
        return None
    return Hold(row.hold_until, row.reason or "unknown")


async def standing_hold(conn: Conn) -> Hold | None:
    """The hold a reader shows (the console, `bf4ps status`, /metrics): a detected restore's,
    or the run rule's for a server start no running process vouched for yet. Shows no mark and
    changes nothing."""
    row = await one(conn, _Held, "restore_hold")
    if row is None:
        return None
    return Hold(row.hold_until, str(row.reason), row.run_rule)


@dataclass(frozen=True)
class Vouch:
    """What `bf4ps db vouch` did: outcome 'vouched', 'already vouched' or 'no guard'; the
    run it spoke for and when it was vouched for; a detected restore's hold that remains."""

    outcome: str
    run_started_at: datetime | None
    vouched_at: datetime | None
    remaining: Hold | None


async def vouch(conn: Conn, reason: str) -> Vouch:
    """An operator's audited word that this server start is the database the fleet knew
    (bf4ps_restore_vouch in db/schema.sql): sets the run's vouch only while none is set."""
    row = await one_row(conn, _Vouched, "restore_vouch", {"reason": reason})
    left = Hold(row.hold_until, str(row.reason)) if row.hold_until else None
    return Vouch(row.outcome, row.run_started_at, row.vouched_at, left)
