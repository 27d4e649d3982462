"""The reconnaissance itself: survey, rate ladder, back-off, report (see ladder.py)."""

from __future__ import annotations

from itertools import cycle

from bf4ps.domain import Resource
from bf4ps.recon.ladder import (
    BackOff,
    Climb,
    Figures,
    Plan,
    Report,
    Sample,
    StageRow,
    figures,
    pace,
    percentile,
    proved,
    recommend,
    slower,
    throttle_sign,
    verified,
)
from bf4ps.recon.run import Persona, Recon, pause


async def survey(recon: Recon, personas: list[Persona]) -> dict[str, Figures]:
    """Every resource of every sample persona once, at the conservative start interval."""
    await recon.pace(recon.plan.start_interval)
    await recon.burst([(resource, persona) for persona in personas for resource in Resource],
                      "survey", None, recon.plan.start_interval)
    done = [s for s in recon.samples if s.phase == "survey"]
    return {r.value: figures([s for s in done if s.resource == r.value]) for r in Resource}


async def stage(recon: Recon, personas: list[Persona], phase: str, number: int,
                interval: float, requests: int) -> list[Sample]:
    """One stage: `requests` detailed requests, the gate paced at `interval`."""
    await recon.pace(interval)
    wanted = [(Resource.DETAILED, p) for p, _ in zip(cycle(personas), range(requests),
                                                    strict=False)]
    return await recon.burst(wanted, phase, number, interval)


def _stage_row(recon: Recon, number: int, interval: float, samples: list[Sample],
               sign: str | None) -> StageRow:
    f = figures(samples)
    sent = pace(samples, interval, recon.gate.margin)
    return StageRow(stage=number, interval_seconds=interval, requests=f.requests, ok=f.ok,
                    latency_p50=f.latency_p50, latency_p95=f.latency_p95,
                    target_spacing=sent.target, spacing_p50=sent.p50, spacing_min=sent.fastest,
                    pace_reached=sent.reached, pace_note=sent.note(), failures=f.failures,
                    sign=sign)


async def ladder(recon: Recon, personas: list[Persona]) -> Climb:
    """Shorten the interval stage by stage until the first throttle sign or the floor; the
    threshold is the fastest spacing a clean stage measured on the wire."""
    plan = recon.plan
    baseline = percentile([s.latency_seconds for s in recon.samples
                           if s.phase == "survey" and s.resource == Resource.DETAILED.value
                           and s.ok], 0.5)
    rows: list[StageRow] = []
    stopped_by = "the hard floor (no throttle sign at any stage)"
    for number, interval in enumerate(plan.stages()):
        samples = await stage(recon, personas, "ladder", number, interval,
                              plan.stage_requests)
        sign = throttle_sign(samples, baseline, plan)
        rows.append(_stage_row(recon, number, interval, samples, sign))
        if sign is not None:
            stopped_by = f"stage {number} at {interval:.3f} s: {sign}"
            break
    clean = [r.spacing_p50 for r in rows if r.sign is None and r.spacing_p50]
    return Climb(stages=rows, threshold=min(clean, default=None), stopped_by=stopped_by,
                 signed=rows[-1].sign is not None)


async def back_off(recon: Recon, personas: list[Persona], threshold: float | None,
                   signed: bool) -> BackOff:
    """After a sign: pause, then verify the recommendation (sent at that spacing on the wire),
    one step slower while it is not clean. Without a sign (the floor's stage was clean) the
    recommendation stands."""
    plan = recon.plan
    rec = recommend(threshold if threshold is not None else slower(plan.start_interval, plan),
                    plan)
    checks: list[StageRow] = []
    if not signed:
        return BackOff(rec, checks, verified=True)
    for attempt in range(plan.backoff_tries):
        await pause(plan.backoff_pause)
        interval = max(round(rec - recon.gate.margin, 4), plan.floor)  # rec on the wire
        samples = await stage(recon, personas, "backoff", attempt, interval,
                              plan.verify_requests)
        sign = throttle_sign(samples, None, plan)
        checks.append(_stage_row(recon, attempt, interval, samples, sign))
        if sign is None:
            sent = pace(samples, interval, recon.gate.margin)
            if proved(rec, sent) or attempt == plan.backoff_tries - 1:
                return BackOff(verified(rec, sent), checks, verified=True)
            continue  # clean but sent slower than asked (a stalled host): the same pace again
        rec = slower(rec, plan)
    return BackOff(rec, checks, verified=False)


async def reconnoitre(recon: Recon, personas: list[Persona]) -> Report:
    plan: Plan = recon.plan
    surveyed = await survey(recon, personas)
    climbed = await ladder(recon, personas)
    backed = await back_off(recon, personas, climbed.threshold, climbed.signed)
    return Report(
        run_id=recon.run_id, egress=recon.me.egress_key, plan=plan,
        personas=[(p, f.value) for p, f in personas], survey=surveyed,
        margin_seconds=recon.gate.margin, connect_lead_seconds=recon.gate.connect_lead,
        ladder=climbed.stages, stopped_by=climbed.stopped_by,
        threshold_interval_seconds=climbed.threshold,
        stages_short_of_pace=[r.stage for r in climbed.stages if not r.pace_reached],
        backoff=backed.checks, verified=backed.verified,
        recommended_interval_seconds=backed.recommended, safety_factor=plan.safety,
        requests=len(recon.samples))
