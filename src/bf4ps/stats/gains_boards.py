"""The "this week" gains leaderboards: precomputed rows (gains_boards), rebuilt from the checked,
unflagged intervals of the window by the scheduler every `gains_board_refresh_seconds` and
at once when an operator clears a flag. A board page is then an index range (no scan of the
history per request). Rates are gains.smoothed in SQL (db/functions/progress.sql):
pulled toward the platform's average by `gains_prior_minutes`, so a short sample cannot top a
board, and a soldier needs `gains_board_min_seconds` in the window to be on one at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row


class _Rows(NamedTuple):
    n: int


async def refresh(conn: Conn, now: datetime) -> int:
    """Rebuild every gains board in one transaction (readers see the old rows until it
    commits), in the database (`bf4ps_gains_boards_refresh`: the window, the prior and the
    minimum times are the policy's as stored there); the number of rows written."""
    return (await one_row(conn, _Rows, "gains_boards_refresh", {"now": now})).n
