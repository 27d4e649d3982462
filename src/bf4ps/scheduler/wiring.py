"""Which intake the scheduler runs: BF4SW when its database answers, nothing otherwise."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bf4ps.db.connect import Conn
from bf4ps.settings import Settings

log = logging.getLogger(__name__)


async def intake_step(settings: Settings) -> Callable[[Conn], Awaitable[None]] | None:
    return None
