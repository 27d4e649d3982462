"""Progress flags as operators read them (`bf4ps flags list`, the console's Flags, the ops
API): the open ones, or every one with who cleared it and why."""

from __future__ import annotations

from datetime import datetime

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_dicts
from bf4ps.views.soldier import Model


class FlagRow(Model):
    flag_id: int
    soldier_id: int
    name: str
    platform: str
    persona_id: int
    url: str
    kind: str  # soldier, weapon or vehicle
    item_id: int | None
    started_at: datetime
    ended_at: datetime
    reason: str
    flagged_at: datetime
    cleared_at: datetime | None
    cleared_by: str | None
    clear_note: str | None


class Flags(Model):
    open: int
    flags: list[FlagRow]


async def flags(conn: Conn, *, include_cleared: bool = False, limit: int = 200) -> Flags:
    rows = await all_dicts(conn, "progress_flags_list", {"all": include_cleared, "limit": limit})
    out = [FlagRow(name=r["current_name"], url=f"/soldiers/{r['platform']}/{r['persona_id']}",
                   **{k: v for k, v in r.items() if k != "current_name"}) for r in rows]
    return Flags(open=sum(1 for f in out if f.cleared_at is None), flags=out)
