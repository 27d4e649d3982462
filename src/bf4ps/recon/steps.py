"""The reconnaissance itself: survey, rate ladder, back-off, report (see ladder.py)."""

from __future__ import annotations

from dataclasses import asdict
from itertools import cycle, pairwise
from typing import Any

from bf4ps.domain import Platform, Resource
from bf4ps.recon.ladder import Plan, Sample, figures, percentile, recommend, slower, throttle_sign
from bf4ps.recon.run import Recon, pause

Persona = tuple[int, Platform]


async def survey(recon: Recon, personas: list[Persona]) -> dict[str, Any]:
    """Every resource of every sample persona once, at the conservative start interval."""
    await recon.pace(recon.plan.start_interval)
    for persona in personas:
        for resource in Resource:
            await recon.send(resource, persona, "survey", None, recon.plan.start_interval)
    done = [s for s in recon.samples if s.phase == "survey"]
    return {r.value: asdict(figures([s for s in done if s.resource == r.value]))
            for r in Resource}


async def stage(recon: Recon, personas: list[Persona], phase: str, number: int,
                interval: float) -> list[Sample]:
    """One stage: stage_requests detailed requests paced at `interval`."""
    await recon.pace(interval)
    sent: list[Sample] = []
    for persona, _ in zip(cycle(personas), range(recon.plan.stage_requests), strict=False):
        sent.append(await recon.send(Resource.DETAILED, persona, phase, number, interval))
    return sent


def _stage_row(number: int, interval: float, samples: list[Sample], sign: str | None
               ) -> dict[str, Any]:
    f = figures(samples)
    gaps = [b.sent_at - a.sent_at for a, b in pairwise(samples)]
    return {"stage": number, "interval_seconds": interval, "requests": f.requests, "ok": f.ok,
            "latency_p50": f.latency_p50, "latency_p95": f.latency_p95,
            "spacing_p50": percentile(gaps, 0.5), "failures": f.failures, "sign": sign}


async def ladder(recon: Recon, personas: list[Persona]) -> dict[str, Any]:
    """Shorten the interval stage by stage until the first throttle sign or the floor."""
    plan = recon.plan
    baseline = percentile([s.latency_seconds for s in recon.samples
                           if s.phase == "survey" and s.resource == Resource.DETAILED.value
                           and s.ok], 0.5)
    rows: list[dict[str, Any]] = []
    clean: float | None = None
    stopped_by = "the hard floor (no throttle sign at any stage)"
    for number, interval in enumerate(plan.stages()):
        samples = await stage(recon, personas, "ladder", number, interval)
        sign = throttle_sign(samples, baseline, plan)
        rows.append(_stage_row(number, interval, samples, sign))
        if sign is not None:
            stopped_by = f"stage {number} at {interval:.3f} s: {sign}"
            break
        clean = interval
    return {"stages": rows, "threshold": clean, "stopped_by": stopped_by,
            "signed": rows[-1]["sign"] is not None}


async def back_off(recon: Recon, personas: list[Persona], threshold: float | None,
                   signed: bool) -> dict[str, Any]:
    """After a sign: pause, then verify the recommendation, one step slower while it is not
    clean. Without a sign (the floor's stage was clean) the recommendation stands."""
    plan = recon.plan
    rec = recommend(threshold if threshold is not None else slower(plan.start_interval, plan),
                    plan)
    checks: list[dict[str, Any]] = []
    if not signed:
        return {"recommended": rec, "checks": checks, "verified": True}
    for attempt in range(plan.backoff_tries):
        await pause(plan.backoff_pause)
        samples = await stage(recon, personas, "backoff", attempt, rec)
        sign = throttle_sign(samples, None, plan)
        checks.append(_stage_row(attempt, rec, samples, sign))
        if sign is None:
            return {"recommended": rec, "checks": checks, "verified": True}
        rec = slower(rec, plan)
    return {"recommended": rec, "checks": checks, "verified": False}


async def reconnoitre(recon: Recon, personas: list[Persona]) -> dict[str, Any]:
    plan: Plan = recon.plan
    surveyed = await survey(recon, personas)
    climbed = await ladder(recon, personas)
    backed = await back_off(recon, personas, climbed["threshold"], climbed["signed"])
    return {
        "run_id": recon.run_id, "egress": recon.me.egress_key, "plan": plan.as_dict(),
        "personas": [[p, f.value] for p, f in personas], "survey": surveyed,
        "ladder": climbed["stages"], "stopped_by": climbed["stopped_by"],
        "threshold_interval_seconds": climbed["threshold"],
        "backoff": backed["checks"], "verified": backed["verified"],
        "recommended_interval_seconds": backed["recommended"], "safety_factor": plan.safety,
        "requests": len(recon.samples),
    }
