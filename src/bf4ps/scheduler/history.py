"""The fleet's history: one compact record per interval (coverage, what finished, requests
per egress against its pacing limit, backlog age, refresh lag), written by the active
scheduler, pruned past the policy's horizon like the event log; and the start-up capacity
check (does the live policy fit the live fleet?)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from psycopg.types.json import Jsonb

from bf4ps.capacity.forecast import Forecast
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, q
from bf4ps.queue import figures
from bf4ps.scheduler import retention
from bf4ps.views import backlog
from bf4ps.views import forecast_report as report

log = logging.getLogger(__name__)


class _EgressRequests(NamedTuple):
    egress_key: str
    min_interval_seconds: float
    requests: int


async def record(conn: Conn, interval_seconds: float) -> None:
    coverage = await figures.coverage(conn)
    finished = await figures.throughput(conn, interval_seconds)
    by_egress = await all_rows(conn, _EgressRequests, "requests_by_egress",
                               {"window_seconds": interval_seconds})
    requests = {r.egress_key: {
        "requests": r.requests, "limit": round(interval_seconds / r.min_interval_seconds, 2)}
        for r in by_egress}
    lag = await backlog.refresh_lag(conn)
    await conn.execute(q("history_record"), {
        "interval_seconds": interval_seconds,
        "soldiers": sum(coverage.get("detailed", {}).values()),
        "coverage": Jsonb(coverage),
        "finished": Jsonb({r: {"succeeded": v.succeeded, "failed": v.failed}
                           for r, v in finished.items()}),
        "requests": Jsonb(requests), "backlog_age": Jsonb(await backlog.ages(conn)),
        "refresh_lag": Jsonb({k: {r: v.model_dump() for r, v in by.items()}
                              for k, by in lag.items()})})


async def prune(conn: Conn, retention_days: float, *, batch: int = 5000,
                now: datetime | None = None) -> int:
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    return await retention.delete_in_batches(conn, "history_delete_batch", cutoff, batch)


def verdict(fc: Forecast) -> str:
    words = (f"; to fit, refresh {fc.suggestion}" if fc.suggestion and fc.suggested else "")
    return (f"the live policy {report.verdict(fc)}{words} (see `bf4ps forecast`)")[:500]


async def check_capacity(conn: Conn, fc: Forecast) -> Forecast:
    """Once the collectors have served a window: one log line (a warning when infeasible) and
    the capacity_check row that /metrics exposes as bf4ps_policy_feasible."""
    summary = verdict(fc)
    await conn.execute(q("capacity_check_set"), {
        "feasible": fc.fits, "demand_per_hour": fc.demand_per_hour,
        "capacity_per_hour": fc.capacity.per_hour, "summary": summary})
    if fc.fits:
        log.info("capacity: %s", summary)
    else:
        log.warning("capacity: %s", summary)
    return fc
