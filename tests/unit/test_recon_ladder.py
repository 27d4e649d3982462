"""The ladder's measurement: a stage's rate is the spacing of its send instants, a stage that
could not reach its target pace says so, and the recommendation is never below the fastest
spacing a clean stage really sent."""

from __future__ import annotations

from bf4ps.recon.ladder import Plan, Sample, pace, proved, recommend, verified


def sent_at(*instants: float) -> list[Sample]:
    return [Sample("ladder", 0, 0.5, "detailed", 1, "pc", t, 200, None, "", 1, 1, 0.2)
            for t in instants]


def test_a_stage_measures_the_spacing_it_sent_not_the_one_it_asked_for() -> None:
    on_pace = pace(sent_at(100.0, 100.55, 101.1, 101.66), 0.5, 0.05)
    assert on_pace.target == 0.55 and on_pace.reached and on_pace.note() is None
    assert on_pace.p50 is not None and abs(on_pace.p50 - 0.55) < 1e-6
    assert on_pace.fastest is not None and abs(on_pace.fastest - 0.55) < 1e-6
    # every request a connect lead after the previous answer: about 1.02 s, whatever asked
    stuck = pace(sent_at(100.0, 101.02, 102.04, 103.07), 0.5, 0.05)
    assert not stuck.reached
    assert stuck.note() == ("could not reach its target pace: sent 1.020 s apart, wanted "
                            "0.550 s")
    assert not pace(sent_at(100.0), 0.5, 0.05).reached  # no spacing measured at all


def test_the_recommendation_is_never_below_the_clean_spacing_times_the_safety() -> None:
    plan = Plan(start_interval=1.0, floor=0.3, safety=1.1)
    assert recommend(0.64, plan) == 0.704
    for spacing in (0.6405, 0.61, 1.2311, 2.0183, 0.33333):
        assert recommend(spacing, plan) >= spacing * plan.safety
        assert recommend(spacing, plan) - spacing * plan.safety < 1e-4


def test_a_clean_back_off_stage_proves_only_the_spacing_it_sent() -> None:
    plan = Plan(start_interval=3.0, floor=1.0, safety=1.1)
    rec = recommend(1.8, plan)  # 1.98: a window of 10 per 20 s refuses it
    on_time = pace(sent_at(*(100 + 1.98 * i for i in range(12))), rec - 0.05, 0.05)
    assert abs(verified(rec, on_time) - rec) < 1e-4
    # late sends made the stage slower (2.05 s on average): that is all it proved
    late = pace(sent_at(*(100 + 2.05 * i for i in range(12))), rec - 0.05, 0.05)
    assert verified(rec, late) == 2.05
    # so only the stage on time proved the recommendation; recon tries a late one again
    assert proved(rec, on_time) and not proved(rec, late)
    # a working host's sends, each 3 ms late: proved, at the spacing really sent
    jittered = pace(sent_at(*(100 + 1.983 * i for i in range(12))), rec - 0.05, 0.05)
    assert proved(rec, jittered) and verified(rec, jittered) == 1.983


def test_the_report_names_a_stage_that_could_not_reach_its_pace() -> None:
    from bf4ps.cli.recon import render

    def row(stage: int, interval: float, spacing: float) -> dict[str, object]:
        sent = pace(sent_at(*(100 + spacing * i for i in range(4))), interval, 0.05)
        return {"stage": stage, "interval_seconds": interval, "requests": 4, "ok": 4,
                "latency_p50": 0.02, "target_spacing": sent.target, "spacing_p50": sent.p50,
                "pace_note": sent.note(), "sign": None}

    survey = {"detailed": {"ok": 1, "requests": 1, "wire_bytes_p50": 5412,
                           "decoded_bytes_p50": 5412, "latency_p50": 0.7, "latency_p95": 0.7,
                           "failures": {}}}
    report = {"run_id": 1, "egress": "e", "requests": 9, "survey": survey,
              "ladder": [row(0, 1.0, 1.05), row(1, 0.5, 1.02)], "backoff": [],
              "stopped_by": "the hard floor (no throttle sign at any stage)",
              "threshold_interval_seconds": 1.02, "recommended_interval_seconds": 1.122,
              "safety_factor": 1.1, "verified": True}
    table = render(report)
    assert ("stage 1 could not reach its target pace: sent 1.020 s apart, wanted 0.550 s"
            in table)
    assert "stage 0 could not" not in table
    assert "BF4PS_EGRESS_MIN_INTERVAL_SECONDS=1.122" in table
