"""The forecast's inputs, read from the fleet's own tables (each with the window it was
measured over), or, where a new fleet has not measured one yet, the documented default (the
existing deployment's figures: docs/operations.md "Capacity planning"), marked as such."""

from __future__ import annotations

from datetime import UTC, datetime

from bf4ps import policy as policy_mod
from bf4ps.capacity import demand
from bf4ps.capacity.inputs import (
    DAY,
    HOUR,
    RESOURCES,
    Egress,
    Figure,
    Inputs,
    Population,
    Queued,
    ResourceCost,
)
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one, one_row
from bf4ps.queue import figures
from bf4ps.settings import Settings
from bf4ps.views.fleet_rows import FleetBudget
from bf4ps.views.forecast_rows import (
    BacklogRow,
    CostRow,
    EgressRow,
    HistoryFirstRow,
    PassRow,
    PopulationRow,
    QueuedRow,
    SentRow,
)

MIN_ATTEMPTS = 20  # fewer finished attempts in the window: the default is used instead
MIN_REQUESTS = 20

# The documented defaults (the existing deployment's measurements and census).
DEFAULT_REQUESTS_PER_ATTEMPT = {"detailed": 1.0, "profile": 2.0, "weapons": 1.0,
                                "vehicles": 1.0}
DEFAULT_SUCCESS = {"detailed": 0.95, "profile": 0.996, "weapons": 0.996, "vehicles": 0.996}
DEFAULT_DURATION = {"detailed": 0.77, "profile": 0.8, "weapons": 1.27, "vehicles": 1.26}
DEFAULT_POPULATION = {"total": 190_000.0, "d1": 25_000.0, "d7": 73_000.0,
                      "new_per_day": 2_400.0}
DEFAULT_EGRESSES = 8
DEFAULT_INTERVAL = 5.0
DEFAULT_BUDGET = 1296.0
DOCS = "default: the documented deployment (docs/operations.md)"


def span(seconds: float) -> str:
    """A measurement's window in words (whole days from a day on, whole hours from an hour)."""
    return demand.span(seconds, rounded=True)


def costs(rows: list[CostRow], window: float) -> tuple[dict[str, ResourceCost], list[str]]:
    where = f"measured: ledger and event log, last {span(window)}"
    by = {r.resource: r for r in rows}
    out, missing = {}, []
    for res in RESOURCES:
        r = by.get(res, CostRow(res))
        attempts = int(r.succeeded or 0) + int(r.failed or 0)
        requests = int(r.requests or 0)
        if attempts >= MIN_ATTEMPTS and requests >= MIN_REQUESTS:
            rpa = Figure(requests / attempts, where)
            ok = Figure(int(r.succeeded) / attempts, where)
        else:
            missing.append(f"{res}: requests per attempt and success share "
                           f"({attempts} attempts in the window)")
            rpa = Figure(DEFAULT_REQUESTS_PER_ATTEMPT[res], DOCS)
            ok = Figure(DEFAULT_SUCCESS[res], DOCS)
        dur = r.duration_ms
        duration = (Figure(float(dur) / 1000, where) if dur is not None and attempts
                    else Figure(DEFAULT_DURATION[res], DOCS))
        out[res] = ResourceCost(rpa, ok, duration)
    return out, missing


def population(row: PopulationRow | None, total: int, policy: policy_mod.Policy
               ) -> tuple[Population, list[str]]:
    if total == 0 or row is None:
        d = DEFAULT_POPULATION
        seen = {DAY: Figure(d["d1"], DOCS), 7 * DAY: Figure(d["d7"], DOCS)}
        active = d["d1"] * min(1.0, policy.active_window_seconds / DAY)
        return (Population(Figure(d["total"], DOCS), Figure(active, DOCS), seen,
                           Figure(d["new_per_day"], DOCS),
                           Figure(d["d1"] / 24, DOCS + ", a session a day per soldier seen")),
                ["population and its activity (no soldiers yet)"])
    where = "measured: soldiers' last BF4SW sighting"
    seen = {policy.active_window_seconds: Figure(float(row.active), where),
            DAY: Figure(float(row.d1), where + ", 24 h"),
            7 * DAY: Figure(float(row.d7), where + ", 7 d"),
            30 * DAY: Figure(float(row.d30), where + ", 30 d")}
    new = Figure(float(row.new7) / 7, "measured: soldiers first seen by BF4SW, last 7 d")
    ended = float(row.sessions_d1 or 0)
    sessions = (Figure(ended / 24, "measured: play sessions ended within 24 h") if ended else
                Figure(float(row.d1) / 24,
                       "default: one session a day per soldier seen within 24 h"))
    lasting = ({policy.final_refresh_min_play_seconds: Figure(
                    row.sessions_d1_min_play / 24, "measured: play sessions ended within 24 h"),
                policy.final_refresh_items_min_play_seconds: Figure(
                    row.sessions_d1_items_min_play / 24,
                    "measured: play sessions ended within 24 h")} if ended else {})
    return (Population(Figure(float(total), "measured: coverage counters"),
                       Figure(float(row.active), where
                              + f", active window {span(policy.active_window_seconds)}"),
                       seen, new, sessions, lasting), [])


def egresses(rows: list[EgressRow]) -> tuple[tuple[Egress, ...], str, list[str]]:
    found = tuple(Egress(r.egress_key, float(r.min_interval_seconds), int(r.serving))
                  for r in rows)
    if any(e.serving for e in found):
        return found, "measured: egress gates and the collectors serving now", []
    made = tuple(Egress(f"egress-{i + 1}", DEFAULT_INTERVAL, 1) for i in range(DEFAULT_EGRESSES))
    return made, DOCS + f": {DEFAULT_EGRESSES} egresses at {DEFAULT_INTERVAL:.0f} s", [
        "egresses (no background collector serving)"]


def budget(row: FleetBudget | None, fleet_known: bool) -> tuple[Figure | None, list[str]]:
    if row is not None and row.requests:
        per_hour = float(row.requests) * HOUR / float(row.window_seconds)
        return Figure(per_hour, f"configured: fleet budget {row.requests} per "
                                f"{span(float(row.window_seconds))}"), []
    if fleet_known:
        return None, []  # a fleet running without a budget: pacing bounds it
    return Figure(DEFAULT_BUDGET, DOCS), ["fleet budget (none configured)"]


def _attempted(counts: dict[str, int]) -> int:
    return sum(counts.values()) - counts.get("never_attempted", 0)


def bootstrap_rate(first: HistoryFirstRow | None, coverage: dict[str, dict[str, int]],
                   now: datetime) -> dict[str, Figure]:
    """First collections per hour per resource: how many more soldiers had the resource
    attempted than at the window's oldest fleet-history record (soldiers imported since add
    to the backlog, not to the progress); none recorded: nothing measured."""
    if first is None:
        return {}
    elapsed = (now - first.recorded_at).total_seconds()
    if elapsed <= 0:
        return {}
    where = f"measured: coverage progress over the last {span(elapsed)} (fleet history)"
    out = {}
    for res in RESOURCES:
        before = _attempted(first.coverage.get(res, {}))
        after = _attempted(coverage.get(res, {}))
        out[res] = Figure(max(0.0, (after - before) * HOUR / elapsed), where)
    return out


def never(coverage: dict[str, dict[str, int]]) -> int:
    return sum(int(c.get("never_attempted", 0)) for c in coverage.values())


def backlog(rows: list[BacklogRow]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r.activity_class, {})[r.resource] = int(r.n)
    return out


def timings(settings: Settings) -> dict[str, float]:
    """The scheduler's and collectors' timings the model needs (`load`'s keywords)."""
    return {"sweep_seconds": settings.sweep_seconds,
            "tick_seconds": settings.scheduler_tick_seconds,
            "idle_poll_seconds": settings.idle_poll_seconds,
            "connect_lead_seconds": settings.battlelog_connect_lead_seconds,
            "margin_seconds": settings.egress_safety_margin_seconds}


def queued(rows: list[QueuedRow]) -> tuple[Queued, ...]:
    return tuple(Queued(r.priority_class, int(r.jobs), float(r.first_s or 0.0),
                        tuple(float(x) for x in r.ranks_s or ()))
                 for r in rows)


MIN_PASSES = 3  # gaps between pass times needed to trust the queue's pass period


def pass_seconds(row: PassRow) -> float | None:
    """The feeder's measured pass period (None: too few passes queued to tell)."""
    if row.pass_s is None or int(row.gaps or 0) < MIN_PASSES:
        return None
    return float(row.pass_s)


async def load(conn: Conn, window_seconds: float = DAY, *, sweep_seconds: float = 60.0,
               tick_seconds: float = 2.0, idle_poll_seconds: float = 2.0,
               connect_lead_seconds: float = 0.0, margin_seconds: float = 0.0) -> Inputs:
    pol = await policy_mod.load(conn)
    now = datetime.now(UTC)
    w = {"window_seconds": window_seconds}
    cost, missing = costs(await all_rows(conn, CostRow, "forecast_costs", w), window_seconds)
    coverage = await figures.coverage(conn)
    total = sum(coverage.get("detailed", {}).values())
    pop_row = await one(conn, PopulationRow, "forecast_population",
                           {"active_seconds": pol.active_window_seconds,
                            "min_play": pol.final_refresh_min_play_seconds,
                            "items_min_play": pol.final_refresh_items_min_play_seconds})
    pop, pop_missing = population(pop_row, total, pol)
    if total == 0:  # no soldiers yet: the documented population still to bootstrap
        coverage = {r: {"never_attempted": int(pop.total.value)} for r in RESOURCES}
    eg, eg_source, eg_missing = egresses(await all_rows(conn, EgressRow, "forecast_egresses"))
    bud, bud_missing = budget(await one(conn, FleetBudget, "fleet_use"), not eg_missing)
    sent = await one_row(conn, SentRow, "forecast_sent", w)
    measured_for = min(window_seconds, float(sent.span_seconds or 0.0))
    fleet_rate = None
    interactive = Figure(0.0, f"measured: ledger, last {span(window_seconds)} (none)")
    if measured_for > 0 and sent.background + sent.interactive >= MIN_REQUESTS:
        where = f"measured: ledger, last {span(measured_for)}"
        fleet_rate = Figure(sent.background * HOUR / measured_for, where)
        interactive = Figure(sent.interactive * HOUR / measured_for, where)
    first = await one(conn, HistoryFirstRow, "history_first_since", w)
    # never-attempted work at both ends of the window: the feeder always had work to give
    # (a backlog takes every share the others leave), so the fleet sent what it could and its
    # measured rate is its capacity
    saturated = first is not None and never(first.coverage) > 0 and never(coverage) > 0
    split = backlog(await all_rows(conn, BacklogRow, "forecast_backlog")) if total else {}
    return Inputs(now=now, window_seconds=window_seconds, policy=pol, costs=cost,
                  egresses=eg, egress_source=eg_source, budget_per_hour=bud, population=pop,
                  coverage=coverage, bootstrap_rate=bootstrap_rate(first, coverage, now),
                  fleet_rate=fleet_rate, interactive_per_hour=interactive,
                  missing=tuple(missing + pop_missing + eg_missing + bud_missing),
                  backlog=split, saturated=saturated and fleet_rate is not None,
                  sweep_seconds=sweep_seconds, tick_seconds=tick_seconds,
                  idle_poll_seconds=idle_poll_seconds,
                  queued=queued(await all_rows(conn, QueuedRow, "forecast_queued")),
                  pass_seconds=pass_seconds(
                      await one_row(conn, PassRow, "forecast_pass_seconds")),
                  connect_lead_seconds=connect_lead_seconds, margin_seconds=margin_seconds)
