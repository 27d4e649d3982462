"""The "this week" gains leaderboards: precomputed rows (gains_boards), rebuilt from the checked,
unflagged intervals of the window by the scheduler every `gains_board_refresh_seconds` and
at once when an operator clears a flag. A board page is then an index range (no scan of the
history per request). Rates are gains.smoothed in SQL (progress.sql gains_boards_fill_*):
pulled toward the platform's average by `gains_prior_minutes`, so a short sample cannot top a
board, and a soldier needs `gains_board_min_seconds` in the window to be on one at all.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute
from bf4ps.policy import Policy


async def refresh(conn: Conn, policy: Policy, now: datetime) -> int:
    """Rebuild every gains board in one transaction (readers see the old rows until it
    commits); the number of rows written."""
    since = now - timedelta(seconds=policy.gains_window_seconds)
    common = {"since": since, "now": now, "prior_minutes": policy.gains_prior_minutes}
    async with conn.transaction():
        await execute(conn, "gains_board_items_clear")
        await execute(conn, "gains_boards_clear")
        rows = await execute(conn, "gains_boards_fill_soldiers",
                             {**common, "min_seconds": policy.gains_board_min_seconds})
        rows += await execute(conn, "gains_boards_fill_items",
                              {**common, "min_seconds": policy.gains_board_item_min_seconds})
        await execute(conn, "gains_board_items_fill")
    return rows
