"""An egress's rate gate: the one type of an egress_gates row, wherever one is read (the
operator's `bf4ps gate`, a collector's seed, `bf4ps status` and the console). Its pacing rule
is the database's alone (bf4ps_paced_slot and bf4ps_paced_interval in db/schema.sql), applied
by the admission and read by the interactive estimate."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Gate:
    """An egress's gate as the database keeps it (egress_gates, db/schema.sql)."""

    egress_key: str
    min_interval_seconds: float
    window_requests: int | None
    window_seconds: float | None
    next_slot_at: datetime
    cooldown_until: datetime | None
    throttle_streak: int
    last_throttle_at: datetime | None
    requests_total: int
    updated_at: datetime
    updated_by: str | None
    last_outage_at: datetime | None
