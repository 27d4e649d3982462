"""The capacity model: demand under the refresh model and per reason, what binds, the
allocation by the feeder's shares, bootstrap marks, backlog age, the verdict and the
suggestions solved from the model."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bf4ps.capacity.demand import lateness, refresh_per_hour
from bf4ps.capacity.forecast import forecast
from bf4ps.capacity.inputs import (
    DAY,
    HOUR,
    RESOURCES,
    SESSION_MEAN_SECONDS,
    Egress,
    Figure,
    Inputs,
    Population,
    Queued,
    ResourceCost,
)
from bf4ps.capacity.rules import class_quota, deficits, fed_shares
from bf4ps.policy import Policy
from bf4ps.views.forecast_inputs import bootstrap_rate, costs
from bf4ps.views.forecast_report import final_refreshes, remedies, render
from bf4ps.views.forecast_rows import CostRow, HistoryFirstRow

NOW = datetime(2026, 12, 1, tzinfo=UTC)
M = "measured: test"
DELAY = 0.5 + 0.3 / 2 + 0.1  # feed, an idle collector's poll, one request
# the shipped policy without the slow profile sweep: the session reasons have their own test
# (test_the_session_reasons_are_counted_in_the_demand), the hand figures here leave them out
NO_SWEEP = {"scheduled_profile_seconds": 0}


def cost(rpa: float = 1.0, ok: float = 1.0, dur: float = 1.0) -> ResourceCost:
    return ResourceCost(Figure(rpa, M), Figure(ok, M), Figure(dur, M))


def documented(**changes: object) -> Inputs:
    """The product's census under the shipped policy: 25k seen a day, 73k a week, 2,400 new a
    day, 8 egresses at 5 s, 1,296/h."""
    pop = Population(Figure(190_000, M), Figure(25_000, M),
                     {DAY: Figure(25_000, M), 7 * DAY: Figure(73_000, M)},
                     Figure(2_400, M))
    base = Inputs(
        now=NOW, window_seconds=DAY, policy=Policy(**NO_SWEEP),
        costs={"detailed": cost(), "profile": cost(2.0), "weapons": cost(), "vehicles": cost()},
        egresses=tuple(Egress(f"e{i}", 5.0, 1) for i in range(8)), egress_source=M,
        budget_per_hour=Figure(1296, M), population=pop,
        coverage={r: {"never_attempted": 190_000} for r in RESOURCES}, bootstrap_rate={},
        fleet_rate=None, interactive_per_hour=Figure(0, M))
    return replace(base, **changes)  # type: ignore[arg-type]


def small(n: int = 1000, interval: float = 1.0, freshness: float = 2000.0,
          **changes: object) -> Inputs:
    """n active soldiers, detailed only, never attempted; one egress at `interval`, no
    budget: the bench's shape."""
    pop = Population(Figure(n, M), Figure(n, M), {DAY: Figure(n, M)}, Figure(0, M))
    pol = Policy(**NO_SWEEP, freshness_detailed_seconds=freshness,
                 freshness_profile_seconds=10 * 365 * DAY,
                 freshness_weapons_seconds=10 * 365 * DAY,
                 freshness_vehicles_seconds=10 * 365 * DAY)
    base = Inputs(
        now=NOW, window_seconds=HOUR, policy=pol,
        costs={r: cost(dur=0.1) for r in RESOURCES},
        egresses=(Egress("e", interval, 1),), egress_source=M, budget_per_hour=None,
        population=pop, coverage={"detailed": {"never_attempted": n}},
        bootstrap_rate={}, fleet_rate=None, interactive_per_hour=Figure(0, M),
        backlog={"active": {"detailed": n}}, sweep_seconds=2.0, tick_seconds=0.5,
        idle_poll_seconds=0.3)
    return replace(base, **changes)  # type: ignore[arg-type]


def after(at: datetime | None) -> float:
    assert at is not None
    return (at - NOW).total_seconds()


def test_the_refresh_model_is_continuous_at_the_active_window() -> None:
    pop = documented().population
    at_window = refresh_per_hour(DAY, pop, DAY)
    assert at_window == pytest.approx(25_000 / 24)
    assert refresh_per_hour(DAY - 1, pop, DAY) == pytest.approx(at_window, rel=1e-4)
    assert refresh_per_hour(7 * DAY, pop, DAY) == pytest.approx(73_000 / 168)
    assert refresh_per_hour(HOUR, pop, DAY) == pytest.approx(25_000)
    assert 25_000 / 36 < refresh_per_hour(36 * HOUR, pop, DAY) < 73_000 / 36
    assert refresh_per_hour(365 * DAY, pop, DAY) == pytest.approx(100)


def test_the_old_policy_does_not_fit_and_what_would_is_solved_from_the_model() -> None:
    old = Policy(**NO_SWEEP, freshness_detailed_seconds=DAY, freshness_profile_seconds=7 * DAY,
                 freshness_weapons_seconds=7 * DAY, freshness_vehicles_seconds=7 * DAY)
    fc = forecast(documented(policy=old))
    # a refresh comes a tick, the first poll, the connect lead and a request (~3 s) after it is due
    # the intervals are a day and a week plus that
    assert fc.demand_per_hour == pytest.approx(25_000 / 24 + 73_000 / 168 * 4, rel=1e-3)
    assert fc.demand_per_hour < 25_000 / 24 + 73_000 / 168 * 4
    assert not fc.fits and fc.shortfall_per_hour > 1_000
    assert fc.capacity.per_hour == 1296 and fc.capacity.binding == "budget"
    assert fc.egresses_needed is None  # the budget binds: egresses would not help
    assert fc.budget_needed_per_hour == pytest.approx(fc.active_per_hour / 0.75)
    assert fc.suggested and fc.suggestion
    assert forecast(documented(policy=old.model_copy(update=fc.suggested))).fits
    text = render(fc)
    assert "x the 1,296/h the budget allows" in text and "egresses at today's rate" not in text
    assert "or raise the fleet budget to 3,706/h (the budget binds; the 8 serving egresses" \
        in text
    alone = remedies(replace(fc, suggested={}))  # a sentence of its own
    assert alone[1:] == [f"to fit, raise the fleet budget to 3,706/h (the budget binds; the 8 "
                         f"serving egresses pace {fc.capacity.pacing_per_hour:,.0f}/h)"]
    assert alone[0].startswith("no refresh interval up to ten years fits") and \
        alone[0].endswith(".")


def test_the_shipped_defaults_fit_the_documented_budget() -> None:
    fc = forecast(documented())
    assert fc.fits, (fc.demand_per_hour, fc.capacity)
    assert fc.active_per_hour < 0.9 * fc.capacity.active_cap_per_hour
    assert fc.suggestion is None and fc.suggested == {}


def test_a_short_interval_is_solved_at_its_own_scale() -> None:
    """At 120 s, 1,000 active soldiers ask 29,814/h of one 1 s egress (3,600/h; each refresh
    comes 0.75 s after it is due: a 0.5 s tick, the first of two 0.3 s polls, a 0.1 s
    request; the sweep spreads its due times, so it adds nothing on average): the model
    solves the interval that fits (about 1,000 s, rounded up to 20 min), not a day."""
    fc = forecast(small(freshness=120.0, backlog={}, coverage={"detailed": {"current": 1000}}))
    assert not fc.fits and fc.capacity.binding == "pacing"
    assert fc.suggested == {"freshness_detailed_seconds": 1200.0}
    assert fc.egresses_needed == 9  # 29,814/h at 3,600/h an egress
    assert fc.budget_needed_per_hour is None  # pacing binds: a budget cannot help
    text = render(fc)
    assert "8.28x the 3,600/h the pacing allows (26,214/h short)" in text, text
    assert "or run 9 serving egresses at today's rate each (1 serve now; the pacing binds)" in text
    assert "fleet budget" not in text
    assert remedies(replace(fc, suggested={}))[1].startswith("to fit, run 9 ")


def test_bootstrap_takes_what_capacity_leaves_never_more() -> None:
    """1,000 never attempted at one request a second: 10 % after 100 s, done after 1,000 s;
    the refresh of the soldiers collected meanwhile never adds to the capacity."""
    fc = forecast(small())
    marks = fc.bootstrap[0].marks
    assert after(marks[0.10]) == pytest.approx(100, rel=1e-4)
    assert after(marks[0.50]) == pytest.approx(500, rel=1e-4)
    assert after(fc.bootstrap[0].at) == pytest.approx(1000, rel=1e-4)
    assert fc.throughput_per_hour == pytest.approx(3600)
    late = 0.5 + 0.3 / 2 + 0.1  # a tick, the first poll, a request (the sweep spreads due times)
    assert fc.steady_throughput_per_hour == pytest.approx(1000 * 3600 / (2000 + late), rel=1e-4)
    assert fc.fits and fc.capacity.binding == "pacing"


def test_a_measured_send_rate_below_the_pacing_binds_when_work_waited() -> None:
    slow = small(fleet_rate=Figure(1800.0, M), saturated=True)
    fc = forecast(slow)
    assert fc.capacity.binding == "measured send rate" and fc.capacity.per_hour == 1800
    assert after(fc.bootstrap[0].at) == pytest.approx(2000, rel=1e-4)
    idle = forecast(small(fleet_rate=Figure(1800.0, M), saturated=False))
    assert idle.capacity.binding == "pacing"  # not saturated: the rate was the demand


def test_resources_join_at_their_watermark_and_share_by_weight() -> None:
    pol = Policy(**NO_SWEEP, watermark_weapons=0.5, watermark_vehicles=0.5, watermark_profile=0.5)
    fc = forecast(documented(policy=pol))
    by = {c.resource: c for c in fc.bootstrap}
    det50 = by["detailed"].marks[0.5]
    assert det50 is not None and by["weapons"].marks[0.1] is not None
    assert by["weapons"].marks[0.1] > det50  # nothing before the watermark
    assert by["weapons"].collections_per_hour == 0


def test_no_capacity_left_means_no_date() -> None:
    inputs = documented(budget_per_hour=Figure(1.0, M),
                        coverage={r: {"never_attempted": 10**9} for r in RESOURCES})
    assert all(c.at is None for c in forecast(inputs).bootstrap)


def test_backlog_age_met_demand_waits_for_the_sweep_unmet_refresh_comes_late() -> None:
    fc = forecast(small(backlog={}, coverage={"detailed": {"current": 1000}}))
    rho = 1000 / (2000 + 0.75)  # jobs a second over one a second; 0.75 s: the lateness
    # about 1 due a 2 s sweep (Poisson): some sweeps mark none, the oldest of k is k/(k+1) old
    some = 1 - math.exp(-2 * rho)
    dense = 1 - some / (2 * rho)
    assert fc.backlog_age["active"].seconds == pytest.approx(
        dense * (2.0 * rho * (1 + rho) / 2 + DELAY * (1 + rho)) + some * DELAY ** 2 / 4,
        rel=1e-4)
    # refresh of 1,000 soldiers every 120 s asks 30,000/h of 3,600/h: each soldier, due again
    # 120 s after it was collected, comes every 1,000 s, 880 s late; the age settles there
    over = forecast(small(freshness=120.0, backlog={}, coverage={"detailed": {"current": 1000}}))
    age = over.backlog_age["active"]
    assert age.unmet and age.seconds == pytest.approx(120 * (30000 / 3600 - 1), rel=1e-4)


def test_the_session_reasons_are_counted_in_the_demand() -> None:
    # one ended session a day per soldier seen in 24 h, lengths of the documented shape
    pop = replace(documented().population, sessions_per_hour=Figure(25_000 / 24, M))
    shipped = {(d.reason, d.resource): d
               for d in forecast(documented(policy=Policy(), population=pop)).demand if d.reason}
    # detailed after sessions of 2 h or more, beyond the weekly refresh of the week's soldiers
    # it takes the place of; weapons and vehicles after 8 h or more: fewer than their own
    # refresh (the new soldiers' first collections), nothing more; every known profile every
    # 13 weeks: 190,000 x 2 requests / 2,184 h
    assert shipped[("final_refresh", "detailed")].requests_per_hour == pytest.approx(
        25_000 / 24 * math.exp(-7200 / SESSION_MEAN_SECONDS) - 73_000 / 168)
    assert not any(r != "detailed" for reason, r in shipped if reason == "final_refresh")
    assert shipped[("scheduled_profile", "profile")].requests_per_hour == pytest.approx(
        190_000 * 2 / 2184)
    assert shipped[("scheduled_profile", "profile")].klass == "recent"
    every = Policy(final_refresh_min_play_seconds=0, final_refresh_items_min_play_seconds=0,
                   scheduled_profile_seconds=0)
    fc = forecast(documented(policy=every, population=pop))
    lines = {(d.reason, d.resource): d for d in fc.demand if d.reason}
    # every session bracketed: beyond the weekly refresh of what was seen in the week, and
    # beyond the new soldiers' first weapons and vehicles
    assert lines[("final_refresh", "detailed")].requests_per_hour == pytest.approx(
        25_000 / 24 - 73_000 / 168)
    assert lines[("final_refresh", "weapons")].requests_per_hour == pytest.approx(
        25_000 / 24 - 2_400 / 24)
    assert lines[("final_refresh", "vehicles")].klass == "active"
    assert not any(reason == "scheduled_profile" for reason, _ in lines)
    # the fleet's own sessions replace the shape at the policy's minimums
    measured = replace(pop, sessions_with_play={7200.0: Figure(600, M), 28_800.0: Figure(50, M)})
    lines = {(d.reason, d.resource): d for d in forecast(documented(
        policy=Policy(), population=measured)).demand if d.reason}
    assert lines[("final_refresh", "detailed")].requests_per_hour == pytest.approx(
        600 - 73_000 / 168)
    quiet = replace(pop, sessions_per_hour=Figure(0, M))
    assert not any(d.reason == "final_refresh"
                   for d in forecast(documented(policy=every, population=quiet)).demand)


def test_costs_fall_back_to_defaults_below_the_minimum_and_say_so() -> None:
    measured, missing = costs([CostRow("profile", requests=200, succeeded=90, failed=10,
                                       duration_ms=500.0)], DAY)
    assert measured["profile"].requests_per_attempt.value == 2.0
    assert measured["profile"].success_share.value == 0.9
    assert measured["profile"].requests_per_collection == pytest.approx(200 / 90)
    assert not measured["weapons"].requests_per_attempt.measured
    assert any(m.startswith("weapons") for m in missing)


def test_bootstrap_rate_from_the_history_record() -> None:
    first = HistoryFirstRow(NOW - timedelta(minutes=30), {"detailed": {"never_attempted": 1000}})
    rate = bootstrap_rate(first, {"detailed": {"never_attempted": 700, "current": 300}}, NOW)
    assert rate["detailed"].value == pytest.approx(600.0)
    assert bootstrap_rate(None, {}, NOW) == {}


def test_failures_cost_retries_outside_the_active_cap() -> None:
    half = documented(costs={"detailed": cost(ok=0.5), "profile": cost(2.0), "weapons": cost(),
                             "vehicles": cost()})
    fc = forecast(half)
    lines = {(d.klass, d.resource): d.requests_per_hour for d in fc.demand}
    assert lines[("retry", "detailed")] == pytest.approx(lines[("active", "detailed")])
    assert ("retry", "weapons") not in lines
    assert fc.active_per_hour == pytest.approx(fc.demand_per_hour - lines[("retry", "detailed")])


def test_a_starved_class_is_served_at_its_share_once_the_queued_higher_work_is_gone() -> None:
    """Refresh asks more than the fleet sends (ten a second, five a feeder pass): the
    bootstrap is served at what the feeder's passes give it, one job of each five (its 15 %
    rounds up to 1 of 5, recent's 1 of 5 is borrowed by the active class), 2 a second."""
    over = small(interval=0.1, freshness=20.0, backlog={"bootstrap": {"detailed": 100}},
                 coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    fc = forecast(over)
    assert after(fc.bootstrap[0].marks[0.10]) == pytest.approx(10 / 2, rel=1e-4)
    assert after(fc.bootstrap[0].at) == pytest.approx(100 / 2, rel=1e-4)
    # 200 active jobs already queued rank before any bootstrap job: they go first, and the
    # feeder refills only what leaves, 4 of 5 active, so those beyond one pass's 4 drain at
    # 2 a second: 98 s
    full = replace(over, queued=(Queued("active", 200, -5.0),))
    assert after(forecast(full).bootstrap[0].at) == pytest.approx(98 + 100 / 2, rel=1e-4)
    # ... unless the bootstrap's own first queued job ranks sooner (it goes first then)
    ranked = replace(over, queued=(Queued("active", 200, -5.0), Queued("bootstrap", 10, 30.0)))
    assert after(forecast(ranked).bootstrap[0].at) == pytest.approx(30 + 100 / 2, rel=1e-4)
    # a new bootstrap job waits its aging offset (1,800 s) at most
    slow = replace(over, queued=(Queued("active", 200_000, -5.0),))
    aging = over.policy.aging_bootstrap_seconds
    assert after(forecast(slow).bootstrap[0].at) == pytest.approx(aging + 100 / 2, rel=1e-4)


def test_queued_bootstrap_jobs_with_early_ranks_advance_the_bootstrap_marks() -> None:
    """The same starved bootstrap (2 a second of a fleet's 10), with 40 of its jobs already
    queued, ranked at 10 s from now (fed earlier, plus its aging offset). The share takes the
    class's queued jobs first, FIFO: 20 by 10 s; then the queue reaches the other 20's rank
    and they go ahead of every job ranked after it, at the fleet's 10 a second (2 s): 40 by
    12 s. The refresh jobs fed meanwhile (8 a second, ranked 10..12 s) are then ahead of
    everything the bootstrap is fed (ranked 1,800 s on): the queue serves ranks in order, 10
    a second through 8 a second of rank, and is back at the clock after 2 / (10/8 - 1) = 8 s
    (at 20 s); the rest at the share again. 25 % (25 jobs) at 10.5 s, 50 % at 20 + 10 / 2,
    done at 20 + 60 / 2; without those ranks 12.5, 25 and 50 s."""
    over = small(interval=0.1, freshness=20.0, backlog={"bootstrap": {"detailed": 100}},
                 coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    early = replace(over, queued=(Queued("bootstrap", 40, 10.0, (10.0,) * 40),))
    fc, base = forecast(early), forecast(over)
    marks = {m: after(at) for m, at in fc.bootstrap[0].marks.items()}
    assert marks == pytest.approx({0.10: 5.0, 0.25: 10.5, 0.50: 25.0, 0.90: 45.0, 1.0: 50.0},
                                  rel=1e-4)
    assert after(base.bootstrap[0].marks[0.25]) == pytest.approx(12.5, rel=1e-4)
    # what the fleet sends is the same: the burst is borrowed from the refresh
    assert fc.throughput_per_hour == pytest.approx(base.throughput_per_hour)
    # ranks already passed: all 40 go first (4 s), then the refresh fed meanwhile (ranked
    # 0..4 s) until the queue is back at the clock (4 / 0.25 = 16 s), then 60 at 2 a second
    passed = replace(over, queued=(Queued("bootstrap", 40, -5.0, (-5.0,) * 40),))
    assert after(forecast(passed).bootstrap[0].at) == pytest.approx(4 + 16 + 60 / 2, rel=1e-4)
    # ranks that come after the share has taken them change nothing
    late = replace(over, queued=(Queued("bootstrap", 40, 1000.0, (1000.0,) * 40),))
    assert {m: after(at) for m, at in forecast(late).bootstrap[0].marks.items()} == \
        pytest.approx({m: after(at) for m, at in base.bootstrap[0].marks.items()}, rel=1e-6)


def test_behind_a_burst_the_queue_serves_ranks_in_order_and_the_lag_stays() -> None:
    """The bench's infeasible fleet, by hand: 10 a second, refresh starved (8 a second fed),
    the bootstrap's share 2 a second and its aging offset 5 s; 40 bootstrap jobs queued,
    ranked at 1 s. By 1 s the share has taken 2 from the front; the queue then reaches the
    other 38's rank: 3.8 s at 10 a second (to 4.8 s). The refresh fed meanwhile is ranked
    1..4.8 s and the bootstrap's new jobs 5 s on, so the queue serves 8 a second of rank at
    10 a second, the bootstrap nothing, until it reaches 5 s of rank: (5 - 1) / 1.25 = 3.2 s
    (at 8 s). From there the bootstrap's new jobs are ranked among the refresh, fed as many
    as leave: the queue moves at the clock's pace, 3 s behind it, and the bootstrap gets its
    2 a second: the other 60 by 8 + 30 s. 10 % at 1 + 8 / 10, 25 % at 1 + 23 / 10, 50 %
    at 8 + 10 / 2, 90 % at 8 + 50 / 2. Serving the burst at once and then the share (no rank
    order) would be done at 4.8 + 30 s."""
    over = small(interval=0.1, freshness=20.0, backlog={"bootstrap": {"detailed": 100}},
                 coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    over = replace(over, policy=over.policy.model_copy(update={"aging_bootstrap_seconds": 5.0}),
                   queued=(Queued("bootstrap", 40, 1.0, (1.0,) * 40),))
    marks = {m: after(at) for m, at in forecast(over).bootstrap[0].marks.items()}
    assert marks == pytest.approx({0.10: 1.8, 0.25: 3.3, 0.50: 13.0, 0.90: 33.0, 1.0: 38.0},
                                  rel=1e-4)


def test_the_shares_follow_the_measured_feeder_pass() -> None:
    """A pass takes its work's time on top of the tick's sleep: measured at 0.7 s (the
    queue's pass times), 7 jobs leave a pass of the fleet's 10 a second and the bootstrap's
    15 % is 1 of them (recent's remainder wins the last one), 1/0.7 a second: its 100 jobs
    in 70 s. Never below the tick: a shorter measure is the tick's 5 a pass, 2 a second."""
    over = small(interval=0.1, freshness=20.0, backlog={"bootstrap": {"detailed": 100}},
                 coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    assert replace(over, pass_seconds=0.7).pass_period == 0.7
    assert after(forecast(replace(over, pass_seconds=0.7)).bootstrap[0].at) == \
        pytest.approx(70.0, rel=1e-4)
    assert replace(over, pass_seconds=0.1).pass_period == over.tick_seconds
    assert after(forecast(replace(over, pass_seconds=0.1)).bootstrap[0].at) == \
        pytest.approx(50.0, rel=1e-4)


def test_a_few_jobs_a_feeder_pass_starve_a_small_share() -> None:
    """The feeder splits each pass's whole deficit by largest remainder: with 1-3 jobs a pass
    the bootstrap's 15 % gets none (the active class wins the remainders), with 4 one in
    four; the model's shares are those, not the configured ones."""
    pol = Policy()
    assert fed_shares(pol, [3.0])["bootstrap"] == 0.0
    assert fed_shares(pol, [4.0])["bootstrap"] == pytest.approx(0.25)
    # eight egresses at 5 s, a 2 s tick: each finishes 0 or 1 a pass (0.4 on average)
    d = deficits([0.4] * 8)
    assert d[4] == pytest.approx(70 * 0.4 ** 4 * 0.6 ** 4)
    assert fed_shares(pol, [0.4] * 8)["bootstrap"] == pytest.approx(
        sum(p * class_quota(n, pol)["bootstrap"] for n, p in d.items()) / 3.2)
    assert fed_shares(pol, [1000.0])["bootstrap"] == pytest.approx(0.15)
    starved = small(freshness=120.0, backlog={"bootstrap": {"detailed": 100}},
                    coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    assert forecast(starved).bootstrap[0].at is None  # one job a second, 0.5 a pass


def test_the_collectors_request_cycle_and_the_margin_bound_an_egress() -> None:
    """A collector serves one job at a time and its slot is never sooner than the connect
    lead after its claim; the gate moves past a slot by its interval plus the margin."""
    cycle = forecast(small(interval=0.25, connect_lead_seconds=1.0))
    assert cycle.capacity.per_hour == pytest.approx(3600 / 1.1)
    assert cycle.capacity.binding == "request cycle"
    gate = forecast(small(interval=2.0, connect_lead_seconds=1.0, margin_seconds=0.5))
    assert gate.capacity.per_hour == pytest.approx(3600 / 2.5)
    assert gate.capacity.binding == "pacing"


def test_the_budget_floors_hold_the_active_class_while_bootstrap_has_work() -> None:
    """A budget of 1,000/h, refresh asking 2,000/h: the active class gets its cap (0.9) only
    once the bootstrap, whose floor (0.3) is reserved while it has work, is done."""
    pol = Policy(**NO_SWEEP, budget_cap_active=0.9, budget_floor_bootstrap=0.3,
                 budget_floor_retry=0.0, freshness_detailed_seconds=1800.0)
    inputs = small(interval=0.1, policy=pol, budget_per_hour=Figure(1000.0, M),
                   backlog={"bootstrap": {"detailed": 100}},
                   coverage={"detailed": {"current": 1000, "never_attempted": 100}})
    fc = forecast(inputs)
    now = {c: sum(s.now_per_hour for s in fc.served if s.klass == c) for c in ("active",
                                                                             "bootstrap")}
    assert now["active"] == pytest.approx(700.0, rel=1e-6)
    assert now["bootstrap"] == pytest.approx(300.0, rel=1e-6)
    assert sum(s.steady_per_hour for s in fc.served if s.klass == "active") == pytest.approx(
        900.0, rel=1e-6)


def test_a_first_attempt_costs_its_retries() -> None:
    """Half the first attempts fail: each collection costs two attempts, so 1,000 take
    2,000 s at one request a second."""
    half = small(costs={r: cost(ok=0.5, dur=0.1) for r in RESOURCES})
    assert after(forecast(half).bootstrap[0].at) == pytest.approx(2000, rel=1e-4)


def test_a_refresh_comes_after_its_due_time_by_the_feed_and_request_not_the_sweep() -> None:
    inputs = small()  # sweep 2 s, tick 0.5 s, idle poll 0.3 s of one egress, request 0.1 s
    # the due sweep spreads each due time over the sweep before it: half a sweep early and
    # half a sweep's wait cancel; an interval shorter than the sweep is spread over itself
    assert lateness(inputs, 600.0) == pytest.approx(DELAY)
    assert lateness(inputs, 0.5) == pytest.approx(DELAY + (2.0 - 0.5) / 2)
    assert lateness(inputs, 0.0) == pytest.approx(DELAY + 1.0)  # nothing spread


def test_the_forecast_names_what_final_refreshes_cost_and_whether_the_rest_fits() -> None:
    """At the real population's shape (25,000 soldiers seen a day: taken as one session each,
    1,042 ending an hour, 2.8 h long on average as the census's concurrency implies) and the
    shipped budget: the shipped minimums (detailed after 2 h of play, weapons and vehicles
    after 8 h) cost 75/h beyond the refreshes they replace and the whole fits, the active
    class too; bracketing every session with all three would cost more than the capacity,
    though the rest alone fits."""
    base = documented()
    sessions = Figure(25_000 / 24, M)
    inputs = replace(base, population=replace(base.population, sessions_per_hour=sessions))
    shipped = forecast(inputs)
    assert shipped.fits and shipped.active_per_hour <= shipped.capacity.active_cap_per_hour
    shape = "[default: exponential session lengths, mean 2.8 h (the census)]"
    line = final_refreshes(shipped)
    assert line.startswith(
        f"final refreshes (detailed after sessions of 2 h or more, 510 an hour {shape}; "
        f"weapons and vehicles after sessions of 8 h or more, 60 an hour {shape}; of 1,042 "
        "sessions ending an hour [measured: test]): beyond the freshness refreshes they "
        "replace 75/h, 6 % of the 1,296/h capacity; without them demand is "), line
    assert line.endswith(": the rest fits") and line in render(shipped)
    every = forecast(replace(inputs, policy=inputs.policy.model_copy(update={
        "final_refresh_min_play_seconds": 0, "final_refresh_items_min_play_seconds": 0})))
    cost = sum(d.requests_per_hour for d in every.demand if d.reason == "final_refresh")
    assert cost > every.capacity.per_hour and not every.fits
    assert "detailed after every session, 1,042 an hour [measured: test]" in final_refreshes(
        every)
    assert f"{cost:,.0f}/h, {100 * cost / every.capacity.per_hour:.0f} % of the 1,296/h " \
        "capacity" in final_refreshes(every)
    assert final_refreshes(every).endswith(": the rest fits")


def test_each_resource_s_bootstrap_marks_come_from_its_own_rate() -> None:
    """Measured first collections per hour (detailed 935/h, weapons 290/h): each resource's
    marks follow its own rate; a resource without one stays modelled. A rate measured above
    what the capacity can send of the resource alone (a fleet budget's first window filled at
    the egresses' pacing) is held to that (issue 45: +20 % first collections otherwise)."""
    source = "measured: coverage progress over the last 10 min (fleet history)"
    rates = {"detailed": Figure(935.0, source), "weapons": Figure(290.0, source)}
    fc = forecast(documented(bootstrap_rate=rates))
    by = {b.resource: b for b in fc.bootstrap}
    detailed, weapons = by["detailed"], by["weapons"]
    assert detailed.remaining == weapons.remaining == 190_000
    assert after(detailed.marks[0.5]) == pytest.approx(0.5 * 190_000 / 935 * 3600, rel=1e-6)
    assert after(weapons.marks[0.1]) == pytest.approx(0.1 * 190_000 / 290 * 3600, rel=1e-6)
    assert weapons.collections_per_hour == 290.0 and "own rate" in weapons.source
    assert by["profile"].source.startswith("modelled")
    burst = forecast(documented(bootstrap_rate={"detailed": Figure(2935.0, source)}))
    held = next(b for b in burst.bootstrap if b.resource == "detailed")
    most = burst.capacity.per_hour - burst.inputs.interactive_per_hour.value
    assert held.collections_per_hour == pytest.approx(most) and most < 2935
    assert "at most the capacity's" in held.source
