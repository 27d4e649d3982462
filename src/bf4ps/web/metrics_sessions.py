"""The Battlelog-session gauge for /metrics: 1 while an egress's logged-in session is dead
(collector/session.py), until its file is renewed; an alert rule is written against it."""

from __future__ import annotations

from typing import NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows

WEEK_SECONDS = 7 * 86_400.0


class _Session(NamedTuple):
    egress_key: str
    expired: bool


async def session_gauges(conn: Conn) -> list[Metric]:
    gauge = GaugeMetricFamily(
        "bf4ps_battlelog_session_expired",
        "1 while the egress's logged-in Battlelog session is dead (a login wall met with a "
        "session configured) until its session file is renewed",
        labels=["egress"])
    for row in await all_rows(conn, _Session, "web_sessions_expired",
                              {"window_seconds": WEEK_SECONDS}):
        gauge.add_metric([row.egress_key], 1.0 if row.expired else 0.0)
    return [gauge]
