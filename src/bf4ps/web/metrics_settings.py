"""Fleet-settings gauges for /metrics: the pacing each gate holds and the fleet budget's window
as they are in the tables (whoever wrote them), and when the audited commands last changed a
gate, the budget or the shares. An alert rule fires on an audited change and, louder, on a
change of these values that no audited command recorded (deploy/prometheus/)."""

from __future__ import annotations

from typing import NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one


class _Changed(NamedTuple):
    setting: str
    changed_at: float  # epoch seconds


class _Pacing(NamedTuple):
    egress_key: str
    min_interval_seconds: float
    window_requests: int | None


class _BudgetWindow(NamedTuple):
    window_seconds: float


async def settings_gauges(conn: Conn) -> list[Metric]:
    changed = GaugeMetricFamily(
        "bf4ps_fleet_settings_changed_timestamp_seconds",
        "When the audited commands last changed this kind of fleet setting (Unix time)",
        labels=["setting"])
    for c in await all_rows(conn, _Changed, "web_metrics_settings_changed"):
        changed.add_metric([c.setting], c.changed_at)
    interval = GaugeMetricFamily("bf4ps_egress_min_interval_seconds",
                                 "The egress gate's minimum spacing of requests",
                                 labels=["egress"])
    window = GaugeMetricFamily("bf4ps_egress_window_limit_requests",
                               "The egress gate's second limit per window (0: none)",
                               labels=["egress"])
    for g in await all_rows(conn, _Pacing, "web_metrics_gate_pacing"):
        interval.add_metric([g.egress_key], g.min_interval_seconds)
        window.add_metric([g.egress_key], float(g.window_requests or 0))
    budget_window = GaugeMetricFamily("bf4ps_fleet_budget_window_seconds",
                                      "The fleet budget's rolling window")
    row = await one(conn, _BudgetWindow, "web_metrics_budget_window")
    budget_window.add_metric([], row.window_seconds if row else 0.0)
    return [changed, interval, window, budget_window]
