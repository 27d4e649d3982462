"""An operator's clear of a progress flag (`bf4ps flags clear`, the console's Flags): audited
(the clear is kept on the flag with who and why, and a progress_flag_cleared event), and the
gains boards are rebuilt at once, so a soldier with no open flag left is back on them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, one_row
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.stats import gains_boards
from bf4ps.stats.progress_check import RESOURCE_OF_KIND


class FlagNotOpen(LookupError):
    """No open flag with that id (unknown, or already cleared)."""


@dataclass(frozen=True, slots=True)
class Cleared:
    flag_id: int
    soldier_id: int
    board_rows: int


class _Now(NamedTuple):
    now: datetime


class _Cleared(NamedTuple):
    soldier_id: int
    persona_id: int
    platform: str
    kind: str
    item_id: int | None
    reason: str


async def clear(conn: Conn, flag_id: int, *, by: str,
                note: str | None = None, now: datetime | None = None) -> Cleared:
    """Clear an open flag (FlagNotOpen when there is none); `now`: the database clock unless
    given (the boards' window ends there)."""
    async with conn.transaction():
        if now is None:
            now = (await one_row(conn, _Now, "progress_now")).now
        row = await one(conn, _Cleared, "progress_flag_clear",
                        {"flag_id": flag_id, "now": now, "by": by[:200],
                         "note": note[:500] if note else None})
        if row is None:
            raise FlagNotOpen(f"no open flag {flag_id} (see `bf4ps flags list --all`)")
        await events.record(
            conn, EventType.PROGRESS_FLAG_CLEARED, soldier_id=row.soldier_id,
            persona_id=row.persona_id, platform=row.platform,
            resource=RESOURCE_OF_KIND[row.kind].value, result="cleared",
            details={"flag_id": flag_id, "by": by[:200], "note": note, "kind": row.kind,
                     "item_id": row.item_id, "reason": row.reason})
        rows = await gains_boards.refresh(conn, now)
    return Cleared(flag_id=flag_id, soldier_id=row.soldier_id, board_rows=rows)
