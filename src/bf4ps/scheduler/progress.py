"""The scheduler's progress step: the checks after storage (stats/progress_check.py) every
few seconds, and the gains leaderboards' rebuild (stats/gains_boards.py) every
`gains_board_refresh_seconds`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import one_row
from bf4ps.stats import gains_boards, progress_check

log = logging.getLogger(__name__)

CHECK_SECONDS = 10.0
MAX_BATCHES = 10  # per step: a backlog is worked off over several steps


class _Now(NamedTuple):
    now: datetime


@dataclass
class ProgressStep:
    refreshed: float = field(default=-1e18)  # monotonic time of the last board rebuild

    async def run(self, conn: Conn) -> None:
        policy = await policy_mod.load(conn)
        now = (await one_row(conn, _Now, "progress_now")).now
        checked = flagged = 0
        for _ in range(MAX_BATCHES):
            report = await progress_check.check_pending(conn, policy, now)
            checked, flagged = checked + report.checked, flagged + report.flagged
            if report.checked < progress_check.BATCH:
                break
        if flagged:
            log.warning("progress: %d soldier(s) flagged over the policy ceilings "
                        "(`bf4ps flags list`)", flagged)
        if time.monotonic() - self.refreshed >= policy.gains_board_refresh_seconds:
            self.refreshed = time.monotonic()
            rows = await gains_boards.refresh(conn, now)
            log.info("progress: %d intervals checked, gains boards rebuilt (%d rows)",
                     checked, rows)
