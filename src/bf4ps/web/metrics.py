"""Prometheus exposition on a registry owned by the app (no global registry).

Gauges are read from the database on each scrape (queue depth, coverage counters, collector
health, budget use). Counters and histograms of collection work are accumulated from the
event log: each scrape reads only the events added since the previous one (by event id), so a
scrape stays cheap however long the log is. The web process's own requests are counted in
process. Label values are bounded: resources, lanes, classes, event types, collector names and
egress keys of the (small) fleet, and coarse route groups.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bf4ps.db.connect import SCHEDULER_LOCK, Conn
from bf4ps.db.queries import all_rows, one
from bf4ps.domain import JobKind, Lane
from bf4ps.gates import circuit
from bf4ps.views import console
from bf4ps.views.console import StatusCount
from bf4ps.web.metrics_capacity import capacity_gauges
from bf4ps.web.metrics_sessions import session_gauges
from bf4ps.web.metrics_settings import settings_gauges
from bf4ps.web.security import HttpMiddleware

BOUNDS_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
# width_bucket counts thresholds <= value: value_ms <= b*1000  <=>  value_ms < b*1000 + 1
BOUNDS_MS = [int(b * 1000) + 1 for b in BOUNDS_SECONDS]
MAX_EVENTS_PER_SCRAPE = 200_000
# events logged less than this long ago are left to the next scrape: their transactions may
# still commit lower ids (see web.sql web_metrics_last_event)
COMMIT_LAG_SECONDS = 10.0
ROUTE_GROUPS = ("/api/ops", "/api/soldiers", "/api/requests", "/api/search", "/api",
                "/soldiers", "/requests", "/ops", "/static", "/metrics", "/healthz",
                "/openapi.json")


@dataclass
class _Hist:
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS_MS) + 1))
    total: float = 0.0

    def add(self, bucket: int, n: int, total_ms: int) -> None:
        self.buckets[bucket] += n
        self.total += total_ms / 1000.0

    def exposition(self) -> list[tuple[str, float]]:
        out, running = [], 0
        for bound, n in zip(BOUNDS_SECONDS, self.buckets, strict=False):
            running += n
            out.append((str(bound), float(running)))
        out.append(("+Inf", float(sum(self.buckets))))
        return out


class _LastEvent(NamedTuple):
    event_id: int


class _Events(NamedTuple):
    """Events per type, resource and lane (with the histogram bucket of their timings)."""

    event_type: str
    resource: str
    lane: str
    duration_bucket: int | None
    wait_bucket: int | None
    n: int
    duration_sum: int
    wait_sum: int


class _Throttles(NamedTuple):
    egress_key: str
    n: int


class _Failures(NamedTuple):
    resource: str
    lane: str
    error_class: str
    n: int


class _Count(NamedTuple):
    n: int


class _Intake(NamedTuple):
    source_name: str
    failing: bool
    success_age: float | None


class _Hold(NamedTuple):
    seconds: float


@dataclass
class EventTally:
    """Cumulative counts of the event log since this process first looked at it; the failures
    by class count the whole retained log (they agree with it). Events of the last
    ``lag_seconds`` are counted by a later scrape, once their transactions have committed."""

    cursor: int | None = None
    lag_seconds: float = COMMIT_LAG_SECONDS
    events: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    durations: dict[str, _Hist] = field(default_factory=lambda: defaultdict(_Hist))
    waits: dict[str, _Hist] = field(default_factory=lambda: defaultdict(_Hist))
    throttles: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def advance(self, conn: Conn) -> None:
        async with self.lock:
            row = await one(conn, _LastEvent, "web_metrics_last_event",
                            {"lag_seconds": self.lag_seconds})
            last = row.event_id if row else 0
            if self.cursor is None:
                self._add_failures(await all_rows(conn, _Failures, "web_metrics_failures_total",
                                                  {"upto": last}))
                self.cursor = last
                return
            upto = min(last, self.cursor + MAX_EVENTS_PER_SCRAPE)
            if upto <= self.cursor:
                return
            params = {"after": self.cursor, "upto": upto, "bounds": BOUNDS_MS}
            for r in await all_rows(conn, _Events, "web_metrics_events", params):
                self._add(r)
            for t in await all_rows(conn, _Throttles, "web_metrics_throttles", params):
                self.throttles[t.egress_key] += t.n
            self._add_failures(await all_rows(conn, _Failures, "web_metrics_failures", params))
            self.cursor = upto

    def _add_failures(self, rows: list[_Failures]) -> None:
        for r in rows:
            self.failures[(r.error_class, r.resource, r.lane)] += r.n

    def _add(self, r: _Events) -> None:
        n, kind, resource, lane = r.n, r.event_type, r.resource, r.lane
        self.events[(kind, resource, lane)] += n
        if kind in ("succeeded", "failed") and r.duration_bucket is not None:
            self.durations[resource].add(r.duration_bucket, n, r.duration_sum)
        if kind == "started" and r.wait_bucket is not None:
            self.waits[lane].add(r.wait_bucket, n, r.wait_sum)

    def families(self) -> Iterable[Metric]:
        events = CounterMetricFamily("bf4ps_events", "Collection events logged",
                                     labels=["event_type", "resource", "lane"])
        for (kind, resource, lane), n in sorted(self.events.items()):
            events.add_metric([kind, resource, lane], n)
        durations = HistogramMetricFamily(
            "bf4ps_battlelog_request_duration_seconds",
            "Battlelog request durations of finished attempts", labels=["resource"])
        for resource, h in sorted(self.durations.items()):
            durations.add_metric([resource], h.exposition(), h.total)
        waits = HistogramMetricFamily("bf4ps_gate_wait_seconds",
                                      "Claim to start waits at the rate gate", labels=["lane"])
        for lane, h in sorted(self.waits.items()):
            waits.add_metric([lane], h.exposition(), h.total)
        throttles = CounterMetricFamily("bf4ps_egress_throttles", "Egress throttle cool-downs",
                                        labels=["egress"])
        for egress, n in sorted(self.throttles.items()):
            throttles.add_metric([egress], n)
        failures = CounterMetricFamily(
            "bf4ps_attempt_failures", "Failed attempts by class (unrecognized: an answer "
            "BF4PS does not recognize)", labels=["error_class", "resource", "lane"])
        for (error_class, resource, lane), n in sorted(self.failures.items()):
            failures.add_metric([error_class, resource, lane], n)
        return [events, durations, waits, throttles, failures]


class _Snapshot(Collector):
    def __init__(self) -> None:
        self.current: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        return list(self.current)


class Metrics:
    def __init__(self, settle_seconds: float = COMMIT_LAG_SECONDS) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.snapshot = _Snapshot()
        self.registry.register(self.snapshot)
        self.tally = EventTally(lag_seconds=settle_seconds)
        self.http_requests = Counter("bf4ps_http_requests", "Web requests served",
                                     ["route", "method", "status"], registry=self.registry)
        self.http_seconds = Histogram("bf4ps_http_request_duration_seconds",
                                      "Web request durations", ["route"],
                                      registry=self.registry,
                                      buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
        self.ops_logins = Counter("bf4ps_ops_login_failures",
                                  "Operator logins refused: failed (a wrong name or password) "
                                  "or refused (locked out after failures)", ["outcome"],
                                  registry=self.registry)
        for outcome in ("failed", "refused"):
            self.ops_logins.labels(outcome)  # both series from the start (rate() needs them)
        self.reads = Counter("bf4ps_web_reads", "Public page and chart reads by the server "
                             "that answered: the read replica or the primary", ["source"],
                             registry=self.registry)
        for source in ("replica", "primary"):
            self.reads.labels(source)

    async def render(self, conn: Conn, extra: Iterable[Metric] = ()) -> bytes:
        await self.tally.advance(conn)
        families = [*await db_gauges(conn), *self.tally.families(), *extra]
        self.snapshot.current = families  # no await between this and the render below
        return generate_latest(self.registry)

    def login_failed(self, outcome: str) -> None:
        self.ops_logins.labels(outcome).inc()

    def observe(self, path: str, method: str, status: int, seconds: float) -> None:
        route = route_group(path)
        self.http_requests.labels(route, method if method in ("GET", "POST", "HEAD")
                                  else "other", str(status)).inc()
        self.http_seconds.labels(route).observe(seconds)


def route_group(path: str) -> str:
    if path == "/":
        return "/"
    for prefix in ROUTE_GROUPS:
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return "other"

DEPTH_STATES = ("ready", "waiting_retry", "claimed", "running")


async def db_gauges(conn: Conn) -> list[Metric]:
    depth = GaugeMetricFamily("bf4ps_queue_jobs", "Live jobs by lane, class, resource, state",
                              labels=["lane", "priority_class", "resource", "state"])
    for row in (await console.queue(conn)).detail:
        for state in DEPTH_STATES:
            depth.add_metric([row.lane.value, row.priority_class, row.resource, state],
                             getattr(row, state))
    cov = GaugeMetricFamily("bf4ps_coverage_soldiers", "Soldiers per resource and status",
                            labels=["resource", "status"])
    for resource, counts in (await console.coverage(conn)).by_resource.items():
        for status, n in counts.items():
            cov.add_metric([resource, status], n)
    return [depth, cov, *await _fleet_gauges(conn), *await _budget_gauges(conn),
            await _request_gauge(conn), await _circuit_gauge(conn),
            *await capacity_gauges(conn), *await _scheduler_intake_gauges(conn),
            *await settings_gauges(conn), *await session_gauges(conn)]


async def _circuit_gauge(conn: Conn) -> Metric:
    """bf4ps_circuit_open{lane, resource}: 1 while the fleet circuit of that lane/resource is
    open (an alert rule is written against this name). Every lane/resource has a series."""
    gauge = GaugeMetricFamily("bf4ps_circuit_open",
                              "1 while the fleet circuit breaker of a lane/resource is open",
                              labels=["lane", "resource"])
    open_now = await circuit.open_circuits(conn)
    for lane in Lane:
        for resource in JobKind:
            key = (lane.value, str(resource))
            gauge.add_metric(list(key), 1.0 if key in open_now else 0.0)
    return gauge


async def _fleet_gauges(conn: Conn) -> list[Metric]:
    labels = ["collector", "lane", "egress"]
    healthy = GaugeMetricFamily("bf4ps_collector_healthy", "1 when heartbeating", labels=labels)
    serving = GaugeMetricFamily("bf4ps_collector_serving",
                                "1 when healthy, enabled and not drained", labels=labels)
    age = GaugeMetricFamily("bf4ps_collector_heartbeat_age_seconds",
                            "Seconds since the last heartbeat", labels=labels)
    offset = GaugeMetricFamily("bf4ps_collector_clock_offset_seconds",
                               "Collector clock offset to the database's (db - host), as last "
                               "measured", labels=["collector"])
    skewed = GaugeMetricFamily("bf4ps_collector_clock_skewed",
                               "1 when the offset is beyond the collector's bound (it takes no "
                               "send slots)", labels=["collector"])
    enabled = GaugeMetricFamily("bf4ps_collector_enabled",
                                "1 unless an operator disabled it", labels=labels)
    for c in (await console.fleet(conn)).collectors:
        key = [c.name, c.lane.value, c.egress]
        healthy.add_metric(key, 1.0 if c.health == "healthy" else 0.0)
        serving.add_metric(key, 1.0 if c.state == "healthy" else 0.0)
        enabled.add_metric(key, 1.0 if c.enabled else 0.0)
        if c.heartbeat_age_seconds is not None:
            age.add_metric(key, c.heartbeat_age_seconds)
        if c.clock_offset_seconds is not None:
            offset.add_metric([c.name], c.clock_offset_seconds)
            skewed.add_metric([c.name], 1.0 if c.clock_skewed else 0.0)
    return [healthy, serving, age, enabled, offset, skewed]


async def _budget_gauges(conn: Conn) -> list[Metric]:
    b = await console.budget(conn)
    fleet_used = GaugeMetricFamily("bf4ps_fleet_budget_used_requests",
                                   "Physical requests in the fleet window")
    fleet_used.add_metric([], b.fleet.used)
    fleet_limit = GaugeMetricFamily("bf4ps_fleet_budget_limit_requests",
                                    "Fleet budget per window (0: no budget)")
    fleet_limit.add_metric([], b.fleet.limit or 0)
    window = GaugeMetricFamily("bf4ps_egress_requests_window",
                               "Physical requests in the last hour", labels=["egress"])
    total = CounterMetricFamily("bf4ps_egress_requests", "Physical requests counted by the gate",
                                labels=["egress"])
    cooling = GaugeMetricFamily("bf4ps_egress_throttle_streak",
                                "Throttle streak of the egress (0: normal pacing)",
                                labels=["egress"])
    for g in b.egresses:
        window.add_metric([g.egress], g.recent_requests)
        total.add_metric([g.egress], g.requests_total)
        cooling.add_metric([g.egress], g.throttle_streak)
    return [fleet_used, fleet_limit, window, total, cooling]


async def _request_gauge(conn: Conn) -> Metric:
    gauge = GaugeMetricFamily("bf4ps_interactive_requests_open", "Open interactive requests",
                              labels=["status"])
    counts = dict(await all_rows(conn, StatusCount, "web_requests_open"))
    for status in ("queued", "collecting"):
        gauge.add_metric([status], counts.get(status, 0))
    return gauge


async def _scheduler_intake_gauges(conn: Conn) -> list[Metric]:
    """Leadership and BF4SW intake health, for the alert rules (deploy/prometheus/)."""
    leading = GaugeMetricFamily("bf4ps_scheduler_leading",
                                "Schedulers holding the leadership lock (1 normal, 0 none)")
    row = await one(conn, _Count, "web_metrics_scheduler_leading", {"key": SCHEDULER_LOCK})
    leading.add_metric([], row.n if row else 0)
    failing = GaugeMetricFamily("bf4ps_intake_failing",
                                "1 when the intake's last pass failed", labels=["source"])
    age = GaugeMetricFamily("bf4ps_intake_success_age_seconds",
                            "Seconds since the intake's last successful pass", labels=["source"])
    for r in await all_rows(conn, _Intake, "web_metrics_intake"):
        failing.add_metric([r.source_name], 1.0 if r.failing else 0.0)
        if r.success_age is not None:
            age.add_metric([r.source_name], r.success_age)
    hold = GaugeMetricFamily("bf4ps_restore_hold_seconds",
                             "Seconds until collectors may send again after a restore, or "
                             "after a server start nobody vouched for (0: none)")
    held = await one(conn, _Hold, "web_metrics_restore_hold")
    hold.add_metric([], held.seconds if held else 0.0)
    return [leading, failing, age, hold]


class RequestMetrics(HttpMiddleware):
    """ASGI middleware: counts and times every HTTP request by route group."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def remember(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, remember)
        finally:
            self.metrics.observe(str(scope.get("path", "")), str(scope.get("method", "")),
                                 status, time.perf_counter() - started)
