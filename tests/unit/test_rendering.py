"""Human text rendered from structured fields: event-log lines, the demo summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bf4ps.views.events import Event, render

AT = datetime(2026, 11, 30, 16, 0, 1, tzinfo=UTC)


def event(**fields: Any) -> Event:
    return Event(**{"event_id": 1, "occurred_at": AT, "collector_name": "ia1", **fields})


def test_a_soldier_resource_event() -> None:
    line = render(event(event_type="succeeded", resource="weapons", persona_id=42,
                        platform="pc", attempt_number=1, http_status=200, duration_ms=593))
    assert line == ("2026-11-30 16:00:01 UTC  ia1: succeeded weapons of 42/pc "
                    "(attempt 1, HTTP 200, 593 ms)")


def test_an_event_names_its_soldier() -> None:
    line = render(event(event_type="failed", resource="detailed", persona_id=42, platform="ps4",
                        soldier_name="TheOnlyBond", error_class="server"))
    assert line.endswith("ia1: failed detailed of TheOnlyBond (42/ps4) (server)")


def test_a_lookup_names_its_job_and_platform() -> None:
    """A lookup has no persona yet: it used to read 'ia1: started (attempt 1, ...)'."""
    line = render(event(event_type="started", resource="lookup", job_id=355, platform="pc",
                        attempt_number=1, wait_ms=984))
    assert line.endswith("ia1: started lookup job 355 on pc (attempt 1, waited 984 ms)")


def test_an_error_class_without_a_message_has_no_dangling_colon() -> None:
    line = render(event(event_type="egress_throttled", http_status=403, error_class="throttle",
                        error_message=None, collector_name=None))
    assert line.endswith("scheduler: egress throttled (HTTP 403, throttle)")
    line = render(event(event_type="failed", error_class="not_found", error_message="gone"))
    assert line.endswith("(not_found: gone)")


def test_the_demo_summary_reads_as_text() -> None:
    """It used to print Python dicts: {'detailed': 38, ...}, {'per_ip': 0, 'fleet': 0}."""
    from bf4ps.cli.demo import render_summary
    from bf4ps.demo import figures as f

    line = render_summary(f.Summary(
        duration_seconds=47.2, url="http://127.0.0.1:8080/", soldiers=40,
        requests=f.Requests(132, {}, {}),
        coverage=f.CoverageChange({}, {}, {}, {"detailed": 38, "profile": 38, "weapons": 18,
                                              "vehicles": 0}),
        outcomes=f.Outcomes(f.Failures(3, {"malformed": 2, "server": 1}), 3, 0, f.Throttles()),
        budget=f.Budget(5, ["demo-egress-01", "demo-egress-02"], 5.0, 181, None, use=0.731),
        violations=f.Violations(0, 0), progress=f.Progress(4, 9, 3)))
    assert line == ("summary: 132 Battlelog requests in 47 s; collected (current): detailed 38, "
                    "profile 38, weapons 18, vehicles 0; failed attempts 3 (malformed 2, "
                    "server 1), retries scheduled 3, parked 0, throttles 0 answers / 0 egress "
                    "cool-downs; budget use 73 % of 181 requests (2 of 5 egresses had work); "
                    "violations: 0 per IP, 0 fleet; 4 soldiers with 3 snapshots or more, "
                    "9 session reports, 3 soldiers on the top weapon's weekly board")


def test_the_demo_summary_names_each_cool_down_by_its_signal() -> None:
    from bf4ps.demo import figures as f
    from bf4ps.demo.show import outcome_text

    text = outcome_text(f.Outcomes(f.Failures(), 0, 0, f.Throttles(
        3, 0, {"soft_throttle": 1, "http_5xx": 2, "session_expired": 1})))
    assert text.endswith("throttles 0 answers / 3 egress cool-downs; cool-downs by signal: "
                         "http_5xx 2, session_expired 1, soft_throttle 1")
