"""Progress flags as operators read them (`bf4ps flags list`, the console's Flags, the ops
API): the open ones, or every one with who cleared it and why."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, mapped
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


def _flag_row(r: Mapping[str, Any]) -> FlagRow:
    return FlagRow(name=r["current_name"], url=f"/soldiers/{r['platform']}/{r['persona_id']}",
                   **{k: v for k, v in r.items() if k != "current_name"})


async def flags(conn: Conn, *, include_cleared: bool = False, limit: int = 200) -> Flags:
    out = await all_rows(conn, mapped(_flag_row), "progress_flags_list",
                         {"all": include_cleared, "limit": limit})
    return Flags(open=sum(1 for f in out if f.cleared_at is None), flags=out)
