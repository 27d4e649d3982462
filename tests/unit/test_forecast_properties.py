"""Properties of the capacity model over random fleets and policies: it never predicts more
than the capacity, more budget never predicts less throughput (nor a later bootstrap), and an
infeasible policy is never called feasible."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from bf4ps.capacity.forecast import Forecast, forecast
from bf4ps.capacity.inputs import DAY, RESOURCES, Egress, Figure, Inputs, Population, ResourceCost
from bf4ps.policy import Policy
from tests.unit.test_forecast import NOW

M = "measured: property"


@st.composite
def fleets(draw: st.DrawFn) -> Inputs:
    active = draw(st.integers(1, 50_000))
    total = active + draw(st.integers(0, 200_000))
    weekly = min(total, active + draw(st.integers(0, 100_000)))
    fresh = {r: draw(st.floats(60, 400 * DAY)) for r in RESOURCES}
    pol = Policy(**{f"freshness_{r}_seconds": v for r, v in fresh.items()},
                 budget_cap_active=draw(st.floats(0.05, 1.0)),
                 share_active=draw(st.floats(0, 1)), share_recent=draw(st.floats(0, 1)),
                 share_bootstrap=draw(st.floats(0, 1)), share_retry=draw(st.floats(0, 1)))
    costs = {r: ResourceCost(Figure(draw(st.floats(1.0, 3.0)), M),
                             Figure(draw(st.floats(0.3, 1.0)), M),
                             Figure(draw(st.floats(0.05, 3.0)), M)) for r in RESOURCES}
    egresses = tuple(Egress(f"e{i}", draw(st.floats(0.1, 30.0)), draw(st.integers(1, 3)))
                     for i in range(draw(st.integers(1, 8))))
    budget = draw(st.one_of(st.none(), st.floats(10.0, 50_000.0)))
    left = {c: {r: draw(st.integers(0, total)) // 3 for r in RESOURCES}
            for c in ("active", "recent", "bootstrap")}
    coverage = {r: {"never_attempted": sum(left[c][r] for c in left),
                    "current": total - sum(left[c][r] for c in left)} for r in RESOURCES}
    sent = draw(st.one_of(st.none(), st.floats(10.0, 50_000.0)))
    pop = Population(Figure(total, M), Figure(active, M),
                     {DAY: Figure(active, M), 7 * DAY: Figure(weekly, M)},
                     Figure(draw(st.floats(0, 5_000)), M))
    return Inputs(now=NOW, window_seconds=DAY, policy=pol, costs=costs, egresses=egresses,
                  egress_source=M, budget_per_hour=None if budget is None else Figure(budget, M),
                  population=pop, coverage=coverage, bootstrap_rate={},
                  fleet_rate=None if sent is None else Figure(sent, M),
                  interactive_per_hour=Figure(draw(st.floats(0, 100)), M), backlog=left,
                  saturated=draw(st.booleans()))


def _sent_now(fc: Forecast) -> float:
    return fc.throughput_per_hour


@settings(max_examples=60, deadline=None)
@given(fleets())
def test_never_more_than_capacity(inputs: Inputs) -> None:
    fc = forecast(inputs)
    cap = fc.capacity.per_hour
    assert cap <= fc.capacity.pacing_per_hour * (1 + 1e-9)
    if fc.capacity.budget_per_hour is not None:
        assert cap <= fc.capacity.budget_per_hour * (1 + 1e-9)
    assert _sent_now(fc) <= max(cap, inputs.interactive_per_hour.value) * (1 + 1e-6) + 1e-6
    assert fc.steady_throughput_per_hour <= max(cap, inputs.interactive_per_hour.value) * (
        1 + 1e-6) + 1e-6
    active = sum(s.now_per_hour for s in fc.served if s.klass == "active")
    assert active <= fc.capacity.active_cap_per_hour * (1 + 1e-6) + 1e-6


@settings(max_examples=60, deadline=None)
@given(fleets(), st.floats(1.0, 10.0))
def test_more_budget_never_predicts_less_throughput(inputs: Inputs, more: float) -> None:
    base = inputs.budget_per_hour.value if inputs.budget_per_hour else 100.0
    low = forecast(replace(inputs, budget_per_hour=Figure(base, M)))
    high = forecast(replace(inputs, budget_per_hour=Figure(base * more, M)))
    assert high.throughput_per_hour >= low.throughput_per_hour * (1 - 1e-6) - 1e-6
    assert high.steady_throughput_per_hour >= low.steady_throughput_per_hour * (1 - 1e-6) - 1e-6
    assert high.capacity.per_hour >= low.capacity.per_hour
    if low.fits:
        assert high.fits


@settings(max_examples=60, deadline=None)
@given(fleets())
def test_an_infeasible_policy_is_never_called_feasible(inputs: Inputs) -> None:
    fc = forecast(inputs)
    over = (fc.demand_per_hour > fc.capacity.per_hour * (1 + 1e-9)
            or fc.active_per_hour > fc.capacity.active_cap_per_hour * (1 + 1e-9))
    if over:
        assert not fc.fits and fc.shortfall_per_hour > 0
    if fc.fits:  # and then the steady allocation meets every reason's demand
        asked = {(d.klass, d.resource): 0.0 for d in fc.demand}
        for d in fc.demand:
            asked[(d.klass, d.resource)] += d.requests_per_hour
        got = {(s.klass, s.resource): s.steady_per_hour for s in fc.served}
        for key, want in asked.items():
            if key[0] != "interactive":
                assert got.get(key, 0.0) >= want * (1 - 1e-6) - 1e-6, (key, want, got)
