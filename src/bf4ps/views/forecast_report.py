"""`bf4ps forecast` as text and as one JSON object."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from bf4ps.views.forecast import Figure, Forecast
from bf4ps.views.forecast_inputs import span


def _fig(f: Figure | None) -> dict[str, Any] | None:
    return None if f is None else {"value": round(f.value, 4), "source": f.source,
                                   "measured": f.measured}


def as_json(fc: Forecast) -> dict[str, Any]:
    i = fc.inputs
    cap = fc.capacity
    return {
        "at": i.now, "window_seconds": i.window_seconds,
        "fits": fc.fits, "demand_per_hour": round(fc.demand_per_hour, 1),
        "active_per_hour": round(fc.active_per_hour, 1),
        "shortfall_per_hour": round(fc.shortfall_per_hour, 1),
        "capacity": {k: (round(v, 1) if isinstance(v, float) else v)
                     for k, v in asdict(cap).items()},
        "demand": [{"class": d.klass, "resource": d.resource,
                    "collections_per_hour": round(d.collections_per_hour, 2),
                    "requests_per_hour": round(d.requests_per_hour, 2), "note": d.note,
                    "reason": d.reason or None}
                   for d in fc.demand],
        "bootstrap": [{"resource": c.resource, "remaining": c.remaining,
                       "collections_per_hour": round(c.collections_per_hour, 2),
                       "completes_at": c.at, "source": c.source} for c in fc.bootstrap],
        "egresses_needed": fc.egresses_needed,
        "budget_needed_per_hour": round(fc.budget_needed_per_hour, 1),
        "suggestion": fc.suggestion, "suggested_policy": fc.suggested,
        "missing": list(i.missing),
        "inputs": {
            "costs": {r: {"requests_per_attempt": _fig(c.requests_per_attempt),
                          "success_share": _fig(c.success_share),
                          "duration_seconds": _fig(c.duration_seconds),
                          "requests_per_collection": round(c.requests_per_collection, 4)}
                      for r, c in i.costs.items()},
            "egresses": [asdict(e) for e in i.egresses], "egress_source": i.egress_source,
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
                                        "budget_", "share_", "watermark_", "weight_"))},
        },
    }


def _when(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "not within 10 years at today's rates"
    days = (at - now).total_seconds() / 86_400
    span = f"{days:.1f} days" if days >= 1 else f"{days * 24:.1f} h"
    return f"{at:%Y-%m-%d %H:%M} UTC (in {span})"


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
    serving = sum(1 for e in i.egresses if e.serving)
    out.append(f"  egresses {len(i.egresses)} ({serving} serving)  [{i.egress_source}]")
    if i.fleet_rate:
        out.append(f"  background requests sent: {i.fleet_rate.value:,.0f}/h  "
                   f"[{i.fleet_rate.source}]")
    budget = (f"{cap.budget_per_hour:,.0f}/h [{i.budget_per_hour.source}]"
              if cap.budget_per_hour is not None and i.budget_per_hour else "none (pacing only)")
    pol = i.policy
    out.append(f"  class shares of the budget: active at most {100 * pol.budget_cap_active:.0f} %, "
               f"bootstrap at least {100 * pol.budget_floor_bootstrap:.0f} %, retry at least "
               f"{100 * pol.budget_floor_retry:.0f} %, interactive at least "
               f"{100 * pol.budget_floor_interactive:.0f} % while a request waits  [policy]")
    out.append(f"capacity: pacing {cap.pacing_per_hour:,.0f}/h, budget {budget}; "
               f"binding {cap.per_hour:,.0f}/h, active cap {cap.active_cap_per_hour:,.0f}/h")
    out.append("steady-state demand (requests/h):")
    for d in fc.demand:
        out.append(f"  {d.klass:11} {d.resource:9} {d.requests_per_hour:>9,.1f}  {d.note}")
    verdict = ("fits" if fc.fits else
               f"does NOT fit: {fc.shortfall_per_hour:,.0f}/h over "
               f"({fc.demand_per_hour / max(cap.per_hour, 1e-9):.2f}x the capacity)")
    out.append(f"  total {fc.demand_per_hour:,.0f}/h (active {fc.active_per_hour:,.0f}/h)"
               f" against {cap.per_hour:,.0f}/h: {verdict}")
    out.append(f"the policy needs {fc.egresses_needed} egresses at today's pace, or a budget of "
               f"{fc.budget_needed_per_hour:,.0f}/h")
    if fc.suggestion:
        out.append(f"to fit today's budget: {fc.suggestion}")
        for k, v in fc.suggested.items():
            out.append(f"  bf4ps config set {k} {v:.0f}")
    out.append("bootstrap completion at today's mix and shares:")
    for b in fc.bootstrap:
        out.append(f"  {b.resource:9} {b.remaining:>9,} left, "
                   f"{b.collections_per_hour:,.1f}/h now: {_when(b.at, i.now)}")
    if fc.bootstrap:
        out.append(f"  [{fc.bootstrap[0].source}]")
    return "\n".join(out)
