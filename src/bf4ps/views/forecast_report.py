"""`bf4ps forecast` as text and as one JSON object."""

from __future__ import annotations

from datetime import datetime

from bf4ps.capacity.demand import span as exact_span
from bf4ps.capacity.forecast import Age, Forecast
from bf4ps.capacity.gates import Capacity
from bf4ps.capacity.inputs import Figure, Inputs
from bf4ps.views.forecast_inputs import span
from bf4ps.views.forecast_json import (
    CapacityJson,
    FigureJson,
    ForecastJson,
    InputsJson,
)


def _fig(f: Figure | None) -> FigureJson | None:
    return None if f is None else {"value": round(f.value, 4), "source": f.source,
                                   "measured": f.measured}


def _r1(v: float | None) -> float | None:
    return round(v, 1) if isinstance(v, float) else v


def _capacity(cap: Capacity) -> CapacityJson:
    return {"pacing_per_hour": round(cap.pacing_per_hour, 1),
            "budget_per_hour": _r1(cap.budget_per_hour),
            "measured_per_hour": _r1(cap.measured_per_hour),
            "per_hour": round(cap.per_hour, 1),
            "active_cap_per_hour": round(cap.active_cap_per_hour, 1),
            "binding": cap.binding, "serving": cap.serving}


def _inputs(i: Inputs) -> InputsJson:
    return {
        "costs": {r: {"requests_per_attempt": _fig(c.requests_per_attempt),
                      "success_share": _fig(c.success_share),
                      "duration_seconds": _fig(c.duration_seconds),
                      "requests_per_collection": round(c.requests_per_collection, 4)}
                  for r, c in i.costs.items()},
        "egresses": [{"key": e.key, "min_interval_seconds": e.min_interval_seconds,
                      "serving": e.serving} for e in i.egresses],
        "egress_source": i.egress_source,
        "budget_per_hour": _fig(i.budget_per_hour),
        "population": {"total": _fig(i.population.total),
                       "active": _fig(i.population.active),
                       "seen": {str(int(k)): _fig(v)
                                for k, v in sorted(i.population.seen.items())},
                       "new_per_day": _fig(i.population.new_per_day)},
        "bootstrap_rate": {r: _fig(f) for r, f in i.bootstrap_rate.items()},
        "fleet_rate": _fig(i.fleet_rate), "interactive_per_hour": _fig(i.interactive_per_hour),
        "policy": {k: v for k, v in i.policy.model_dump().items()
                   if k.startswith(("freshness_", "active_window", "recent_window",
                                    "budget_", "share_", "watermark_", "weight_",
                                    "final_refresh_"))},
    }


def as_json(fc: Forecast) -> ForecastJson:
    i = fc.inputs
    return {
        "at": i.now, "window_seconds": i.window_seconds,
        "fits": fc.fits, "binding": fc.capacity.binding,
        "demand_per_hour": round(fc.demand_per_hour, 1),
        "active_per_hour": round(fc.active_per_hour, 1),
        "shortfall_per_hour": round(fc.shortfall_per_hour, 1),
        "throughput_per_hour": round(fc.throughput_per_hour, 1),
        "steady_throughput_per_hour": round(fc.steady_throughput_per_hour, 1),
        "capacity": _capacity(fc.capacity),
        "demand": [{"class": d.klass, "resource": d.resource, "reason": d.reason,
                    "collections_per_hour": round(d.collections_per_hour, 2),
                    "requests_per_hour": round(d.requests_per_hour, 2), "note": d.note}
                   for d in fc.demand],
        "served": [{"class": s.klass, "resource": s.resource,
                    "now_per_hour": round(s.now_per_hour, 2),
                    "steady_per_hour": round(s.steady_per_hour, 2)} for s in fc.served],
        "bootstrap": [{"resource": c.resource, "remaining": c.remaining,
                       "collections_per_hour": round(c.collections_per_hour, 2),
                       "completes_at": c.at, "source": c.source,
                       "marks": {f"{m:g}": at for m, at in c.marks.items()}}
                      for c in fc.bootstrap],
        "backlog_age": {k: {"seconds": None if a.seconds is None else round(a.seconds, 1),
                            "growth_per_hour": round(a.growth_per_hour, 1), "unmet": a.unmet}
                        for k, a in fc.backlog_age.items()},
        "egresses_needed": fc.egresses_needed,
        "budget_needed_per_hour": (None if fc.budget_needed_per_hour is None
                                   else round(fc.budget_needed_per_hour, 1)),
        "suggestion": fc.suggestion, "suggested_policy": fc.suggested,
        "missing": list(i.missing),
        "inputs": _inputs(i),
    }


def _when(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "not within 10 years at today's rates"
    days = (at - now).total_seconds() / 86_400
    span = f"{days:.1f} days" if days >= 1 else f"{days * 24:.1f} h"
    return f"{at:%Y-%m-%d %H:%M} UTC (in {span})"


def verdict(fc: Forecast) -> str:
    """One sentence: fits, or by how much it does not (one ratio, one difference)."""
    cap = fc.capacity
    if fc.fits:
        return (f"fits: {fc.demand_per_hour:,.0f}/h steady demand is "
                f"{100 * fc.demand_per_hour / max(cap.per_hour, 1e-9):.0f} % of the "
                f"{cap.per_hour:,.0f}/h the {cap.binding} allows")
    if fc.demand_per_hour > cap.per_hour:
        return (f"does NOT fit: {fc.demand_per_hour:,.0f}/h steady demand is "
                f"{fc.demand_per_hour / max(cap.per_hour, 1e-9):.2f}x the {cap.per_hour:,.0f}/h"
                f" the {cap.binding} allows ({fc.shortfall_per_hour:,.0f}/h short)")
    return (f"does NOT fit: the active class asks {fc.active_per_hour:,.0f}/h, "
            f"{fc.active_per_hour / max(cap.active_cap_per_hour, 1e-9):.2f}x its cap of "
            f"{cap.active_cap_per_hour:,.0f}/h ({fc.shortfall_per_hour:,.0f}/h short)")


def final_refreshes(fc: Forecast) -> str:
    """One sentence: what the closing snapshots of play sessions cost, and what is left."""
    pol, cap = fc.inputs.policy, fc.capacity
    final = sum(d.requests_per_hour for d in fc.demand if d.reason == "final_refresh")
    pop = fc.inputs.population
    sessions = pop.sessions_per_hour

    def after(what: str, seconds: float) -> str:
        lasting = pop.sessions_lasting(seconds)
        least = "every session" if seconds <= 0 else f"sessions of {exact_span(seconds)} or more"
        return f"{what} after {least}, {lasting.value:,.0f} an hour [{lasting.source}]"

    rest = fc.demand_per_hour - final
    holds = "the rest fits" if rest <= cap.per_hour else "the rest alone does NOT fit"
    return (f"final refreshes ({after('detailed', pol.final_refresh_min_play_seconds)}; "
            f"{after('weapons and vehicles', pol.final_refresh_items_min_play_seconds)}; of "
            f"{sessions.value:,.0f} sessions ending an hour [{sessions.source}]): beyond the "
            f"freshness refreshes they replace {final:,.0f}/h, "
            f"{100 * final / max(cap.per_hour, 1e-9):.0f} % of the {cap.per_hour:,.0f}/h "
            f"capacity; without them demand is {rest:,.0f}/h: {holds}")


def remedies(fc: Forecast) -> list[str]:
    """What would fit, each only where it is what binds."""
    cap, out = fc.capacity, []
    if fc.suggested:
        out.append(f"to fit, refresh {fc.suggestion}:")
        out += [f"  bf4ps config set {k} {v:.0f}" for k, v in fc.suggested.items()]
    elif fc.suggestion:  # no interval fits: said as a sentence of its own
        out.append(f"{fc.suggestion}.")
    over_cap = (cap.budget_per_hour is not None
                and fc.active_per_hour > cap.active_cap_per_hour * (1 + 1e-9))
    alone = not fc.suggested  # a sentence of its own, or the alternative to the refresh above
    if cap.binding == "budget" or over_cap:
        if fc.budget_needed_per_hour is not None:
            lead = "to fit, raise the fleet budget to" if alone else "or raise the fleet budget to"
            out.append(f"{lead} {fc.budget_needed_per_hour:,.0f}/h (the budget binds; "
                       f"the {cap.serving} serving egresses pace {cap.pacing_per_hour:,.0f}/h)")
    elif fc.egresses_needed is not None:
        lead = "to fit, run" if alone else "or run"
        out.append(f"{lead} {fc.egresses_needed} serving egresses at today's rate each "
                   f"({cap.serving} serve now; the {cap.binding} binds)")
    return out


def _age(a: Age) -> str:
    if a.seconds is None:
        return f"grows {a.growth_per_hour:,.0f} s every hour (demand not met)"
    text = f"{span(a.seconds) if a.seconds >= 120 else f'{a.seconds:.1f} s'}"
    return text + " (demand not met: each refresh that much late)" if a.unmet else text


def render(fc: Forecast) -> str:
    i, cap = fc.inputs, fc.capacity
    out = [f"forecast at {i.now:%Y-%m-%d %H:%M} UTC, measured over the last "
           f"{span(i.window_seconds)} (--window)"]
    if i.missing:
        out.append("not measured yet (documented defaults used, marked 'default'):")
        out += [f"  - {m}" for m in i.missing]
    out.append("inputs:")
    for r, c in i.costs.items():
        out.append(f"  {r:9} {c.requests_per_attempt.value:.2f} requests/attempt, "
                   f"{100 * c.success_share.value:.1f} % succeed, "
                   f"{c.duration_seconds.value:.2f} s each  [{c.requests_per_attempt.source}]")
    p = i.population
    seen = ", ".join(f"{v.value:,.0f} in {k / 3600:g} h" for k, v in sorted(p.seen.items()))
    out.append(f"  population {p.total.value:,.0f}; active {p.active.value:,.0f}; seen {seen}; "
               f"{p.new_per_day.value:,.0f} new/day  [{p.total.source}; "
               f"{p.new_per_day.source}]")
    out.append(f"  egresses {len(i.egresses)} ({cap.serving} serving)  [{i.egress_source}]")
    if i.fleet_rate:
        state = "work waiting all window" if i.saturated else "not saturated"
        out.append(f"  background requests sent: {i.fleet_rate.value:,.0f}/h ({state})  "
                   f"[{i.fleet_rate.source}]")
    budget = (f"{cap.budget_per_hour:,.0f}/h [{i.budget_per_hour.source}]"
              if cap.budget_per_hour is not None and i.budget_per_hour else "none (pacing only)")
    pol = i.policy
    out.append(f"  feeder shares: active {pol.share_active:g}, recent {pol.share_recent:g}, "
               f"bootstrap {pol.share_bootstrap:g}, retry {pol.share_retry:g}; budget: active "
               f"at most {100 * pol.budget_cap_active:.0f} %  [policy]")
    measured = ("" if cap.measured_per_hour is None
                else f", measured send rate {cap.measured_per_hour:,.0f}/h")
    out.append(f"capacity: pacing {cap.pacing_per_hour:,.0f}/h, budget {budget}{measured}; "
               f"the {cap.binding} binds: {cap.per_hour:,.0f}/h, active cap "
               f"{cap.active_cap_per_hour:,.0f}/h")
    out.append("steady-state demand (requests/h):")
    for d in fc.demand:
        out.append(f"  {d.klass:11} {d.resource:9} {d.requests_per_hour:>9,.1f}  {d.note}")
    out.append(f"  total {fc.demand_per_hour:,.0f}/h (active {fc.active_per_hour:,.0f}/h): "
               f"{verdict(fc)}")
    out.append(final_refreshes(fc))
    out += remedies(fc)
    out.append("requests/h sent, now (with the bootstrap) and in steady state:")
    for s in fc.served:
        if s.now_per_hour or s.steady_per_hour:
            out.append(f"  {s.klass:11} {s.resource:9} {s.now_per_hour:>9,.1f} "
                       f"{s.steady_per_hour:>9,.1f}")
    out.append(f"  total {fc.throughput_per_hour:,.0f}/h now, "
               f"{fc.steady_throughput_per_hour:,.0f}/h in steady state")
    out.append("steady-state backlog age: " + ", ".join(
        f"{k} {_age(a)}" for k, a in fc.backlog_age.items()))
    out.append("bootstrap completion (10 / 25 / 50 / 90 % / all of the work never "
               "attempted now done):")
    for b in fc.bootstrap:
        marks = " / ".join(_short(at, i.now) for at in b.marks.values())
        out.append(f"  {b.resource:9} {b.remaining:>9,} left, {b.collections_per_hour:,.1f}/h "
                   f"now: {marks}")
    if fc.bootstrap:
        out.append(f"  done: {_when(fc.bootstrap[0].at, i.now)} (detailed)  "
                   f"[{fc.bootstrap[0].source}]")
    return "\n".join(out)


def _short(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    s = (at - now).total_seconds()
    return "now" if s <= 0 else f"+{span(s)}"
