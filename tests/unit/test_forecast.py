"""The forecast's arithmetic: demand under the refresh model, the verdict against the budget,
egresses needed, the policy change that fits, and bootstrap completion through the mix."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bf4ps.policy import Policy
from bf4ps.views.forecast import (
    DAY,
    HOUR,
    RESOURCES,
    Egress,
    Figure,
    Inputs,
    Population,
    ResourceCost,
    forecast,
    refresh_per_hour,
)
from bf4ps.views.forecast_inputs import bootstrap_rate, costs

NOW = datetime(2026, 12, 1, tzinfo=UTC)
M = "measured: test"


def cost(rpa: float = 1.0, ok: float = 1.0, dur: float = 1.0) -> ResourceCost:
    return ResourceCost(Figure(rpa, M), Figure(ok, M), Figure(dur, M))


def documented(**changes: object) -> Inputs:
    """The product's census under the shipped policy: 25k seen a day, 73k a week, 2,400 new a
    day, 8 egresses at 5 s, 1,296/h."""
    pop = Population(Figure(190_000, M), Figure(25_000, M),
                     {DAY: Figure(25_000, M), 7 * DAY: Figure(73_000, M)},
                     Figure(2_400, M))
    base = Inputs(
        now=NOW, window_seconds=DAY, policy=Policy(),
        costs={"detailed": cost(), "profile": cost(2.0), "weapons": cost(), "vehicles": cost()},
        egresses=tuple(Egress(f"e{i}", 5.0, 1) for i in range(8)), egress_source=M,
        budget_per_hour=Figure(1296, M), population=pop,
        coverage={r: {"never_attempted": 190_000} for r in RESOURCES}, bootstrap_rate={},
        fleet_rate=None, interactive_per_hour=Figure(0, M))
    return replace(base, **changes)  # type: ignore[arg-type]


def test_the_refresh_model_is_continuous_at_the_active_window() -> None:
    pop = documented().population
    at_window = refresh_per_hour(DAY, pop, DAY)
    assert at_window == pytest.approx(25_000 / 24)
    assert refresh_per_hour(DAY - 1, pop, DAY) == pytest.approx(at_window, rel=1e-4)
    assert refresh_per_hour(7 * DAY, pop, DAY) == pytest.approx(73_000 / 168)
    # shorter than the window: every active soldier every F
    assert refresh_per_hour(HOUR, pop, DAY) == pytest.approx(25_000)
    # in between, seen(F) interpolates in log time: 36 h sees more than a day, less than a week
    assert 25_000 / 36 < refresh_per_hour(36 * HOUR, pop, DAY) < 73_000 / 36
    # very long intervals: never fewer than the new soldiers' first collections
    assert refresh_per_hour(365 * DAY, pop, DAY) == pytest.approx(100)


def test_the_shipped_sums_of_the_old_policy_do_not_fit_and_a_change_is_named() -> None:
    old = Policy(freshness_detailed_seconds=DAY, freshness_profile_seconds=7 * DAY,
                 freshness_weapons_seconds=7 * DAY, freshness_vehicles_seconds=7 * DAY)
    fc = forecast(documented(policy=old))
    # detailed daily ~1,042/h, three weekly ~434/h each (profile's two requests): ~2,780/h;
    # and scheduled_profile: 190,000 profiles (two requests each) every 13 weeks, ~174/h
    scheduled = 190_000 * 2 / (91 * 24)
    assert fc.demand_per_hour == pytest.approx(25_000 / 24 + 73_000 / 168 * 4 + scheduled,
                                               rel=1e-6)
    assert not fc.fits and fc.shortfall_per_hour > 1_000
    assert fc.capacity.per_hour == 1296  # 8 egresses pace 5,760/h: the budget binds
    assert fc.egresses_needed == 5  # 2,954/h at 720/h an egress
    assert fc.budget_needed_per_hour == pytest.approx(fc.active_per_hour / 0.75)
    assert fc.suggestion and "every" in fc.suggestion
    fixed = forecast(documented(policy=old.model_copy(update=fc.suggested)))
    assert fixed.fits


def test_the_shipped_defaults_fit_the_documented_budget() -> None:
    fc = forecast(documented())
    assert fc.fits, (fc.demand_per_hour, fc.capacity)
    assert fc.active_per_hour < 0.9 * fc.capacity.active_cap_per_hour  # with a margin
    assert fc.suggestion is None


def test_bootstrap_at_the_measured_rate_is_remaining_over_rate() -> None:
    inputs = documented(coverage={"detailed": {"never_attempted": 900, "current": 100},
                                  **{r: {"never_attempted": 0} for r in RESOURCES[1:]}},
                        bootstrap_rate={"detailed": Figure(300.0, M)})
    fc = forecast(inputs)
    done = {c.resource: c for c in fc.bootstrap}
    assert done["detailed"].at == NOW + timedelta(hours=3)
    assert done["weapons"].at == NOW  # nothing left


def test_resources_join_at_their_watermark_and_share_by_weight() -> None:
    pol = Policy(watermark_weapons=0.5, watermark_vehicles=0.5, watermark_profile=0.5)
    inputs = documented(policy=pol, coverage={r: {"never_attempted": 1000} for r in RESOURCES},
                        bootstrap_rate={"detailed": Figure(100.0, M)})
    done = {c.resource: c.at for c in forecast(inputs).bootstrap}
    assert done["detailed"] is not None and done["weapons"] is not None
    assert done["detailed"] > NOW + timedelta(hours=5)  # slows once the others join at 50 %
    assert done["weapons"] > NOW + timedelta(hours=5)  # did not start before the watermark


def test_no_capacity_left_means_no_date() -> None:
    inputs = documented(budget_per_hour=Figure(1.0, M),
                        coverage={r: {"never_attempted": 10**9} for r in RESOURCES})
    assert all(c.at is None for c in forecast(inputs).bootstrap)


def test_costs_fall_back_to_defaults_below_the_minimum_and_say_so() -> None:
    measured, missing = costs([{"resource": "profile", "requests": 200, "succeeded": 90,
                                "failed": 10, "duration_ms": 500.0}], DAY)
    assert measured["profile"].requests_per_attempt.value == 2.0
    assert measured["profile"].success_share.value == 0.9
    assert measured["profile"].requests_per_collection == pytest.approx(200 / 90)
    assert measured["profile"].requests_per_attempt.measured
    assert not measured["weapons"].requests_per_attempt.measured
    assert any(m.startswith("weapons") for m in missing)


def test_bootstrap_rate_from_the_history_record() -> None:
    first = {"recorded_at": NOW - timedelta(minutes=30),
             "coverage": {"detailed": {"never_attempted": 1000}}}
    rate = bootstrap_rate(first, {"detailed": {"never_attempted": 700, "current": 300}}, NOW)
    assert rate["detailed"].value == pytest.approx(600.0)
    assert rate["detailed"].measured and rate["weapons"].value == 0
    assert bootstrap_rate({}, {}, NOW) == {}


def test_failures_cost_retries_outside_the_active_cap() -> None:
    half = documented(costs={"detailed": cost(ok=0.5), "profile": cost(2.0), "weapons": cost(),
                             "vehicles": cost()})
    lines = {(d.klass, d.resource): d.requests_per_hour for d in forecast(half).demand
             if not d.reason}
    assert lines[("retry", "detailed")] == pytest.approx(lines[("active", "detailed")])
    assert ("retry", "weapons") not in lines  # nothing fails: no retry line
    assert lines[("recent", "all")] == 0  # the policy refreshes only active soldiers
    fc = forecast(half)
    scheduled = sum(d.requests_per_hour for d in fc.demand if d.reason == "scheduled_profile")
    assert fc.active_per_hour == pytest.approx(fc.demand_per_hour - scheduled
                                               - lines[("retry", "detailed")])


def test_the_session_reasons_are_counted_in_the_demand() -> None:
    shipped = {d.reason: d for d in forecast(documented()).demand if d.reason}
    # a final refresh at most weekly takes the place of the weekly freshness refresh: nothing
    # more; every known profile every 13 weeks: 190,000 x 2 requests / 2,184 h
    assert shipped["final_refresh"].requests_per_hour == 0
    assert shipped["scheduled_profile"].requests_per_hour == pytest.approx(190_000 * 2 / 2184)
    every = Policy(final_refresh_min_age_seconds=0, scheduled_profile_seconds=0)
    fc = forecast(documented(policy=every))
    lines = {d.reason: d for d in fc.demand if d.reason}
    # every session bracketed: one a day per soldier seen in 24 h, beyond the weekly refresh
    assert lines["final_refresh"].requests_per_hour == pytest.approx(25_000 / 24 - 73_000 / 168)
    assert "scheduled_profile" not in lines and not fc.fits
