"""Capacity gauges for /metrics: backlog age and refresh lag per class and resource, and the
scheduler's start-up verdict on whether the live policy fits the live budget."""

from __future__ import annotations

from typing import NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.views import backlog, backtest


class _Check(NamedTuple):
    feasible: bool
    demand_per_hour: float


async def capacity_gauges(conn: Conn) -> list[Metric]:
    b = await backlog.read(conn)
    age = GaugeMetricFamily(
        "bf4ps_backlog_age_seconds",
        "Age of the oldest eligible work not yet served (0: none waiting)",
        labels=["class", "resource"])
    for klass, by in b.age_seconds.items():
        for resource, seconds in by.items():
            age.add_metric([klass, resource], seconds)
    lag = GaugeMetricFamily(
        "bf4ps_refresh_lag_seconds",
        "Becoming due -> collected over the last hour (scheduler's latest record)",
        labels=["class", "resource", "quantile"])
    for klass, lags in b.lag.items():
        for resource, v in lags.items():
            lag.add_metric([klass, resource, "0.5"], v.p50)
            lag.add_metric([klass, resource, "0.95"], v.p95)
    out: list[Metric] = [age, lag]
    row = await one(conn, _Check, "capacity_check_get")
    if row is not None:
        feasible = GaugeMetricFamily(
            "bf4ps_policy_feasible",
            "1 when the live policy fits the live fleet (scheduler's check once collectors served)")
        feasible.add_metric([], 1.0 if row.feasible else 0.0)
        demand = GaugeMetricFamily("bf4ps_forecast_demand_requests_per_hour",
                                   "Steady-state demand the policy asks for")
        demand.add_metric([], row.demand_per_hour)
        out += [feasible, demand]
    tested = await backtest.last(conn)
    if tested is not None:
        err = GaugeMetricFamily(
            "bf4ps_forecast_backtest_error_ratio",
            "Last backtest of the recorded forecasts: mean relative error per figure "
            "(signed: + the forecast was high; stat=abs: mean absolute)",
            labels=["figure", "stat"])
        for name, e in tested.errors.items():
            err.add_metric([name, "mean"], float(e["error"]))
            err.add_metric([name, "abs"], float(e["abs"]))
        out.append(err)
    return out
